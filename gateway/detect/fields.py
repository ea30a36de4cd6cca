"""Form-mode detection: what a form elicitation asks for, and what its text hides.

:func:`check_form` judges one ``elicitation/create`` form request (``params``) and returns findings:

* **Field classification** (value-entry fields only — a string, or a number/integer without an
  enum; booleans and enums can only *mention* a secret): ``secret-field`` (passwords, tokens, keys,
  PINs, recovery codes, security-question answers with detail ``kba``), ``otp-field``,
  ``payment-field`` (card number and expiry only with card context, CVC, card PIN, bank account),
  all HIGH; ``sensitive-pii-field`` (SSN, passport, national ID, tax number) LOW. Signals: the
  multilingual lexicon on the key, title and description; ``format: "password"``; ``writeOnly``;
  HTML autocomplete tokens (``autocomplete``/``x-autocomplete``); a short digit ``pattern``
  (``^[0-9]{4,8}$``) next to a code word; and the message — a *generic* field (``code``,
  ``value``, ``answer``…) takes the category the message asks for.
* **Text checks** on every user-visible string (message, property keys, titles, descriptions,
  defaults, enum values, ``oneOf``/``anyOf`` titles and consts, …): links (``clickable-url``),
  secret values (``secret-value``) and invisible characters (``invisible-chars``). A plain example
  URL in the description/default/examples of a ``format: uri`` field is LOW instead of HIGH.

:func:`check_text` runs the text checks on one string (the engine uses it for URL-mode messages).
Findings never carry a value: paths, reason codes and value-free details only. Nothing here raises
on odd shapes: anything that is not the expected type is skipped.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import re2

from gateway.detect.config import FormConfig, Limits
from gateway.detect.findings import Evidence, Finding, Reason, Severity, json_path
from gateway.detect.lexicon import Category, Hits, Lexicon, Term, _no_space_script, lexicon_for
from gateway.detect.links import link_kinds
from gateway.detect.normalize import has_invisible, has_lookalikes, words
from gateway.detect.secrets import scan_secrets

__all__ = ["check_form", "check_text"]

_URI_FORMATS = frozenset({"uri", "url", "iri", "uri-reference", "iri-reference", "uri-template"})
_EXAMPLE_KEYS = frozenset({"description", "default", "examples", "example"})
_LOW_LINK_KINDS = frozenset({"scheme", "www", "bare-domain", "ip"})
# Schema keywords whose string values a client does not show to the user.
_HIDDEN_KEYS = frozenset(
    {"type", "format", "pattern", "$schema", "$id", "$ref", "required", "contentEncoding",
     "contentMediaType", "autocomplete", "x-autocomplete"}
)  # fmt: skip
_AUTOCOMPLETE = {
    "current-password": "secret",
    "new-password": "secret",
    "one-time-code": "otp",
    "cc-number": "card_number",
    "cc-csc": "card_cvc",
    "cc-exp": "card_expiry",
    "cc-exp-month": "card_expiry",
    "cc-exp-year": "card_expiry",
}
# A pattern that accepts only a short run of digits: ^[0-9]{6}$, ^\d{4,8}$, \d{3,4}, [0-9]+ …
_SHORT_DIGITS = re2.compile(r"^\^?(?:\\d|\[0-9\]|\[\\d\])(?:\{[0-9]{1,2}(?:,[0-9]{0,2})?\}|\+)\$?$")
_DIGIT_COUNT = re2.compile(r"\{([0-9]{1,2})")
_CACHE_TEXT_MAX = 1024


@functools.lru_cache(maxsize=8192)
def _cached_facts(text: str, decode_depth: int) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    return _facts(text, decode_depth)


def _facts(text: str, decode_depth: int) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """(link kinds, secret rule ids, has invisible characters) of one string."""
    secrets = tuple(f.detail for f in scan_secrets(text, "", decode_depth=decode_depth))
    return tuple(link_kinds(text)), secrets, has_invisible(text)


def _disguised_name(text: str) -> bool:
    """Does a dotted word of ``text`` hold look-alike letters of another script ("аррӏе.com")?"""
    return any("." in w and has_lookalikes(w) for w in text.split())


def _text_findings(
    text: str,
    where: str | tuple[str | int, ...],
    limits: Limits,
    *,
    uri_example: bool,
    prose: bool | None = False,
) -> list[Finding]:
    """``prose``: a domain named here is not a link (None: only if ``text`` is one word)."""
    """Findings of one string; ``where`` is its JSON path or the parts of it (built only when
    something is found: most strings hold nothing, and a 64 KiB form holds thousands)."""
    if len(text) <= _CACHE_TEXT_MAX:
        kinds, secrets, invisible = _cached_facts(text, limits.decode_depth)
    else:
        kinds, secrets, invisible = _facts(text, limits.decode_depth)
    if not (kinds or secrets or invisible):
        return []
    if prose is None and "bare-domain" in kinds:
        prose = not any(c.isspace() for c in text)
    if prose and "bare-domain" in kinds and not _disguised_name(text):
        # A plain domain named in a field's description or sample value ("as shown on
        # github.com", "e.g. api.example.io") is not a link: nothing to click (LABELLING.md).
        # Written with look-alike letters ("аррӏе.com") it is a disguise, and still reported.
        kinds = tuple(k for k in kinds if k != "bare-domain")
        if not (kinds or secrets or invisible):
            return []
    path = where if isinstance(where, str) else json_path(*where)
    out = [
        Finding(
            Reason.CLICKABLE_URL,
            path,
            Severity.LOW if uri_example and kind in _LOW_LINK_KINDS else Severity.HIGH,
            kind,
            _LINK_EVIDENCE.get(kind) or Evidence("form-link", f"link:{kind}"),
        )
        for kind in kinds
    ]
    out.extend(
        Finding(Reason.SECRET_VALUE, path, Severity.HIGH, rule, Evidence("secret-value", rule))
        for rule in secrets
    )
    if invisible:
        out.append(Finding(Reason.INVISIBLE_CHARS, path, Severity.HIGH, evidence=_INVISIBLE))
    return out


_LINK_EVIDENCE = {
    "lookalike-domain": Evidence("lookalike-domain", "lure-domain"),
}
_INVISIBLE = Evidence("invisible-chars", "invisible-char")


def check_text(text: str, path: str, limits: Limits, *, prose: bool = False) -> list[Finding]:
    """Links, secret values and invisible characters in one user-visible string. ``prose``: a
    plain domain named in it is not a link (a message: "continue on github.com")."""
    raw: object = text  # callers are typed, but the input is hostile: never raise
    if not isinstance(raw, str):
        return []
    return _text_findings(text, path, limits, uri_example=False, prose=prose)


def _visible_strings(
    node: object, parts: tuple[str | int, ...], depth: int, limits: Limits
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Every string a client may display under ``node``, with its path parts."""
    if depth > limits.max_depth:
        return
    if isinstance(node, str):
        yield parts, node
        return
    # Strings among the children are yielded here (no generator per string: an enum holds
    # hundreds); they obey the same depth limit as in a recursive call.
    leaf_ok = depth + 1 <= limits.max_depth
    if isinstance(node, Mapping):
        for key, value in node.items():
            if isinstance(key, str) and key not in _HIDDEN_KEYS:
                if isinstance(value, str):
                    if leaf_ok:
                        yield (*parts, key), value
                elif isinstance(value, Mapping | list):
                    yield from _visible_strings(value, (*parts, key), depth + 1, limits)
    elif isinstance(node, list):
        for i, item in enumerate(node[: max(limits.max_enum, 1)]):
            if isinstance(item, str):
                if leaf_ok:
                    yield (*parts, i), item
            elif isinstance(item, Mapping | list):
                yield from _visible_strings(item, (*parts, i), depth + 1, limits)


def _types(spec: Mapping[str, Any]) -> set[str]:
    t = spec.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str)}
    return set()


def _is_value_entry(spec: Mapping[str, Any]) -> bool:
    """Can the user type a free value here (and so be asked for a secret)?"""
    if any(k in spec for k in ("enum", "oneOf", "anyOf", "const", "enumNames")):
        return False
    types = _types(spec)
    if not types:
        return True  # no declared type: assume the worst
    if types & {"string", "number", "integer"}:
        return True
    if "array" in types:
        items = spec.get("items")
        return not (isinstance(items, Mapping) and not _is_value_entry(items))
    return False


@dataclass(frozen=True, slots=True)
class _Field:
    key: str
    spec: Mapping[str, Any]
    value_entry: bool
    hits: tuple[Hits, ...]  # key, title, description
    name_hits: tuple[Hits, ...]  # key, title
    title_hits: Hits | None  # the label the user reads: its negatives speak for the field
    desc_hits: Hits | None
    opaque: bool  # nothing in the key, title or description says what the field is for

    @property
    def allowed(self) -> bool:
        return any(h.allowed for h in self.hits)

    @property
    def cardish(self) -> bool:
        """Does this field make its siblings card fields (payment words, a named card number)?"""
        return any(h.card_context for h in self.hits)

    @property
    def own(self) -> list[Hits]:
        """The hits of the field's own words for people: its title and description."""
        return [h for h in (self.title_hits, self.desc_hits) if h is not None]

    @property
    def generic(self) -> bool:
        return all(h.generic for h in self.name_hits)

    @property
    def postal(self) -> bool:
        return any(h.postal for h in self.hits)


