"""gateway.detect.lexicon and gateway/data/lexicon.yaml: multilingual field vocabulary."""

from __future__ import annotations

import gc
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.detect.config import FormConfig
from gateway.detect.findings import Reason, Severity
from gateway.detect.lexicon import Lexicon, base_lexicon, lexicon_for
from gateway.detect.normalize import words

LEX = base_lexicon()


def strong(text: str) -> frozenset[str]:
    return LEX.scan(text).strong


def raw_data() -> dict[str, Any]:
    text = resources.files("gateway").joinpath("data/lexicon.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


# ---------------------------------------------------------------- the data file


def test_every_category_maps_to_a_known_reason() -> None:
    for name, spec in raw_data()["categories"].items():
        assert Reason(spec["reason"]) in {
            Reason.SECRET_FIELD,
            Reason.OTP_FIELD,
            Reason.PAYMENT_FIELD,
            Reason.SENSITIVE_PII_FIELD,
        }, name


def test_every_term_survives_normalisation() -> None:
    data = raw_data()
    for name, spec in data["categories"].items():
        for key in ("terms", "stems", "gated_terms", "gated_stems"):
            for term in spec.get(key, ()):
                assert words(str(term)), f"{name}.{key}: {term!r} normalises to nothing"


def test_negative_sets_referenced_exist() -> None:
    data = raw_data()
    for spec in data["categories"].values():
        for set_name in spec.get("negative_sets") or ():
            assert set_name in data["negative_sets"]


def test_categories_in_priority_order() -> None:
    names = [c.name for c in LEX.categories]
    assert names.index("card_pin") < names.index("secret")  # "card PIN" is payment, not a PIN
    assert names.index("card_cvc") < names.index("otp")  # "security code" with card context
    assert LEX.category("sensitive_pii").severity is Severity.LOW
    assert LEX.category("kba").reason is Reason.SECRET_FIELD


# ---------------------------------------------------------------- every language, every category

_POSITIVE = [
    # secret
    ("en", "Password", "secret"),
    ("en", "API key", "secret"),
    ("en", "Recovery phrase", "secret"),
    ("de", "Passwort", "secret"),
    ("de", "Kennwort wiederholen", "secret"),
    ("es", "Contraseña", "secret"),
    ("pt", "Senha", "secret"),
    ("fr", "Mot de passe", "secret"),
    ("it", "Parola d'ordine", "secret"),
    ("ru", "Пароль", "secret"),
    ("ru", "Введите пароль", "secret"),  # inflected form via the stem
    ("zh", "密码", "secret"),
    ("zh", "登录密碼", "secret"),
    ("ja", "パスワード", "secret"),
    ("ja", "暗証番号", "secret"),
    ("ko", "비밀번호", "secret"),
    # otp
    ("en", "One-time code", "otp"),
    ("en", "Enter the code we texted you", "otp"),
    ("de", "Bestätigungscode", "otp"),
    ("es", "Código de verificación", "otp"),
    ("pt", "Código de verificação", "otp"),
    ("fr", "Code de vérification", "otp"),
    ("it", "Codice di verifica", "otp"),
    ("ru", "Код подтверждения", "otp"),
    ("zh", "验证码", "otp"),
    ("ja", "認証コード", "otp"),
    ("ko", "인증번호", "otp"),
    # payment
    ("en", "Credit card number", "card_number"),
    ("en", "CVV", "card_cvc"),
    ("en", "Card PIN", "card_pin"),
    ("en", "IBAN", "bank_account"),
    ("de", "Kreditkartennummer", "card_number"),
    ("es", "Tarjeta de crédito", "card_number"),
    ("pt", "Cartão de crédito", "card_number"),
    ("fr", "Carte bancaire", "card_number"),
    ("it", "Carta di credito", "card_number"),
    ("ru", "Номер кредитной карты", "card_number"),
    ("zh", "信用卡号", "card_number"),
    ("ja", "クレジットカード番号", "card_number"),
    ("ko", "신용카드 번호", "card_number"),
    ("fr", "Cryptogramme visuel", "card_cvc"),
    ("ja", "セキュリティコード", "card_cvc"),
    # sensitive PII
    ("en", "Social security number", "sensitive_pii"),
    ("en", "Passport number", "sensitive_pii"),
    ("de", "Steueridentifikationsnummer", "sensitive_pii"),
    ("es", "Número de pasaporte", "sensitive_pii"),
    ("pt", "CPF", "sensitive_pii"),
    ("fr", "Numéro de sécurité sociale", "sensitive_pii"),
    ("it", "Codice fiscale", "sensitive_pii"),
    ("ru", "Номер паспорта", "sensitive_pii"),
    ("zh", "身份证号码", "sensitive_pii"),
    ("ja", "マイナンバー", "sensitive_pii"),
    ("ko", "주민등록번호", "sensitive_pii"),
    # security-question answers
    # more languages (nl, pl, tr, sv, ar, hi)
    ("nl", "Wachtwoord", "secret"),
    ("pl", "Hasło", "secret"),
    ("tr", "Şifre", "secret"),
    ("sv", "Lösenord", "secret"),
    ("ar", "كلمة المرور", "secret"),
    ("hi", "पासवर्ड", "secret"),
    ("nl", "Verificatiecode", "otp"),
    ("pl", "Kod weryfikacyjny", "otp"),
    ("tr", "Doğrulama kodu", "otp"),
    ("sv", "Verifieringskod", "otp"),
    ("ar", "رمز التحقق", "otp"),
    ("hi", "सत्यापन कोड", "otp"),
    ("en", "Mother's maiden name", "kba"),
    ("de", "Geburtsname Ihrer Mutter", "kba"),
    ("en", "Answer to security question", "kba"),
    ("de", "Sicherheitsfrage", "kba"),
    ("es", "Respuesta de seguridad", "kba"),
    ("fr", "Question secrète", "kba"),
    ("ru", "Секретный вопрос", "kba"),
    ("ja", "秘密の質問", "kba"),
]


@pytest.mark.parametrize(("lang", "text", "category"), _POSITIVE)
def test_positive_terms(lang: str, text: str, category: str) -> None:
    assert category in strong(text), (lang, text)


_BENIGN = [
    ("en", "Secretary name"),
    ("en", "API key name"),
    ("en", "Password hint"),
    ("en", "Forgot password?"),
    ("en", "Password policy accepted"),
    ("en", "Max tokens"),
    ("en", "Token count"),
    ("en", "Primary key column"),
    ("en", "Public key fingerprint"),
    ("en", "Boarding pass"),
    ("en", "Passport photo"),
    ("en", "Zip code"),
    ("en", "Discount code"),
    ("en", "Full name"),
    ("en", "Email address"),
    ("de", "Passwort vergessen"),
    ("es", "Palabra clave"),
    ("es", "Secretaria"),
    ("pt", "Esqueceu a senha"),
    ("fr", "Mot de passe oublié"),
    ("it", "Password dimenticata"),
    ("ru", "Забыли пароль"),
    ("zh", "忘记密码"),
    ("ja", "パスワードを忘れた"),
    ("ko", "비밀번호 힌트"),
    ("de", "Telefonnummer"),
    ("en", "Library card number"),
]


_LONG = "Please read this carefully before you continue with the next step of the wizard: "


@pytest.mark.parametrize(("lang", "text", "category"), _POSITIVE)
def test_positive_terms_inside_long_text(lang: str, text: str, category: str) -> None:
    """Long texts go through a squashed-text pre-check first: it must never hide a term."""
    hits = LEX.scan(_LONG + text + " — thank you.")
    assert category in hits.strong | hits.gated, (lang, text)


@pytest.mark.parametrize(("lang", "text"), _BENIGN)
def test_benign_lookalikes(lang: str, text: str) -> None:
    hits = LEX.scan(text)
    assert not (hits.strong - {"sensitive_pii"}), (lang, text, hits)
    assert "card_number" not in hits.gated or lang != "en" or "library" not in text.lower()


# ---------------------------------------------------------------- obfuscation


@pytest.mark.parametrize(
    "text",
    [
        "раssword",  # Cyrillic
        "ΡΑSSWΟRD",  # Greek capitals
        "ｐａｓｓｗｏｒｄ",  # fullwidth
        "p a s s w o r d",
        "p.a.s.s.w.o.r.d",
        "P-A-S-S-W-O-R-D",
        "pass\u200bword",
        "userPassword",
        "user_password",
        "user-password",
        "pass_word",
        "PassWord",
        "pα$$word".replace("$", "s"),
        "Passw0rd",  # digits and symbols inside a word read as letters
        "p4ssw0rd",
        "pa$$word",
        "s3cr3t",
    ],
)
def test_obfuscated_secret_terms(text: str) -> None:
    assert "secret" in strong(text)


# ---------------------------------------------------------------- gating, context, genericity


@pytest.mark.parametrize("text", ["yourPassword", "p a s s w o r d", "pa$$w0rd", "API-KEY"])
def test_obfuscations_survive_the_long_text_pre_check(text: str) -> None:
    assert "secret" in strong(_LONG + "enter " + text + " here")


def test_leet_view_does_not_change_genericity() -> None:
    assert LEX.scan("input1").generic
    assert LEX.scan("mp3 player").strong == frozenset()


def test_generic_card_words_are_gated() -> None:
    hits = LEX.scan("Card number")
    assert "card_number" in hits.gated
    assert "card_number" not in hits.strong
    assert "card_expiry" in LEX.scan("Expiry date").gated
    assert "card_cvc" in LEX.scan("Security code").gated


def test_card_context_words() -> None:
    assert LEX.scan("Please complete your payment").card_context
    assert LEX.scan("Zahlung mit Kreditkarte").card_context
    assert LEX.scan("信用卡支付").card_context
    assert not LEX.scan("Please complete your profile").card_context


def test_generic_fields() -> None:
    for text in ("code", "value", "Answer", "input_1", "Your code"):
        assert LEX.scan(text).generic, text
    for text in ("first name", "city", "password"):
        assert not LEX.scan(text).generic, text


def test_code_words_and_negations() -> None:
    assert LEX.scan("Verification").code_word
    hits = LEX.scan("Zip code")
    assert hits.code_word
    assert "otp" in hits.negated


# ---------------------------------------------------------------- operator terms


def test_extra_and_allow_terms() -> None:
    cfg = FormConfig(
        extra_secret_terms=frozenset({"vault phrase"}),
        extra_payment_terms=frozenset({"billing token"}),
        extra_sensitive_pii_terms=frozenset({"employee number"}),
        allow_terms=frozenset({"deploy password"}),
    )
    lex = lexicon_for(cfg)
    assert "secret" in lex.scan("Vault phrase").strong
    assert "card_number" in lex.scan("billingToken").strong
    assert "sensitive_pii" in lex.scan("Employee number").strong
    assert lex.scan("Deploy password").allowed
    assert "secret" not in base_lexicon().scan("Vault phrase").strong
    assert lexicon_for(cfg) is lex
    assert lexicon_for(FormConfig()) is base_lexicon()


def test_lexicon_from_minimal_data() -> None:
    data = {
        "categories": {"secret": {"reason": "secret-field", "terms": ["sesame"]}},
        "card_context": {"terms": ["pay"]},
        "generic_fields": ["value"],
        "code_words": ["code"],
    }
    lex = Lexicon(data)
    assert lex.scan("open sesame").strong == {"secret"}
    assert lex.scan("").generic


def test_long_text_is_scanned_up_to_the_cap() -> None:
    assert "secret" in strong("filler " * 1000 + "password")


# -- data/concepts/*.yaml: more terms per language group ----------------------------------------


def test_language_group_files_add_terms_per_language() -> None:
    from gateway.detect.lexicon import _merge_terms

    concepts: dict[str, Any] = {
        "password": {"category": "secret", "terms": {"en": ["password"]}},
        "pin": {"category": "secret", "terms": ["pin"]},
    }
    _merge_terms(
        concepts,
        {
            "concepts": {
                "password": {"terms": {"yo": ["ọrọ igbaniwọle"]}, "stems": {"yo": ["igbani"]}},
                "pin": {"terms": {"sw": ["nambari ya siri"]}},
            }
        },
        "concepts/africa.yaml",
    )
    assert concepts["password"]["terms"] == {"en": ["password"], "yo": ["ọrọ igbaniwọle"]}
    assert concepts["password"]["stems"] == {"yo": ["igbani"]}
    assert concepts["pin"]["terms"] == {"*": ["pin"], "sw": ["nambari ya siri"]}


@pytest.mark.parametrize(
    ("more", "message"),
    [
        ({"concepts": {"pasword": {"terms": {"en": ["x"]}}}}, "concepts.pasword: unknown concept"),
        ({"concepts": {"pin": {"negative": {"en": ["x"]}}}}, "concepts.pin.negative: expected"),
        ({"concepts": {"pin": {"terms": {"en": "x"}}}}, "concepts.pin.terms.en: expected a list"),
        ({"concepts": {"pin": {"terms": ["x"]}}}, "concepts.pin.terms: expected"),
        ([], "expected a mapping 'concepts'"),
    ],
)
def test_a_bad_language_group_file_is_named(more: Any, message: str) -> None:
    from gateway.detect.lexicon import _merge_terms

    with pytest.raises(ValueError, match=f"^concepts/x.yaml: {message}"):
        _merge_terms({"pin": {"category": "secret"}}, more, "concepts/x.yaml")


def test_every_shipped_language_group_file_loads() -> None:
    from gateway.detect.lexicon import _data, _more_concepts

    known = set(_data()["concepts"])
    for name, more in _more_concepts():
        assert set(more.get("concepts") or {}) <= known, name
        assert set(more) <= {"concepts", "contexts", "negative_sets"}, name


# -- which term, in which language (explanations) -----------------------------------------------


def test_hits_remember_the_term_and_its_language() -> None:
    """A concept's terms keep the language they are listed under, also those a language group
    file adds (data/concepts/*.yaml, merged by _merge_terms); lexicon.yaml's lists have none."""
    from gateway.detect.lexicon import _merge_terms

    concepts: dict[str, Any] = {
        "password": {
            "category": "secret",
            "terms": {"en": ["password"], "fr": ["mot de passe"], "cs": ["heslo"]},
            "stems": {"de": ["passwort"]},
        },
        "pin": {"category": "secret", "terms": ["pin"]},
    }
    more = {"concepts": {"password": {"terms": {"sk": ["heslo"], "yo": ["ọrọ igbaniwọle"]}}}}
    _merge_terms(concepts, more, "concepts/x.yaml")
    data = {
        "categories": {"secret": {"reason": "secret-field", "terms": ["sesame"]}},
        "concepts": concepts,
        "card_context": {"terms": ["pay"]},
        "generic_fields": ["value"],
        "code_words": ["code"],
    }
    lex = Lexicon(data)
    cases = {
        "Mot de passe": ("password", "mot de passe", "fr", False),
        "Ọrọ igbaniwọle": ("password", "ọrọ igbaniwọle", "yo", False),
        "Heslo": ("password", "heslo", "cs,sk", False),
        "Kontopasswort": ("password", "passwort", "de", True),
        "PIN": ("pin", "pin", None, False),
        "open sesame": ("secret", "sesame", None, False),
    }
    for text, (category, term, lang, stem) in cases.items():
        hits = lex.scan(text)
        assert category in hits.strong, text
        found = hits.term(category)
        assert found is not None, text
        assert (found.text, found.lang, found.stem) == (term, lang, stem), text
        named = lex.explain(hits, lex.category("secret"))
        assert named is not None
        assert named[0].name == category, text  # the most specific concept explains


def test_every_shipped_term_hit_is_explained() -> None:
    """Whatever the shipped data names, the hit can say which entry matched."""
    lex = base_lexicon()
    for text in ("Passwort", "mot de passe", "Card number", "SSN", "one-time code", "контрольный"):
        hits = lex.scan(text)
        for category in hits.strong:
            assert hits.term(category) is not None, (text, category)


def test_language_group_files_add_words_to_the_signal_bags() -> None:
    from gateway.detect.lexicon import _merge_contexts

    data: dict[str, Any] = {"channel_context": {"terms": ["sms"]}, "code_words": ["code"]}
    _merge_contexts(
        data,
        {
            "contexts": {
                "channel_context": {"terms": {"fr": ["par texto"]}, "stems": {"ja": ["短信"]}},
                "code_words": {"sw": ["msimbo"]},
                "postal_context": {"terms": {"hi": ["डाक"]}},
            }
        },
        "concepts/x.yaml",
    )
    assert data["channel_context"] == {"terms": ["sms", "par texto"], "stems": ["短信"]}
    assert data["code_words"] == ["code", "msimbo"]
    assert data["postal_context"] == {"terms": ["डाक"]}


@pytest.mark.parametrize(
    ("more", "message"),
    [
        ({"contexts": {"card_contxt": {"terms": {"en": ["x"]}}}}, "contexts.card_contxt: expected"),
        (
            {"contexts": {"card_context": {"negative": {"en": ["x"]}}}},
            "contexts.card_context.negative",
        ),
        ({"contexts": {"code_words": ["x"]}}, "contexts.code_words: expected lists per language"),
        ({"contexts": {"code_words": {"en": "x"}}}, "contexts.code_words.en: expected a list"),
    ],
)
def test_a_bad_signal_bag_is_named(more: Any, message: str) -> None:
    from gateway.detect.lexicon import _merge_contexts

    with pytest.raises(ValueError, match=f"^concepts/x.yaml: {message}"):
        _merge_contexts({}, more, "concepts/x.yaml")


# -- obfuscated names beyond ASCII (issue 10) ----------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "lÖsEnOrD",  # sv, case flipped inside the word
        "NeNoSiRi",  # sw
        "C0n7r453ñ4",  # es, leet with an accented letter
        "P4l4vr4-p4553",  # pt, leet with one letter per word
        "H4sł0",  # pl
        "ร ห ั ส ผ ่ า น",  # th, spelled out with its vowel and tone marks
    ],
)
def test_obfuscated_password_words_in_other_scripts_are_read(text: str) -> None:
    assert "password" in base_lexicon().scan(text).strong