_VOWELS = frozenset("aeiouy")
# Short keys that do name something (a form asking for a password next to them is not asking
# through them).
_SHORT_WORDS = frozenset(
    {"zip", "age", "tel", "url", "sex", "fax", "dob", "tax", "vat", "qty", "job", "org", "lat",
     "lng", "lon", "day", "mon", "yr", "cc", "exp", "mm", "yy", "cvv", "cvc", "pin", "otp", "ssn"}
)  # fmt: skip


def _opaque_token(tok: str) -> bool | None:
    """Does this token of a key name nothing (digits, one or two letters, hex, no vowel)? None
    for three-letter tokens: they may be words or abbreviations."""
    if tok.isdigit() or len(tok) <= 2:
        return True
    if not tok.isascii():
        return False
    if all(c in "0123456789abcdef" for c in tok) and any(c.isdigit() for c in tok):
        return True
    if not any(c in _VOWELS for c in tok):
        return True
    return None if len(tok) == 3 else False


def _says_nothing(text: object, hits: Hits | None) -> bool:
    """A title or description that is absent, empty, punctuation or only generic words."""
    if not isinstance(text, str):
        return True
    if not any(c.isalpha() for c in text):
        return True
    return hits is not None and hits.generic


def _opaque_key(key: str, hits: Hits) -> bool:
    """A key that says nothing: generic words, or mostly tokens that are not words ("q11", "x1",
    "field_44ed7ea4", "k0B86AT0rFn1n7E9", a base64 string)."""
    if hits.generic:
        return True
    if len(key) <= _CACHE_KEY_MAX:
        return _opaque_key_shape(key)
    return _opaque_key_shape.__wrapped__(key)


_CACHE_KEY_MAX = 256


@functools.lru_cache(maxsize=4096)
def _opaque_key_shape(key: str) -> bool:
    toks = words(key)
    if not toks:
        return True
    if len(toks) == 1 and toks[0] in _SHORT_WORDS:
        return False
    digits = sum(c.isdigit() for c in key)
    if len(key) >= 8 and digits * 4 >= len(key):
        return True
    named = [t for t in toks if t not in ("field", "input", "param", "arg", "value", "var")]
    if len(named) <= 1:
        return not named or len(named[0]) <= 3 or bool(_opaque_token(named[0]))
    votes = [v for v in map(_opaque_token, named) if v is not None]
    return sum(votes) * 2 > len(votes)


# Quoted samples after "e.g." in a field's own text are samples of the value, not what the
# field is: "Which key of the Secret to read, e.g. "password" or "token"", "p. ej. «password»".
_EXAMPLE_MARK = re2.compile(
    r"(?i)(?:\be\.?\s?g\.|\bfor example|\bsuch as|\bp\.\s?ej\.|\bpor ejemplo|\bz\.\s?b\.|"
    r"\bzum beispiel|\bpar ex(?:emple)?\.?|\bad es\.|\bper esempio|\bbijv\.|\bf\.eks\.|"
    r"\bt\.ex\.|\bt\.d\.|\besim\.|\bnp\.|\bnapř\.|\bnapr\.|напр\.|например|\börn\.|"
    r"örneğin|\bmasalan|\bcontoh|\bmis\.|ví dụ|例如|例：|例:|예:|예시|مثلا|مثلاً|לדוגמה)"
)
_QUOTED = re2.compile(r"[\"'«“„‘‚「『][^\"'»”“’‘」』\n]{1,80}[\"'»”“’‘」』]")
_SAMPLE_REACH = 160  # characters after the marker where its samples are


def _without_samples(text: str) -> str:
    """``text`` with the quoted samples after "e.g." blanked (the marker and the rest kept)."""
    if len(text) > 2048:
        return text
    mark = _EXAMPLE_MARK.search(text)
    if mark is None:
        return text
    head, window = text[: mark.end()], text[mark.end() : mark.end() + _SAMPLE_REACH]
    blanked: str = _QUOTED.sub(" ", window)
    return head + blanked + text[mark.end() + _SAMPLE_REACH :]


def _field(key: str, spec: Mapping[str, Any], lex: Lexicon) -> _Field:
    title, desc = spec.get("title"), spec.get("description")
    key_hits = lex.scan(key)
    title_hits = lex.scan(title) if isinstance(title, str) else None
    desc_hits = lex.scan(_without_samples(desc)) if isinstance(desc, str) else None
    name_hits = (key_hits,) + ((title_hits,) if title_hits is not None else ())
    all_hits = name_hits + ((desc_hits,) if desc_hits is not None else ())
    opaque = (
        _opaque_key(key, key_hits)
        and _says_nothing(title, title_hits)
        and _says_nothing(desc, desc_hits)
    )
    return _Field(
        key, spec, _is_value_entry(spec), all_hits, name_hits, title_hits, desc_hits, opaque
    )


def _structural(spec: Mapping[str, Any], key: str) -> str | None:
    """Category named by the schema itself: autocomplete tokens, format password, writeOnly."""
    token = _autocomplete_token(spec, key)
    if token is not None:
        return _AUTOCOMPLETE[token]
    fmt = spec.get("format")
    if isinstance(fmt, str) and fmt.strip().lower() in ("password", "secret"):
        return "secret"
    if spec.get("writeOnly") is True:
        return "secret"
    return None


def _short_digits(spec: Mapping[str, Any]) -> int | None:
    """Digit count (or 0 when open-ended) if ``pattern`` accepts only a short run of digits."""
    pattern = spec.get("pattern")
    if not isinstance(pattern, str) or len(pattern) > 64 or not _SHORT_DIGITS.search(pattern):
        return None
    m = _DIGIT_COUNT.search(pattern)
    return int(m.group(1)) if m else 0


def _pick(lex: Lexicon, names: set[str]) -> Category | None:
    return next((c for c in lex.categories if c.name in names), None)


_NUMERIC = frozenset({"integer", "number"})
# Categories whose secret can be a number the user types (a PIN, a code, a card number): a
# setting word must sit in the field's own name or title to make such a field a setting.
_NUMERIC_SECRETS = frozenset({"pin", "otp", "card_pin", "card_cvc", "card_number", "card_expiry"})


def _numeric_setting(f: _Field, category: Category) -> bool:
    """A number field *about* a secret (its length, count, validity in days, attempts...)."""
    if not _is_numeric(f.spec):
        return False
    if "default" in f.spec:
        return True  # nobody has a default PIN: a number with a default is a setting
    if category.name not in _NUMERIC_SECRETS and category.severity >= Severity.HIGH:
        # Passwords, tokens, keys, phrases are text: a number that names one is about it
        # (a length, a count of LLM or game tokens, a number of backup codes).
        return True
    maximum = f.spec.get("maximum")
    if isinstance(maximum, int | float) and maximum < 1000 and category.name in ("pin", "otp"):
        return True  # no PIN or one-time code has fewer than four digits
    return any(h.setting for h in (f.name_hits if category.name in _NUMERIC_SECRETS else f.hits))


def _benign_sense(f: _Field) -> bool:
    """The title or description gives a word that can mean "password" its other sense: a slogan,
    a motto, a dictionary entry, a crossword answer, a queue ticket, a course code, a transfer
    reference ("hasło reklamowe", "Slovníkové heslo", "Senha de atendimento", "Kennwort" for a
    donation). The key alone never does."""
    return any(h.benign for h in (f.title_hits, f.desc_hits) if h is not None)


def _names(f: _Field, *, card_ok: bool) -> set[str]:
    """Categories the field's own texts name. A category the *title* negates ("Secret name",
    "Bestellnummer (PO)") is not taken from the key or the description either: the title is what
    the user reads. A title that names the category itself is never cancelled elsewhere."""
    names: set[str] = set()
    for h in f.hits:
        names |= h.strong | (h.gated if card_ok else frozenset())
    label = f.title_hits
    if label is None or (label.generic and not label.strong and not label.negated):
        label = f.desc_hits  # no telling title ("Number"): the description says what it is
    if label is not None and label.negated:
        names -= label.negated
    desc = f.desc_hits
    if desc is not None and desc.denial and desc is not label:
        # "Password hint" described as "not the password itself": the description says it
        names -= _DENIABLE
    title = f.title_hits
    if title is not None and title.strong and desc is not None and desc is not label:
        # "Existing secret" explained as "only the name of the Kubernetes secret" (or "e.g.
        # /etc/creds", a mount path): a title that names a category only by a bare word
        # ("secret", "token", "key") yields to a description that says what it is about
        bare = {c for c in title.strong if _bare_term(title, c)}
        if bare:
            description = f.spec.get("description")
            if isinstance(description, str) and _PATH_EXAMPLE.search(description) is not None:
                names -= bare
            else:
                names -= bare & desc.negated
    return names


def _bare_term(hits: Hits, category: str) -> bool:
    term = hits.term(category)
    return term is not None and term.text.casefold() in _BARE_WORDS


_BARE_WORDS = frozenset({"secret", "secrets", "token", "tokens", "key", "keys"})
_PATH_EXAMPLE = re2.compile(r"(?:^|[\s(\"'«])(?:~|/[A-Za-z0-9_.-]+)/[A-Za-z0-9_./-]+")
# What a description can deny being ("not the password itself"): the secrets, not card data.
_DENIABLE = frozenset(
    {"secret", "password", "pin", "otp", "api_key", "recovery_phrase", "kba", "credential_file"}
)


def _is_numeric(spec: Mapping[str, Any]) -> bool:
    types = _types(spec)
    return bool(types) and types <= _NUMERIC


def _short_text(spec: Mapping[str, Any]) -> bool:
    """A text field of three or four characters at most (a card security code)."""
    maximum = spec.get("maxLength")
    return isinstance(maximum, int) and not isinstance(maximum, bool) and 3 <= maximum <= 4


def _code_sized(spec: Mapping[str, Any]) -> bool:
    """A text field sized for a one-time code: at most 4 to 10 characters, or a short digit
    pattern."""
    maximum = spec.get("maxLength")
    if isinstance(maximum, int) and not isinstance(maximum, bool) and 4 <= maximum <= 10:
        return True
    return _short_digits(spec) is not None


def _delivered_code(f: _Field) -> bool:
    """The field's own text says it holds what was just delivered ("the number we just texted
    you", "the digits you received by text") — a one-time code, unless it is a phone number."""
    hits = f.own
    if not any(h.channel for h in hits) or any(h.phone or h.allowed for h in f.hits):
        return False
    if not (any(h.code_word for h in f.hits) or _is_numeric(f.spec) or _code_sized(f.spec)):
        # "Your message" (پیام, ข้อความ: also "text message"): what was delivered is a code
        return False
    return not _is_identity(f) and not any("otp" in h.negated for h in hits)


# What a message asks to paste as a block of text (a file's contents, a key, a phrase).
_PASTED_SECRETS = frozenset({"credential_file", "api_key", "recovery_phrase"})


def _free_text_box(f: _Field, negated: frozenset[str]) -> bool:
    """A string field meant for a block of text (no format, no choices, room for 100+ characters
    or no limit) whose own text names no category and no identity, and does not deny the
    message's (``negated``: "SSH public key" under "Add your SSH key")."""
    spec = f.spec
    if _types(spec) != {"string"} or "format" in spec or _choices(spec) is not None:
        return False
    max_len = spec.get("maxLength")
    if isinstance(max_len, int) and not isinstance(max_len, bool) and max_len < 100:
        return False
    return not (
        any(h.strong or h.gated or h.allowed or h.phone or h.setting for h in f.hits)
        or any(negated & h.negated for h in f.hits)
        or _is_identity(f)
    )


# "MM/YY" as written on payment forms in many languages (mois/année, Monat/Jahr, месяц/год …).
_MM_YY_TEXT = re2.compile(
    r"(?i)(?:^|[^a-zа-я])(?:mm|мм)\s*/\s*(?:yy|yyyy|aa|aaaa|jj|гг|rr|åå|vv)(?:$|[^a-zа-я])"
)


def _month_year_hint(f: _Field) -> bool:
    texts = (f.key, f.spec.get("title"), f.spec.get("description"))
    return "string" in _types(f.spec) and any(
        isinstance(t, str) and _MM_YY_TEXT.search(t[:512]) is not None for t in texts
    )


def _asks_when(f: _Field) -> bool:
    """The field's title is a question about when ("When did you last change your password?",
    "Когда вы последний раз меняли пароль?"): it asks for a date, not the secret."""
    title = f.spec.get("title")
    if not isinstance(title, str) or f.title_hits is None or not f.title_hits.when:
        return False
    return title.rstrip().endswith(("?", "？", "؟", ";")) or f.spec.get("format") in (
        "date",
        "date-time",
    )


def _credential_file_field(f: _Field) -> bool:
    """A text field whose own text names a file that holds credentials (".env", "~/.npmrc",
    "id_ed25519", "wallet.dat") and does not say it is about the file (its path, name, size)."""
    if "string" not in _types(f.spec) or _choices(f.spec) is not None or _is_numeric(f.spec):
        return False
    texts = (f.key, f.spec.get("title"), f.spec.get("description"))
    if not any(_names_credential_file(t) for t in texts):
        return False
    return not any("credential_file" in h.negated or h.allowed or h.setting for h in f.hits)


def _described(
    f: _Field, lex: Lexicon, pasted: Category | None
) -> tuple[Category, str, Evidence] | None:
    """A field that names no category but is described as a secret: the box for what the
    message asks to paste, a credential file by its name, a password by what it does."""
    # (only a denial of the pasted thing itself counts: a box titled "File" is about files in
    # general, and "file" qualifies secrets elsewhere)
    if pasted is not None and _free_text_box(f, frozenset({pasted.name})):
        # "Paste your ~/.aws/credentials here" and a box titled "Profile block": a free-text box
        # that names nothing else is where the message's file or key goes
        return pasted, pasted.detail + "-message", _evidence(pasted, "message-ask+text-box")
    if _credential_file_field(f):
        cred = lex.category("credential_file")
        return cred, cred.detail, _evidence(cred, "credential-file-name")
    if _described_password(f):
        password = lex.category("password")
        return password, password.detail, _evidence(password, "secret-word+login-word")
    if _counts_own_words(f, lex):
        # "The 12 words you wrote down when you created the wallet" under a blank title
        phrase = lex.category("recovery_phrase")
        return phrase, phrase.detail, _evidence(phrase, "counted-words")
    if _wallet_words(f):
        # "The words on the card that came with your hardware wallet"
        phrase = lex.category("recovery_phrase")
        return phrase, phrase.detail, _evidence(phrase, "words+wallet")
    return None


def _wallet_words(f: _Field) -> bool:
    """A text field whose own title or description asks for words and names a crypto wallet or
    where its words are kept: the wallet's recovery phrase."""
    if "string" not in _types(f.spec) or _choices(f.spec) is not None or _is_numeric(f.spec):
        return False
    own = f.own
    if not (any(h.word_word for h in own) and any(h.wallet for h in own)):
        return False
    return not (any(h.allowed or h.setting or h.benign for h in f.hits) or _is_identity(f))


def _counts_own_words(f: _Field, lex: Lexicon) -> bool:
    """A text field whose own title or description counts words the way a recovery phrase is
    counted ("12 words", "12 sanaa", "12 kelime")."""
    if "string" not in _types(f.spec) or _choices(f.spec) is not None or _is_numeric(f.spec):
        return False
    if any(h.allowed or h.setting or h.benign for h in f.hits) or _is_identity(f):
        return False
    texts = (f.spec.get("title"), f.spec.get("description"))
    return any(isinstance(t, str) and _counts_phrase_words(t, lex) for t in texts)


def _own_counts(f: _Field) -> set[int]:
    """The numbers written in the field's title and description ("Last 4 digits", "the 16
    digits on the front")."""
    texts = (f.spec.get("title"), f.spec.get("description"))
    return {int(n) for t in texts if isinstance(t, str) for n in _COUNT.findall(t[:512])}


def _last_digits(f: _Field) -> bool:
    """The field takes the LAST four digits of a card ("Last 4 digits of the card", pattern or
    length of four): what receipts show, typed to say which card is meant, not card data."""
    own = f.own
    if not any(h.last_word for h in own):
        return False
    # "the last 4 digits" (a security code is "the last 3 digits on the signature strip")
    if _own_counts(f) != {4}:
        return False
    return _short_digits(f.spec) == 4 or f.spec.get("maxLength") == 4


def _screen(found: Category | None, f: _Field, *, card_ok: bool) -> tuple[Category | None, bool]:
    """The named category after four checks, and whether the field asks for nothing at all."""
    if found is not None and found.name in ("card_number", "card_cvc") and _last_digits(f):
        return None, True
    if (
        found is not None
        and found.name not in ("card_expiry", "kba")
        and found.reason in (Reason.SECRET_FIELD, Reason.OTP_FIELD, Reason.PAYMENT_FIELD)
        and f.spec.get("format") in ("date", "date-time", "time")
    ):
        return None, True  # "Date you last changed your password": a date holds no secret
    if found is not None and found.name == "card_expiry" and not (card_ok or f.cardish):
        found = None  # an expiry date is a card's only in a card context (an API key's expiry)
    if (
        found is not None
        and found.reason in (Reason.SECRET_FIELD, Reason.OTP_FIELD)
        and f.spec.get("format") in ("email", "idn-email")
        and not _title_names_any(f)
    ):
        return None, True  # "forgotPasswordEmail" titled "E-mail address": an address
    return found, False


def _counted_or_login_code(
    f: _Field, lex: Lexicon, *, card: bool, channel: bool, login: bool
) -> tuple[Category, str, Evidence] | None:
    """A field described by its count of digits, or a bare "code" next to a user name."""
    counted = _counted_digits(f, lex, card=card, channel=channel)
    if counted is not None and not _last_digits(f):
        return counted
    if login and _only_a_code(f, lex):
        # "Όνομα χρήστη" and "Κωδικός", "نام کاربری" and "رمز": the code next to a user name
        password = lex.category("password")
        return password, password.detail, _evidence(password, "code-word+username-field")
    return None


def _takes_message(f: _Field, asked: bool) -> bool:
    """Whether a bland field takes what the message names: always when the message (or the
    field's own text) asks; else only a box with no title and a meaningless key."""
    if asked or any(h.ask for h in (f.title_hits, f.desc_hits) if h is not None):
        return True
    title = f.spec.get("title")
    return f.opaque and not (isinstance(title, str) and any(c.isalpha() for c in title))


def _names_a_user(f: _Field) -> bool:
    """The field is a user name or login id by its title or key."""
    return any(h.username for h in f.name_hits) and not any(h.strong for h in f.name_hits)