@pytest.mark.parametrize(("text", "category"), [("ApI_kEy", "api_key"), ("aPi KeY", "api_key")])
def test_words_cut_by_noise_casing_into_short_pieces_are_read(text: str, category: str) -> None:
    # "Ap|I" and "k|Ey": case changes that camelCase would never make
    assert category in base_lexicon().scan(text).strong


@pytest.mark.parametrize(
    "text", ["newPassword", "APIKeyName", "iPhone", "eBay", "v2 4k mp3", "OAuthToken"]
)
def test_camel_case_and_versions_are_not_read_as_obfuscation(text: str) -> None:
    from gateway.detect.lexicon import _mixed_case

    assert not _mixed_case(text)


def test_letter_spacing_keeps_combining_marks() -> None:
    assert words("ร ห ั ส ผ ่ า น") == ["รหัสผ่าน"]
    assert words("প া স ও য ় া র ্ ড") == ["পাসওয়ার্ড"]


def test_language_group_files_add_words_to_the_shared_negatives() -> None:
    from gateway.detect.lexicon import _merge_contexts

    data: dict[str, Any] = {"negative_sets": {"about": {"terms": ["hint"]}}}
    _merge_contexts(
        data,
        {"negative_sets": {"about": {"terms": {"de": ["Hinweis"]}, "stems": {"ja": ["ヒント"]}}}},
        "concepts/x.yaml",
    )
    assert data["negative_sets"]["about"] == {"terms": ["hint", "Hinweis"], "stems": ["ヒント"]}
    with pytest.raises(
        ValueError, match=r"^concepts/x\.yaml: negative_sets\.abut: expected one of"
    ):
        _merge_contexts(
            data, {"negative_sets": {"abut": {"terms": {"de": ["x"]}}}}, "concepts/x.yaml"
        )