def _only_a_code(f: _Field, lex: Lexicon) -> bool:
    """A text field whose title (or key, when untitled) is a bare word for "code" and names
    nothing else ("Code", "Κωδικός"; not "Promo code"): no category, phone, postal code,
    setting, everyday sense or identity."""
    if "string" not in _types(f.spec) or _choices(f.spec) is not None:
        return False
    label = f.title_hits if f.title_hits is not None else (f.name_hits[0] if f.name_hits else None)
    if label is None or not label.code_word:
        return False
    if any(h.allowed or h.phone or h.postal or h.setting or h.benign or h.named for h in f.hits):
        return False
    title = f.spec.get("title")
    toks = words(title if isinstance(title, str) else f.key)
    if not 1 <= len(toks) <= 2 or _is_identity(f):
        return False
    return all((h := lex.scan(t)).code_word or h.generic for t in toks)


def _postal_pin(f: _Field, postal: bool, postcodes: list[_Field], msg: Hits) -> bool:
    """Whether a PIN in field ``f`` may be India's postal "PIN code": the field says postal, or
    the form is about an address (``postal``) with no other postal-code field ("Postal code",
    "کد پستی": next to one, a PIN is a PIN) and no card in sight (a card's PIN is never a
    postal code: "PIN kartice" next to "City")."""
    if f.postal:
        return True
    return (
        postal
        and not any(g is not f for g in postcodes)
        and not (f.cardish or msg.card_context or msg.payment_words)
    )


def _form_shapes(
    fields: list[_Field], msg: Hits, asked: Category | None, counted_card: bool = False
) -> tuple[_Field | None, list[_Field], set[int]]:
    """What the form's shape says, computed once per form: the only unnamed field that takes
    the message's ask, the user-name fields, and a month/year pair of number fields."""
    users = [g for g in fields if g.value_entry and _names_a_user(g)]
    return _sole_unnamed(fields, msg, asked, counted_card), users, _month_year_numbers(fields)


def _sole_unnamed(
    fields: list[_Field], msg: Hits, asked: Category | None, counted_card: bool = False
) -> _Field | None:
    """The form's only value-entry field that says nothing about itself (next to an e-mail, a
    user name, a phone number, choices), when the message asks ("type", "введите", "?") for a
    secret that is not card data (unless the message counts the card's digits: "type the 16
    digits on the front of your card") and no field names it ("choose how the 口令 are played":
    the ask is about that field): where what the message asks for goes."""
    if asked is None or not msg.ask:
        return None
    if asked.reason is Reason.PAYMENT_FIELD and not counted_card and asked.name != "card_pin":
        return None  # (a card's PIN is a secret whatever the form: "the PIN from the envelope")
    if any(asked.name in h.strong | h.gated | h.negated for f in fields for h in f.hits):
        return None
    unnamed = [f for f in fields if f.value_entry and _names_nothing(f)]
    return unnamed[0] if len(unnamed) == 1 else None


def _names_nothing(f: _Field) -> bool:
    """The field's own text names no category, identity, phone, setting or everyday sense: the
    only field of a form whose message asks for a secret is where the secret goes ("Type the
    password to unlock it" and a field titled "Unlock")."""
    # (a key like "cell_a" reads as a phone, but a title says what the field is: the key's
    # phone sense counts only when there is no title)
    own = f.own if f.title_hits else f.hits
    return not (
        any(h.named or h.negated or h.allowed or h.setting or h.benign or h.denial for h in f.hits)
        or any(h.phone for h in own)
        or _everyday(f)
        or _is_identity(f)
    )


def _everyday(f: _Field) -> bool:
    """The field's title (or, without one, its key) is an everyday field's whole name:
    "Country", "Firma", "Город" — an ordinary field, not where a secret goes."""
    title = f.spec.get("title")
    text = title if isinstance(title, str) and f.title_hits is not None else f.key
    hits = f.title_hits if f.title_hits is not None else f.name_hits[0]
    # (a whole name of a few words, not a sentence that mentions a company or a date)
    return hits.everyday and len(words(text)) <= 3


def _title_names_any(f: _Field) -> bool:
    return f.title_hits is not None and bool(f.title_hits.strong or f.title_hits.gated)


def _described_password(f: _Field) -> bool:
    """The field's own text describes a password without naming it: a secret thing typed to log
    in ("the secret string you type when you log in", "geheime Zeichenfolge … Anmeldung"), or
    what goes with the user name at log-in ("what you type with your username to sign in")."""
    own = f.own
    if not any(h.login_word for h in own):
        return False
    beside_user = any(h.username for h in own) and not (
        f.title_hits is not None and f.title_hits.username
    )
    if not (any(h.secret_word for h in own) or beside_user):
        return False
    # (a setting is a number: "characters" in a text field's description is not a length)
    return not any(h.allowed or h.benign or h.phone for h in f.hits) and not (
        _is_identity(f) or _is_numeric(f.spec)
    )


def _is_identity(f: _Field) -> bool:
    """A field that says it holds a contact or account name (an email, a user name)."""
    fmt = f.spec.get("format")
    if isinstance(fmt, str) and fmt in ("email", "date", "date-time", "uri", "idn-email"):
        return True
    return any(w in ("email", "mail", "username", "login", "user") for w in words(f.key))


def _numeric_digits(spec: Mapping[str, Any]) -> int | None:
    """Digit count of a number field bounded like a code: 0..999999 (or 100..999)."""
    maximum, minimum = spec.get("maximum"), spec.get("minimum", 0)
    if not isinstance(maximum, int) or isinstance(maximum, bool) or not 999 <= maximum <= 99999999:
        return None
    text = str(maximum)
    if set(text) != {"9"} or not isinstance(minimum, int) or minimum < 0:
        return None
    return len(text)


def _classify(
    f: _Field,
    lex: Lexicon,
    *,
    card_ok: bool,
    message: Category | None,
    postal: bool,
    channel: bool = False,
    benign_form: bool = False,
    message_term: _Named | None = None,
    pasted: Category | None = None,
    sole: bool = False,
    login: bool = False,
    asked: bool = True,
) -> tuple[Category, str, Evidence] | None:
    """The category of one value-entry field, a value-free detail label and the evidence.
    ``pasted``: what the message asks to paste as a block of text (a credential file, a key)."""
    names = _names(f, card_ok=card_ok)
    for text in (f.key, f.spec.get("title")):
        if isinstance(text, str) and text.strip() in lex.abbreviations:
            names.add(lex.abbreviations[text.strip()])
    numeric = _is_numeric(f.spec)
    if numeric and "password" in names:
        names.add("pin")  # a password that is a number is a PIN ("Senha", 0-9999)
    if postal and "pin" in names:
        names.discard("pin")  # an Indian postal "PIN code" in an address form
    if numeric and "pin" in names:
        names -= {"secret", "password"}
    found = _pick(lex, names)
    structural = _structural(f.spec, f.key)
    if structural is not None and (found is None or found.severity < Severity.HIGH):
        category, detail = lex.category(structural), _structural_detail(f.spec, f.key)
        token = _autocomplete_token(f.spec, f.key) if detail == "autocomplete" else None
        return category, detail, Evidence(_concept(category), detail, token)
    if found is not None and found.severity < Severity.HIGH and f.opaque and message is not None:
        found = None  # a stray short word in a random key; the message says what it is for
    if (
        found is None
        and message is not None
        and message.name == "kba"
        and not numeric
        and not _is_identity(f)
    ):
        # "Answer your security question" and a field titled with the question itself
        return message, message.detail + "-message", _message_evidence(message, message_term)
    found, skip = _screen(found, f, card_ok=card_ok)
    if skip:
        return None
    if found is not None:
        if _numeric_setting(f, found):
            return None
        if found.reason in (Reason.SECRET_FIELD, Reason.OTP_FIELD) and _asks_when(f):
            return None
        if found.reason is Reason.SECRET_FIELD and (_benign_sense(f) or benign_form):
            return None
        return found, found.detail, _named_evidence(f, found, lex)
    described = _described(f, lex, pasted)
    if described is not None:
        return described
    delivery = False
    if message is None and channel and f.opaque and (numeric or _code_sized(f.spec)):
        message = lex.category("otp")  # "Enter what the SMS says" and a bare number field
        delivery = True
    # (a message that only names a secret, "Replace your backup codes", "Crossword: a password
    # of 7 letters", does not make a box titled "Comments" or "Your answer" that secret: only a
    # box with no title and a meaningless key takes a message that asks for nothing)
    if (
        message is not None
        and _takes_message(f, asked)
        and (f.generic or f.opaque or (sole and _names_nothing(f)))
    ):
        if postal and message.name == "pin":
            return None
        if _numeric_setting(f, message):
            return None
        detail = message.detail + ("-message" if f.opaque and not f.generic else "")
        if delivery:
            return message, detail, _evidence(message, "message-delivery+number-field")
        return message, detail, _message_evidence(message, message_term)
    if card_ok and f.generic and _short_text(f.spec) and any(h.code_word for h in f.name_hits):
        cvc = lex.category("card_cvc")  # "Code", maxLength 4, in a card form
        return cvc, "card-code", _evidence(cvc, "code-word+max-length+card-context")
    if _delivered_code(f) and not _numeric_setting(f, lex.category("otp")):
        otp = lex.category("otp")
        return otp, "delivered-code", _evidence(otp, "delivery-words")
    shaped = _counted_or_login_code(f, lex, card=card_ok, channel=channel, login=login)
    if shaped is not None:
        return shaped
    digits = _short_digits(f.spec) if not numeric else _numeric_digits(f.spec)
    if card_ok and _month_year_hint(f):
        expiry = lex.category("card_expiry")  # "MM/YY" under "the date on your card"
        return expiry, "month-year", _evidence(expiry, "mm-yy-hint+card-context")
    if (
        digits is not None
        and not postal  # a 6-digit Indian postal PIN code in an address form
        and any(h.code_word and "otp" not in h.negated for h in f.hits)
        and not any(h.benign for h in f.hits)  # a quiz's "Game PIN", shown to the room
        and not (digits == 4 and any(h.last_word for h in f.own))  # "Last 4 digits of the card"
    ):
        signal = "pattern-digits+code-word" if not numeric else "maximum-digits+code-word"
        if card_ok and digits in (3, 4):
            cvc = lex.category("card_cvc")
            return cvc, "digit-pattern", _evidence(cvc, signal + "+card-context")
        otp = lex.category("otp")
        return otp, "digit-pattern", _evidence(otp, signal)
    return None