def test_a_phrase_spelled_out_letter_by_letter_with_wider_word_gaps_is_read() -> None:
    assert "password" in base_lexicon().scan("m o t  d e  p a s s e").strong


def test_the_compiled_data_is_current() -> None:
    """gateway/data/compiled/lexicon-data.json is made from the YAML files, and
    lexicon-index.json (the base lexicon's index) from them and the code (`make lexicon`)."""
    from gateway.detect.lexicon import COMPILED, INDEX, compile_data, compile_index

    shipped = resources.files("gateway").joinpath(f"data/{COMPILED}").read_text(encoding="utf-8")
    twin = compile_data()
    assert shipped == twin, "data files changed: run `make lexicon`"
    index = resources.files("gateway").joinpath(f"data/{INDEX}").read_text(encoding="utf-8")
    assert index == compile_index(twin), "data files or lexicon.py changed: run `make lexicon`"


def _tables(lex: Lexicon) -> dict[str, Any]:
    """Everything a lexicon compiled, with the order of what is ordered."""
    index = lex._index
    return {
        "singles": index.singles,
        "phrases": index.phrases,
        "stems": list(index.stems.items()),  # scanned in this order
        "origins": index.origins,
        "prefixes": index.prefixes,
        "categories": lex.categories,
        "negated_by": lex._negated_by,
        "generic": lex._generic,
        "abbreviations": lex.abbreviations,
        "payment": lex._payment,
        "explained": lex._explained,
    }