_COUNT = re.compile(r"(?<![\d.,])(\d{1,2})(?![\d.,])")


def _counted_digits(
    f: _Field, lex: Lexicon, *, card: bool, channel: bool
) -> tuple[Category, str, Evidence] | None:
    """A field described by how many digits it takes ("the three digits on the back of the
    card", "the six numbers we just sent by SMS"): card data in a card context, a one-time code
    after a delivery; nothing without either."""
    own = f.own
    if not any(h.digit_word for h in own) or _choices(f.spec) is not None:
        return None
    if any(h.allowed or h.phone or h.postal or h.setting or h.benign for h in f.hits):
        return None
    if _is_identity(f):
        return None
    counts = _own_counts(f)
    if not (counts & set(range(3, 20)) or any(h.count_word for h in own)):
        return None
    if card or any(h.card_context or h.payment_words or "card_number" in h.gated for h in own):
        if counts & set(range(13, 20)):
            category = lex.category("card_number")
        else:
            category = lex.category("card_cvc")
        return category, "counted-digits", _evidence(category, "counted-digits+card-context")
    if channel or any(h.channel for h in own):
        otp = lex.category("otp")
        return otp, "counted-digits", _evidence(otp, "counted-digits+delivery")
    return None


_CARD_NUMBER_LENGTHS = frozenset(range(13, 20))


def _message_counted_card(message: str, hits: Hits, lex: Lexicon) -> Category | None:
    """A message that asks for a card's digits by counting them, in a card context: "type the
    16 digits on the front of your card" (the card number), "the three digits on the back"
    (the security code); never "the last 4 digits" (what receipts show)."""
    if not (hits.ask and hits.digit_word and (hits.card_context or hits.payment_words)):
        return None
    if hits.last_word or hits.phone or hits.postal or hits.setting:
        return None
    counts = {int(n) for n in _COUNT.findall(message[:2048])}
    if counts & _CARD_NUMBER_LENGTHS:
        return lex.category("card_number")
    if counts & {3, 4} or (hits.count_word and not counts):
        return lex.category("card_cvc")
    return None


def _asks_last_digits(message: str, hits: Hits, category: Category) -> bool:
    """The message asks for the last four digits of a card (what receipts show, typed to say
    which card is meant) and names card data only as "card"."""
    if category.name not in ("card_number", "card_cvc") or category.name in hits.strong:
        return False
    return hits.last_word and {int(n) for n in _COUNT.findall(message[:2048])} == {4}


def _message_evidence(category: Category, named: _Named | None) -> Evidence:
    """The message asks for ``category`` and the field does not say what it is for."""
    if named is None:
        if category.name == "otp":  # "we sent you a 6-digit code by SMS"
            return _evidence(category, "message-delivery")
        return _evidence(category, "message-ask")
    return _evidence(named[0], "message-ask", named[1])


def _choices(spec: Mapping[str, Any]) -> list[Any] | None:
    """The values a choice field offers (``enum``, or the consts of ``oneOf``/``anyOf``)."""
    target = spec
    if "enum" not in spec and "oneOf" not in spec and "anyOf" not in spec:
        items = spec.get("items")
        if not isinstance(items, Mapping):
            return None
        target = items
    enum = target.get("enum")
    if isinstance(enum, list):
        return enum
    for key in ("oneOf", "anyOf"):
        opts = target.get(key)
        if isinstance(opts, list):
            return [o.get("const") if isinstance(o, Mapping) else None for o in opts[:600]]
    return None


def _choice_kind(values: list[Any]) -> str | None:
    """What a list of choices can spell: digits (a PIN), characters (a password), or words from
    a word list (a recovery phrase). Stops at the first value that fits no kind."""
    if not 9 <= len(values) <= 600:
        return None
    texts = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, str | int):
            return None
        t = str(v)
        if len(t) > 12:
            return None
        texts.append(t)
    if all(len(v) == 1 and v.isdigit() for v in texts):
        return "digit"
    if all(len(v) == 1 and v.isalnum() for v in texts):
        return "char"
    if len(texts) >= 12 and all(v.isascii() and v.isalpha() and v.islower() for v in texts):
        return "word"
    return None


def _kind_of_choices(values: list[Any]) -> str | None:
    kind = _choice_kind(values)
    if kind is None and _wordlist_choices(values):
        return "word"
    return kind


_WORDLIST_MIN = 4  # choices


def _wordlist_choices(values: list[Any]) -> bool:
    """At least four choices, three in four of them words of a BIP-39 recovery-phrase word list
    (any of its languages): the words of a wallet's recovery phrase offered to pick from."""
    texts = [v for v in values[:600] if isinstance(v, str)]
    if len(texts) < _WORDLIST_MIN:
        return False
    known = bip39_words()
    hits = sum(unicodedata.normalize("NFKC", t).strip().casefold() in known for t in texts)
    return hits * 4 >= len(texts) * 3


@functools.cache
def bip39_words() -> frozenset[str]:
    """Every word of the BIP-39 word lists shipped with the ``mnemonic`` package (MIT)."""
    folder = resources.files("mnemonic").joinpath("wordlist")
    out: set[str] = set()
    for path in folder.iterdir():
        if path.name.endswith(".txt"):
            text = unicodedata.normalize("NFKC", path.read_text(encoding="utf-8"))
            out.update(w.strip().casefold() for w in text.split())
    return frozenset(out)


_CHOICE_CATEGORY = {"digit": "pin", "char": "password", "word": "recovery_phrase"}
_CHOICE_SECRETS = frozenset({"kba", "card_expiry"})


def _structural_detail(spec: Mapping[str, Any], key: str) -> str:
    fmt = spec.get("format")
    if isinstance(fmt, str) and fmt.strip().lower() in ("password", "secret"):
        return "format-password"
    if spec.get("writeOnly") is True and not _autocomplete_named(spec, key):
        return "write-only"
    return "autocomplete"


def _autocomplete_named(spec: Mapping[str, Any], key: str) -> bool:
    tokens = (spec.get("autocomplete"), spec.get("x-autocomplete"), key)
    return any(
        isinstance(t, str) and any(p in _AUTOCOMPLETE for p in t.lower().replace("_", "-").split())
        for t in tokens
    )


def _autocomplete_token(spec: Mapping[str, Any], key: str) -> str | None:
    """The first HTML autocomplete token of ``_AUTOCOMPLETE`` the field carries (or its key is)."""
    for token in (spec.get("autocomplete"), spec.get("x-autocomplete"), key):
        if isinstance(token, str):
            for part in token.strip().lower().replace("_", "-").split():
                if part in _AUTOCOMPLETE:
                    return part
    return None


# ---------------------------------------------------------------- evidence (check --explain)

# Concept names as people (and tests/corpus/LABELLING.md) say them, where a category's differs.
_CONCEPT_NAMES = {"kba": "security-answer"}


def _concept(category: Category) -> str:
    return _CONCEPT_NAMES.get(category.name) or category.name.replace("_", "-")


def _evidence(category: Category, signal: str, term: Term | None = None) -> Evidence:
    if term is None:
        return Evidence(_concept(category), signal)
    return Evidence(_concept(category), signal, term.text, term.lang)


_Named = tuple[Category, Term]


def _named_evidence(f: _Field, category: Category, lex: Lexicon) -> Evidence:
    """Which of the field's own texts (key, title, description) named ``category``, and how."""
    for hits in f.hits:
        named = lex.explain(hits, category)
        if named is not None:
            concept, term = named
            return _evidence(concept, "stem" if term.stem else "term", term)
    for text in (f.key, f.spec.get("title")):
        if isinstance(text, str) and lex.abbreviations.get(text.strip()) == category.name:
            # the key of concepts.yaml's abbreviations (compared exactly, case-sensitive)
            return Evidence(_concept(category), "abbreviation", text.strip())
    if category.name == "pin":  # a password that is a number ("Senha", 0-9999)
        for hits in f.hits:
            named = lex.explain(hits, lex.category("secret"))
            if named is not None:
                return _evidence(category, "term+numeric", named[1])
    return Evidence(_concept(category), "term")


def _message_category(hits: Hits, lex: Lexicon, cfg: FormConfig) -> Category | None:
    # "Complete the payment for your order": an order number is not a card number, but the
    # payment still makes the form's code and number fields card fields.
    card_ok = hits.card_context or hits.payment_words or not cfg.card_context_required
    found = _pick(lex, set(hits.strong | (hits.gated if card_ok else frozenset())))
    low = found is None or found.severity < Severity.HIGH
    if low and hits.channel and hits.code_word and "otp" not in hits.negated:
        return lex.category("otp")  # "we sent you a 6-digit code by SMS"
    return found


# Sentence ends in the scripts of the lexicon: a negative word ("expired", "limit") in one
# sentence of a message says nothing about the ask in the next one.
_SENTENCE_ENDS = re2.compile(r"[.!?;:\n。！？；：؟۔।॥።։]+(?:\s|$)|[。！？；：؟۔।॥።]")
_MAX_SENTENCES = 16


def _sentences(text: str) -> list[tuple[str, str]]:
    """The sentences of ``text`` with the marks that end them (at most ``_MAX_SENTENCES``)."""
    out: list[tuple[str, str]] = []
    last = 0
    for m in _SENTENCE_ENDS.finditer(text):
        out.append((text[last : m.start()], m.group()))
        last = m.end()
        if len(out) >= _MAX_SENTENCES:
            return out
    if text[last:].strip():
        out.append((text[last:], ""))
    return out


_ASK_MARKS = frozenset("?:？：؟")


def _with_context(hits: Hits, whole: Hits, *, channel: bool) -> Hits:
    """A sentence's hits with the whole message's card context (and delivery channel)."""
    return Hits(
        strong=hits.strong,
        gated=hits.gated,
        card_context=hits.card_context or whole.card_context or whole.payment_words,
        code_word=hits.code_word or (channel and whole.code_word),
        negated=hits.negated,
        channel=hits.channel or (channel and whole.channel),
        terms=hits.terms,
    )


def _message_hits(
    message: str, lex: Lexicon, cfg: FormConfig
) -> tuple[Hits, Category | None, Hits]:
    """What the message names (whole), and the category it asks for.

    A message of several sentences is read per sentence (a negative in one says nothing about
    the next), and the ask is where the message asks: a sentence with a request verb ("enter",
    "введите", "masukkan"), or one that ends in "?" or ":". "Your password was changed. Any
    feedback?" asks for feedback, not the password. A message with no asking sentence (a
    language whose request verbs the lexicon lacks) falls back to the first sentence naming one.
    The third value is the hits of the sentence the category was taken from (for explanations).
    """
    whole = lex.scan(message)
    if whole.allowed or not (whole.named or (whole.channel and whole.code_word)):
        return whole, None, whole  # names nothing: no sentence of it can
    try:
        parts = _sentences(message[:4096])
    except UnicodeEncodeError:  # lone surrogates: RE2 cannot read them
        parts = []
    if len(parts) < 2 or whole.benign:
        # (a crossword clue or a slogan contest names its secret words in every sentence)
        return whole, None if whole.benign else _message_category(whole, lex, cfg), whole
    found: list[tuple[Category | None, bool, Hits]] = []
    introduced = False  # the sentence after a colon is what the colon announces
    delivered: Category | None = None  # what the previous sentence said was just sent
    named_before: Category | None = None  # what the previous sentence named without asking
    for text, end in parts:
        hits = lex.scan(text)
        if hits.allowed:
            return whole, None, whole
        category = _message_category(_with_context(hits, whole, channel=False), lex, cfg)
        if category is None and hits.ask:  # "We sent you a code by SMS. Enter it below."
            category = delivered or _message_category(
                _with_context(hits, whole, channel=True), lex, cfg
            )
        if (
            category is None
            and hits.ask
            and not (hits.named or hits.everyday)  # "tell us the reason": asks for a reason
            and named_before is not None
        ):
            # "… re-enter your password. Write it in the box below.": a request that names
            # nothing asks for what the sentence before it named
            category = named_before
        if hits.benign:  # "Nové heslo do encyklopedie": a new *entry*, not a new password
            category = None
        ask = hits.ask or introduced or any(c in _ASK_MARKS for c in end)
        found.append((category, ask, hits))
        introduced = ":" in end or "：" in end
        delivered = category if hits.channel else None
        named_before = category if not ask and not hits.negated else None
    asked = [(c, h) for c, ask, h in found if ask]
    candidates = asked or [(c, h) for c, _, h in found]
    named = [(c, h) for c, h in candidates if c is not None]
    # the gravest of what the asking sentences name ("Aadhaar e-KYC: enter … the OTP")
    category, source = max(named, key=lambda ch: ch[0].severity) if named else (None, whole)
    if category is None and asked:
        # "What is the name of the hospital where you were born? (security question)": a
        # question asked beside a sentence that calls it a security question
        kba = next(((c, h) for c, _, h in found if c is not None and c.name == "kba"), None)
        if kba is not None:
            category, source = kba
    return whole, category, source


# Characters that are, or NFKC-fold to, decimal digits (superscripts, fractions, circled and
# squared numbers): a message without any holds no phrase length.
_DIGIT_LIKE = re.compile(
    "[\\d\u00b2\u00b3\u00b9\u00bc-\u00be\u2070\u2074-\u2079\u2080-\u2089\u2150-\u215f"
    "\u2189\u2460-\u249b\u24ea\u3251-\u325f\u32b1-\u32cb\u3358-\u3370\u3378\u3379"
    "\u339f-\u33a6\u33a8\u33af\u33e0-\u33fe\U0001f100-\U0001f10a]"
)
_PHRASE_LENGTHS = frozenset({"12", "15", "18", "20", "21", "24", "25", "33"})
_PHRASE_NUMBER = re.compile(r"(?<![0-9])(?:1[258]|2[0145]|33)(?![0-9])")


def _counts_phrase_words(message: str, lex: Lexicon) -> bool:
    """The message counts words the way a recovery phrase is counted ("12 words", "24 słowa",
    "12 речи", "12 perkataan"): a phrase length right before or after the word for "word"."""
    head = message[:2048]
    if _DIGIT_LIKE.search(head) is None:
        return False  # no digit, in any form NFKC folds to one: no count to find
    if head.isascii():
        # ASCII digits: only the words around each phrase-length number are read
        return any(
            _counted_near(head[max(m.start() - 48, 0) : m.end() + 48], lex)
            for m in itertools.islice(_PHRASE_NUMBER.finditer(head), 16)
        )
    return _counted_near(head, lex)


def _counted_near(text: str, lex: Lexicon) -> bool:
    toks = words(text)
    for i, tok in enumerate(toks):
        if tok in _PHRASE_LENGTHS:
            near = " ".join(toks[max(i - 1, 0) : i] + toks[i + 1 : i + 3])
            if near and lex.scan(near).word_word:
                return True
    return False


def _cardish(fields: list[_Field]) -> list[bool]:
    """Which fields are about a card: their own words, or "Number", "Valid thru", "Code" when an
    expiry stands next to a number or a code (a card form)."""
    cardish = [f.cardish for f in fields]
    expiry = [any("card_expiry" in h.gated for h in f.hits) for f in fields]
    numberish = [any(h.gated & {"card_number", "card_cvc"} for h in f.hits) for f in fields]
    # (an expiry next to a number or a code: two expiries alone, a subscription's and a
    # coupon's, make no card)
    if any(expiry) and any(n and not e for e, n in zip(expiry, numberish, strict=True)):
        cardish = [c or e or n for c, e, n in zip(cardish, expiry, numberish, strict=True)]
    return cardish


def _form_message(
    message: str | None, lex: Lexicon, cfg: FormConfig
) -> tuple[Hits, Category | None, _Named | None, bool]:
    """What a form's message names, what it asks for, the term that says so, and whether the
    ask is a card's digits counted ("the 16 digits on the front of your card")."""
    if not message:
        return Hits(), None, None, False
    msg_hits, msg_category, msg_source = _message_hits(message, lex, cfg)
    if msg_category is None and _counts_phrase_words(message, lex):
        msg_category = lex.category("recovery_phrase")  # "enter your 12 words", "12 речи"
    if msg_category is None and msg_hits.ask and msg_hits.word_word and msg_hits.wallet:
        # "Connect your wallet: paste the words exactly as they appear in your backup"
        msg_category = lex.category("recovery_phrase")
    if msg_category is not None and _asks_last_digits(message, msg_hits, msg_category):
        msg_category = None  # "type the last 4 digits of your card": which card, not its data
    counted_card = False
    if (
        msg_category is None
        or msg_category.severity < Severity.HIGH
        or msg_category.name == "bank_account"
    ):
        # (over a lesser or vaguer reading: "bank kartınızın … 16 rəqəmi" names a bank, and
        # counts a card's digits)
        counted = _message_counted_card(message, msg_hits, lex)
        if counted is not None:
            msg_category, counted_card = counted, True
    msg_term = None
    if msg_category is not None:
        msg_term = lex.explain(msg_source, msg_category) or lex.explain(msg_hits, msg_category)
    return msg_hits, msg_category, msg_term, counted_card