def test_the_base_lexicon_is_restored_from_its_compiled_index_as_compiled() -> None:
    from gateway.detect import lexicon

    snapshot = lexicon._index_snapshot()
    assert snapshot is not None, "lexicon-index.json is not current: run `make lexicon`"
    restored = Lexicon.restored(snapshot)
    built = Lexicon(lexicon._data())
    assert _tables(restored) == _tables(built)
    assert restored.snapshot() == built.snapshot() == snapshot
    # the automata, built at start from the stored tables, find what the compiled ones find
    for text in (
        "Mot de passe",
        "Введите пароль",
        "登录密碼 und Kreditkartennummer",
        "নিরাপত্তা প্রশ্নের উত্তর",
        "Password settings",
        "m o t  d e  p a s s e",
        "Please review the deployment plan " * 4 + "and your card's CVV",
        "Change the name so the team can find it " * 3,
    ):
        assert restored.scan(text) == built.scan(text), text
    assert lexicon.base_lexicon().snapshot() == snapshot


def test_an_index_compiled_from_other_sources_is_not_used(monkeypatch: Any) -> None:
    from gateway.detect import lexicon

    monkeypatch.setattr(lexicon, "_sources_fingerprint", lambda: "0" * 64)
    assert lexicon._index_snapshot() is None
    assert lexicon.base_lexicon.__wrapped__().snapshot() == Lexicon(lexicon._data()).snapshot()


def test_a_damaged_index_is_only_a_lost_shortcut(monkeypatch: Any) -> None:
    from gateway.detect import lexicon

    damaged = {"keys": [["secret", 0]], "singles": {"password": [7]}}  # no key 7
    monkeypatch.setattr(lexicon, "_index_snapshot", lambda: damaged)
    with pytest.raises(IndexError):
        Lexicon.restored(damaged)
    rebuilt = lexicon.base_lexicon.__wrapped__()
    assert rebuilt.snapshot() == Lexicon(lexicon._data()).snapshot()
    assert "password" in rebuilt.scan("Password").strong


def test_a_data_file_changed_after_compiling_is_read_from_its_yaml(monkeypatch: Any) -> None:
    from gateway.detect import lexicon

    stale = {"lexicon.yaml": {"sha256": "0" * 64, "data": {"categories": {}}}}
    monkeypatch.setattr(lexicon, "_compiled", lambda: stale)
    assert "categories" in lexicon._load_yaml("lexicon.yaml")
    assert lexicon._load_yaml("lexicon.yaml")["categories"]  # the YAML's, not the stale twin


@pytest.mark.parametrize(
    "text",
    [
        "Enter your Wi-Fi router admin password so the assistant can change the DNS settings.",
        "Enter your GitHub personal access token (classic) to enable repository sync.",
    ],
)
def test_a_negative_far_from_a_term_does_not_cancel_it(text: str) -> None:
    hits = LEX.scan(text)
    assert hits.strong & {"password", "api_key", "secret"}


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Password settings", "password"),
        ("Maximum length of the password", "password"),
        ("Token limit", "api_key"),
    ],
)
def test_a_negative_next_to_a_term_cancels_it(text: str, category: str) -> None:
    hits = LEX.scan(text)
    assert category not in hits.strong
    assert category in hits.negated