def _field_findings(
    props: Mapping[Any, Any], message: str | None, cfg: FormConfig
) -> list[Finding]:
    lex = lexicon_for(cfg)
    msg_hits, msg_category, msg_term, counted_card = _form_message(message, lex, cfg)
    fields = [
        _field(key, spec, lex)
        for key, spec in props.items()
        if isinstance(key, str) and isinstance(spec, Mapping)
    ]
    cardish = _cardish(fields)
    n_cardish = sum(cardish)  # counted once: "any other field cardish" per field was O(n²)
    # what the message asks to paste; an API key only when the message asks ("Create an API
    # key: it will be shown once" names one and asks for nothing)
    named = msg_hits.strong & _PASTED_SECRETS
    pasted = _pick(lex, set(named if msg_hits.ask else named - {"api_key"})) if message else None
    if pasted is None and _names_credential_file(message) and msg_hits.ask:
        pasted = lex.category("credential_file")  # "paste your .env here"
    numbered = _numbered_words(fields)
    n_entries = sum(f.value_entry for f in fields)
    card_shapes = _card_shapes(
        fields,
        lambda: bool(
            msg_hits.card_context
            or msg_hits.payment_words
            or n_cardish > 0
            or "card_number" in msg_hits.gated  # "the long number on the front of your card"
            or (message is not None and _PRICE.search(message[:2048]) is not None)
        ),
    )
    postal = msg_hits.postal or any(f.postal for f in fields)
    postcodes = [f for f in fields if f.postal and any(h.code_word for h in f.name_hits)]
    kinds = [None if f.value_entry else _kind_of_choices(_choices(f.spec) or []) for f in fields]
    kind_counts = {k: kinds.count(k) for k in set(kinds) if k is not None}
    sole, users, month_year = _form_shapes(fields, msg_hits, msg_category, counted_card)
    out: list[Finding] = []
    for i, f in enumerate(fields):
        if f.allowed:
            continue
        others = n_cardish - cardish[i] > 0
        card_ok = (
            not cfg.card_context_required
            or msg_hits.card_context
            or msg_hits.payment_words
            or others
            # "Card number" taking 13-19 digits: a card's number by its own words and shape
            or (f.cardish and (_card_length(f.spec) or _card_digits(f.spec)))
        )
        path = json_path("requestedSchema", "properties", f.key)
        if not f.value_entry:
            result = _classify_choice(
                f,
                lex,
                card_ok=card_ok,
                message=msg_category,
                kind=kinds[i],
                kind_counts=kind_counts,
            )
            if result is None and i in numbered:
                phrase = lex.category("recovery_phrase")
                result = phrase, "numbered-words", _evidence(phrase, "numbered-word-fields")
            if result is None and (msg_hits.card_context or msg_hits.payment_words):
                result = _month_year_field(i in month_year, lex)  # "MM" and "YY" as choices
            if result is not None:
                category, detail, evidence = result
                out.append(Finding(category.reason, path, category.severity, detail, evidence))
            continue
        result = _classify(
            f,
            lex,
            card_ok=card_ok,
            message=msg_category,
            postal=_postal_pin(f, postal, postcodes, msg_hits),
            channel=msg_hits.channel
            or (
                # "type the six digits shown": a code asked for by number of digits, in a form
                # whose only value-entry field is this opaque one
                (msg_hits.code_word or (msg_hits.digit_word and msg_hits.count_word))
                and msg_hits.ask
                and n_entries == 1
                and not (msg_hits.postal or msg_hits.setting or postal)
                # "we sent six digits to your phone": no phone number fits in 0..999999
                and not (msg_hits.phone and _numeric_digits(f.spec) is None)
            ),
            benign_form=msg_hits.benign and msg_category is None,
            message_term=msg_term,
            pasted=pasted,
            sole=f is sole,
            # a request verb, a question or a colon, or a code just delivered ("sent by SMS")
            asked=msg_hits.ask
            or msg_hits.channel
            or (message is not None and any(c in _ASK_MARKS for c in message[:4096])),
            login=any(g is not f for g in users),
        )
        if result is None and i in numbered:
            phrase = lex.category("recovery_phrase")
            result = phrase, "numbered-words", _evidence(phrase, "numbered-word-fields")
        if result is None and (msg_hits.card_context or msg_hits.payment_words):
            result = _card_digits_field(f, lex) or _month_year_field(i in month_year, lex)
        if result is None and i in card_shapes and not (f.allowed or _is_identity(f)):
            category = lex.category(card_shapes[i])
            result = category, "card-shape", _evidence(category, "card-form-shape")
        if result is not None:
            category, detail, evidence = result
            out.append(Finding(category.reason, path, category.severity, detail, evidence))
    return out


# Files that hold credentials, by their usual names and paths (a name or path in a field's own
# text, or in a message asking to paste it; "id_ed25519.pub" and other public halves excluded).
_CREDENTIAL_PATH = re2.compile(
    r"(?i)(?:^|[^a-z0-9_])(?:"
    r"\.env(?:\.[a-z]{2,12})?|\.npmrc|\.pypirc|\.netrc|_netrc|\.pgpass|\.htpasswd|"
    r"\.git-credentials|\.dockercfg|\.s3cfg|\.boto|\.vault-token|\.terraformrc|\.my\.cnf|"
    r"\.aws[/\\]credentials|\.kube[/\\]config|\.docker[/\\]config\.json|"
    r"id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?|[a-z0-9_-]+\.(?:pem|p12|pfx|jks|keystore|kdbx|ppk|ovpn)|"
    r"wallet\.dat|terraform\.tfstate|[a-z0-9_-]*\.tfvars|cookies\.txt|credentials\.json|"
    r"service[-_]?account[a-z0-9_-]*\.json|encryption-?config(?:uration)?\.ya?ml|"
    r"kubeconfig|wp-config\.php|sitemanager\.xml|rclone\.conf|secrets\.ya?ml"
    r")(?:[^a-z0-9_.]|\.(?:[^a-z]|$)|$)"
)


def _names_credential_file(text: object) -> bool:
    return isinstance(text, str) and _CREDENTIAL_PATH.search(text[:2048]) is not None


_NUMBERED_WORDS_MIN = 3


def _numbered_words(fields: list[_Field]) -> set[int]:
    """Three or more fields named only "word" and a number ("Word 3", "Słowo 7", "w11" titled
    "Λέξη 2"): a recovery phrase asked word by word. Empty when there are fewer."""
    found = set()
    for i, f in enumerate(fields):
        title = f.spec.get("title")
        text, hits = (title, f.title_hits) if isinstance(title, str) else (f.key, f.name_hits[0])
        if hits is None or not hits.word_word or len(text) > 40:
            continue
        if any(c.isdigit() for c in text) and not (hits.strong or hits.setting):
            found.add(i)
    return found if len(found) >= _NUMBERED_WORDS_MIN else set()


# A card form by its shape, in any language: an expiry field constrained to MM/YY next to a
# short code field and / or a long number field ("Numer" / "Kod" / "Ważna do").
_MONTH_YEAR_PATTERN = re2.compile(
    r"\(0\[1-9\]\|1\[0-2\]\)[^/]{0,4}/|"
    r"^\^?(?:\\d|\[0-9\])\{2\}\\?/(?:\\d|\[0-9\])\{[24]\}\$?$"
)


# A price in the message ("49 €", "$49", "9.900 kr.", "₦19,900", "199 zł"): payment words in any
# language, for the card-shape rule only.
_PRICE = re2.compile(
    r"[€$£¥₹₦₽₺₩₫฿₱₴₸₾₼₪₲₵₡₭៛]\s?[0-9]|[0-9]\s?(?:[€$£¥₹₦₽₺₩₫฿₱₴₸₾₼₪₲₵₡₭៛]|"
    r"(?i:eur|usd|gbp|chf|kr|zł|zl|kč|kc|ft|lei|лв|дин|руб|грн|₸|azn|sek|nok|dkk|isk|ron|huf|"
    r"pln|czk|inr|idr|myr|php|thb|vnd|krw|jpy|cny|kes|ngn|zar|egp|try|uah|kzt|brl|mxn|ars|"
    r"ksh|birr|ብር|ກີບ|kip|ကျပ်|ដុល្លារ|tk|৳)(?:[^a-z]|$))"
)


def _card_shape(spec: Mapping[str, Any]) -> str | None:
    """``card_expiry``, ``card_cvc`` or ``card_number`` when a field's constraints have the shape
    of one (nothing but constraints: the words are the lexicon's business)."""
    pattern = spec.get("pattern")
    if isinstance(pattern, str) and _MONTH_YEAR_PATTERN.search(pattern[:200]):
        return "card_expiry"
    digits = _short_digits(spec) if not _is_numeric(spec) else _numeric_digits(spec)
    max_len = spec.get("maxLength")
    if isinstance(max_len, bool) or not isinstance(max_len, int):
        max_len = None
    if digits in (3, 4) or (max_len in (3, 4) and "string" in _types(spec)):
        return "card_cvc"
    if (max_len is not None and 15 <= max_len <= 23 and "string" in _types(spec)) or (
        _is_numeric(spec) and "maximum" not in spec and "minimum" not in spec
    ):
        return "card_number"
    return None


# A pattern that accepts only a run of digits (spaces or dashes allowed) whose length range
# holds a card number's 16 digits: "^[0-9 ]{13,23}$", "^\\d{16}$", "^[\\d\\s-]{15,19}$".
_CARD_DIGITS_PATTERN = re.compile(
    r"\^?(?:\[(?:0-9|\\d)(?: |\\s|-|\\-)*\]|\\d)\{(\d{1,2})(?:,(\d{1,2}))?\}\$?"
)