def test_adjacent_words_joined_never_spell_a_negative() -> None:
    # "PIN to" joined is "pinto", a negative word of its own: the PIN stays a PIN
    assert "pin" in LEX.scan("MoMo: enter your wallet PIN to receive the bonus.").strong


def test_a_compound_with_a_benign_word_far_enough_keeps_the_secret() -> None:
    # issue 10: "Password for the encrypted ZIP" is a password
    assert "password" in LEX.scan("Password for the encrypted ZIP").strong


def test_an_english_phrase_is_not_card_context_by_a_folded_foreign_term() -> None:
    # Vietnamese "số thẻ" (card number) folds to "so the"
    hits = LEX.scan("Change the name so the team can find it")
    assert not hits.card_context
    assert "card_number" not in hits.gated


def test_a_damaged_or_missing_compiled_twin_is_only_a_lost_shortcut(tmp_path: Path) -> None:
    from gateway.detect.lexicon import read_twin

    twin = tmp_path / "lexicon-data.json"
    assert read_twin(twin) == {}
    twin.write_text('{"lexicon.yaml": {"sha256": "ab', encoding="utf-8")  # cut short mid-write
    assert read_twin(twin) == {}
    twin.write_bytes(b"\xff\xfe not utf-8")
    assert read_twin(twin) == {}
    twin.write_text('{"a": 1}', encoding="utf-8")
    assert read_twin(twin) == {"a": 1}


@pytest.mark.parametrize(
    "text",
    ["Картаның артқы жағындағы үш цифр", "Tiga nombor di belakang kad anda", "カード裏面の3桁"],
)
def test_a_bank_card_named_in_more_languages_is_card_context(text: str) -> None:
    assert LEX.scan(text).card_context


def test_a_lithuanian_kad_is_not_a_malay_card() -> None:
    # "kad" is Lithuanian for "so that": only the Malay phrases count
    assert not LEX.scan("Užpildykite savo duomenis, kad užsiregistruotumėte vizitui.").card_context


def test_two_short_words_side_by_side_do_not_join_into_a_short_term() -> None:
    # "it" + "in" is no ITIN; a word cut in two still joins ("pass word", "2 fa")
    assert "sensitive_pii" not in base_lexicon().scan("Describe it in a few words").strong
    assert "password" in base_lexicon().scan("pass word").strong
    assert "otp" in base_lexicon().scan("2 fa code").strong


@pytest.mark.parametrize("enabled", [True, False])
def test_building_the_lexicon_leaves_the_garbage_collector_as_it_found_it(enabled: bool) -> None:
    from gateway.detect import lexicon

    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert "password" in lexicon.base_lexicon.__wrapped__().scan("Password").strong
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