def _card_digits(spec: Mapping[str, Any]) -> bool:
    """The field's pattern accepts a card number's digits and little else."""
    pattern = spec.get("pattern")
    if not isinstance(pattern, str) or len(pattern) > 40:
        return False
    m = _CARD_DIGITS_PATTERN.fullmatch(pattern.strip())
    if m is None:
        return False
    low = int(m.group(1))
    high = int(m.group(2)) if m.group(2) else low
    return 12 <= low <= 16 <= high <= 24


def _bounds(spec: Mapping[str, Any]) -> tuple[int, int] | None:
    """A number field's integer bounds (minimum, maximum), when it has both."""
    low, high = spec.get("minimum"), spec.get("maximum")
    if not _is_numeric(spec) or not isinstance(low, int) or not isinstance(high, int):
        return None
    return None if bool in (type(low), type(high)) else (low, high)


def _month_year_numbers(fields: list[_Field]) -> set[int]:
    """A month (1-12) and a year (this century, a span of at most 30 years) asked as two
    number fields: with card words in the message, a card's expiry in any language."""
    months = [i for i, f in enumerate(fields) if _span(f.spec) == (1, 12)]
    years = [
        i
        for i, f in enumerate(fields)
        if (b := _span(f.spec)) is not None and 2000 <= b[0] <= b[1] <= 2100 and b[1] - b[0] <= 30
    ]
    return set(months + years) if months and years else set()


def _span(spec: Mapping[str, Any]) -> tuple[int, int] | None:
    """The bounds of a number field, or of choices that are all whole numbers ("01" … "12",
    "2027" … "2031"): a month and a year asked either way."""
    bounds = _bounds(spec)
    if bounds is not None:
        return bounds
    values = _choices(spec)
    if not values or len(values) > 100:
        return None
    numbers = []
    for v in values:
        text = str(v).strip() if isinstance(v, (str, int)) and not isinstance(v, bool) else ""
        if not text.isdigit() or len(text) > 4:
            return None
        numbers.append(int(text))
    return min(numbers), max(numbers)


def _month_year_field(is_one: bool, lex: Lexicon) -> tuple[Category, str, Evidence] | None:
    if not is_one:
        return None
    expiry = lex.category("card_expiry")
    return expiry, "month-year", _evidence(expiry, "month+year-numbers+card-context")


def _card_digits_field(f: _Field, lex: Lexicon) -> tuple[Category, str, Evidence] | None:
    """In a card context ("Update your card details"), a field that names nothing and takes
    13-23 digits (its pattern, or its length bounds: 13 to 19) is the card number."""
    if not ((_card_digits(f.spec) or _card_length(f.spec)) and _names_nothing(f)):
        return None
    category = lex.category("card_number")
    return category, "card-digits", _evidence(category, "digits-pattern+card-context")


def _card_length(spec: Mapping[str, Any]) -> bool:
    """A text field bounded like a card number: at least 12-16 and at most 16-23 characters."""
    low, high = spec.get("minLength"), spec.get("maxLength")
    if not isinstance(low, int) or not isinstance(high, int) or bool in (type(low), type(high)):
        return False
    return "string" in _types(spec) and 12 <= low <= 16 <= high <= 23


def _card_shapes(fields: list[_Field], payment_words: Callable[[], bool]) -> dict[int, str]:
    """Fields that make a card form by their shapes alone: an MM/YY expiry, a code and a number;
    or two of them when payment words are present (asked only then)."""
    shapes = {
        i: shape
        for i, f in enumerate(fields)
        if f.value_entry and (shape := _card_shape(f.spec)) is not None and not _last_digits(f)
    }
    kinds = set(shapes.values())
    if len(kinds) == 3:
        return shapes
    if len(kinds) == 2 and (kinds == {"card_number", "card_cvc"} or "card_expiry" in kinds):
        return shapes if payment_words() else {}
    return {}


def _classify_choice(
    f: _Field,
    lex: Lexicon,
    *,
    card_ok: bool,
    message: Category | None,
    kind: str | None,
    kind_counts: Mapping[str, int],
) -> tuple[Category, str, Evidence] | None:
    """A choice field (enum, oneOf, booleans excluded) collects a secret when its choices spell
    one (digits of a PIN, characters of a password, words of a recovery phrase: several such
    fields, or one asked for by the message), when its own text names a security question or a
    card expiry, and it carries sensitive personal data (blood type, country of birth) to warn."""
    if kind == "word":
        if kind_counts.get("word", 0) >= 2 or message is not None or _names_a_word(f):
            phrase = lex.category("recovery_phrase")
            return phrase, "word-choices", _evidence(phrase, "choice-list:bip39-words")
        return None
    if kind is not None and (kind_counts.get(kind, 0) >= 2 or message is not None):
        category = lex.category(_CHOICE_CATEGORY[kind])
        signal = "choice-list" if message is None else "choice-list+message-ask"
        return category, f"{kind}-choices", _evidence(category, f"{signal}:{kind}")
    names = _names(f, card_ok=card_ok)
    found = _pick(lex, names)
    if (
        found is None
        and message is not None
        and message.name == "kba"
        and _types(f.spec) != {"boolean"}
        and not _choices_are_questions(f, lex)
    ):
        # "Security question: what was your first car?" and the answers to pick from
        return message, message.detail + "-message", _evidence(message, "message-ask+choices")
    if found is None:
        return None
    if found.name == "kba" and _choices_are_questions(f, lex):
        return None  # picking WHICH security question to use: its answer is asked elsewhere
    if found.severity < Severity.HIGH or found.name in _CHOICE_SECRETS:
        return found, found.detail, _named_evidence(f, found, lex)
    return None


def _names_a_word(f: _Field) -> bool:
    """The field calls itself a numbered word ("Word 3", "Słowo 7"; not "Choose today's word")
    or names a recovery phrase."""
    title = f.spec.get("title")
    numbered = any(c.isdigit() for c in (title if isinstance(title, str) else f.key))
    return any((h.word_word and numbered) or "recovery_phrase" in h.strong for h in f.name_hits)


def _choices_are_questions(f: _Field, lex: Lexicon) -> bool:
    """The choices are security questions themselves ("Name of your first pet", "City where you
    were born"), not answers to one ("Rex", "Lyon"): at least half of them name a security
    question, or the field calls itself a question and at least half of its choices read as one
    (a phrase of three words or more; five characters or more in a script without spaces)."""
    values = [v for v in (_choices(f.spec) or ()) if isinstance(v, str) and v.strip()][:50]
    if len(values) < 2:
        return False
    named = [lex.scan(v) for v in values]
    if sum("kba" in h.strong for h in named) * 2 >= len(values):
        return True
    # long phrases under a field that calls itself a question ("Security question": "Your
    # first school"), not the question itself ("Your first pet was a…": "Dog called Max")
    return any(h.question for h in f.name_hits) and sum(map(_reads_as_question, values)) * 2 >= len(
        values
    )


def _reads_as_question(text: str) -> bool:
    toks = text.split()
    if len(toks) >= 3:
        return True
    return len(toks) == 1 and _no_space_script(text) and len(text.strip()) >= 5


def _property_text_findings(key: str, spec: object, limits: Limits) -> list[Finding]:
    base = ("requestedSchema", "properties", key)
    out = _text_findings(key, base, limits, uri_example=False)
    if not isinstance(spec, Mapping):
        return out
    fmt = spec.get("format")
    uri_field = isinstance(fmt, str) and fmt.strip().lower() in _URI_FORMATS
    for parts, text in _visible_strings(spec, base, 3, limits):
        # A domain named in a description, a sample value or a title is prose; so is a choice
        # that is only a site's name ("github.com") — checked only when one is found.
        in_prose: bool | None = len(parts) == 4 and (
            parts[3] in _EXAMPLE_KEYS or parts[3] == "title"
        )
        if not in_prose and len(parts) == 5 and parts[3] == "enum":
            in_prose = None
        example = uri_field and len(parts) > 3 and parts[3] in _EXAMPLE_KEYS
        out.extend(_text_findings(text, parts, limits, uri_example=example, prose=in_prose))
    return out


def check_form(params: Mapping[str, Any], cfg: FormConfig, limits: Limits) -> list[Finding]:
    """All form-mode findings for one elicitation ``params`` (see the module docstring)."""
    raw: object = params  # the engine validated the envelope, but never raise on odd shapes
    if not isinstance(raw, Mapping):
        return []
    out: list[Finding] = []
    message = params.get("message")
    message = message if isinstance(message, str) else None
    if message is not None:
        # prose: a plain domain named in it is not a link (a lure domain still is)
        out.extend(_text_findings(message, "$.message", limits, uri_example=False, prose=True))
    schema = params.get("requestedSchema")
    if isinstance(schema, Mapping):
        for key, value in schema.items():
            if isinstance(key, str) and key not in ("properties", *_HIDDEN_KEYS):
                for parts, text in _visible_strings(value, ("requestedSchema", key), 2, limits):
                    out.extend(_text_findings(text, parts, limits, uri_example=False))
        props = schema.get("properties")
        if isinstance(props, Mapping):
            for key, spec in props.items():
                if isinstance(key, str):
                    out.extend(_property_text_findings(key, spec, limits))
            out.extend(_field_findings(props, message, cfg))
    return list(dict.fromkeys(out))
