"""Offline PII validators for URL parts and other short values.

``find_pii(text)`` reports which *kinds* of PII a string contains — never where or what — from
{"email", "phone", "ssn", "card", "iban", "national-id"}. Every kind is checked structurally, not
just by shape, to keep false positives on ids and timestamps low:

* card: 13–19 digits (single spaces or dashes allowed) with a known issuer prefix and a valid Luhn
  checksum; all-same-digit numbers are ignored.
* iban: country code from the ISO 13616 length table and the ISO 7064 mod-97 checksum.
* ssn: US ``AAA-GG-SSSS`` with one consistent delimiter (space or dash); Presidio-style
  invalidation (area 000/666/9xx, group 00, serial 0000, one repeated digit, well-known sample
  numbers). Nine bare digits are not reported: too many ids look like that.
* email: a conservative address whose domain ends in a public suffix (bundled PSL, no network).
* phone: E.164 (``+`` and 8–15 digits, separators allowed) accepted by
  ``phonenumbers.is_possible_number``, or the North-American ``(415) 555-0132`` / ``415-555-0132``
  shape with separators. Plain digit runs, dates and SSN shapes are not phones.
* national-id: Spanish DNI/NIE (check letter), Brazilian CPF (formatted, two check digits), Chinese
  resident ID (birth date + ISO 7064 mod 11-2), UK NINO (shape and prefix rules).

Validators follow the ideas of Microsoft Presidio's recognizers (MIT); the code is written fresh.
All patterns are linear (bounded repetitions, no nested unbounded quantifiers).
"""

from __future__ import annotations

import re
from typing import Final

import phonenumbers
import re2

from gateway.detect.findings import Evidence
from gateway.detect.hosts import registrable_domain

PII_KINDS: Final = ("email", "phone", "ssn", "card", "iban", "national-id")
# What recognised each kind (of this module and of gateway.detect.url_pii), for explanations.
_PII_EVIDENCE: Final = {
    "email": ("email", "address+registrable-domain"),
    "phone": ("phone", "phone-number"),
    "ssn": ("ssn", "ssn-format"),
    "card": ("card-number", "luhn+card-prefix"),
    "iban": ("iban", "iban-checksum"),
    "national-id": ("national-id", "id-checksum"),
    "date-of-birth": ("date-of-birth", "key+date"),
    "passport": ("passport", "key+passport-format"),
    "name-address": ("name-address", "name+street-address"),
}


def pii_evidence(kind: str, where: str | None = None) -> Evidence:
    """Evidence for one PII kind (``card`` → concept ``card-number``, signal ``luhn+card-prefix``);
    ``where`` (``query``, ``path``…) is added to the signal."""
    concept, signal = _PII_EVIDENCE.get(kind, (kind, "pattern"))
    return Evidence(concept, f"{where}:{signal}" if where else signal)


# ISO 13616 IBAN lengths per country (SWIFT IBAN registry).
_IBAN_LENGTHS: Final[dict[str, int]] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27,
    "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27,
    "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32,
    "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
    "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31,
    "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28, "TL": 23,
    "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}  # fmt: skip

# Issuer prefixes (IIN ranges) of the major card networks, as (low, high, prefix length).
_CARD_PREFIXES: Final = (
    (4, 4, 1),  # Visa
    (51, 55, 2),  # Mastercard
    (2221, 2720, 4),  # Mastercard 2-series
    (34, 34, 2),  # American Express
    (37, 37, 2),
    (300, 305, 3),  # Diners Club
    (36, 36, 2),
    (38, 39, 2),
    (6011, 6011, 4),  # Discover
    (644, 649, 3),
    (65, 65, 2),
    (3528, 3589, 4),  # JCB
    (62, 62, 2),  # UnionPay
    (50, 50, 2),  # Maestro
    (56, 69, 2),
)

_SSN_SAMPLES: Final = frozenset({"078051120", "219099999", "457555462", "123456789"})
_DNI_LETTERS: Final = "TRWAGMYFPDXBNJZSQVHLCKE"
_NINO_BAD_PREFIXES: Final = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})

_B = r"(?<![A-Za-z0-9])"  # left boundary: not inside an alphanumeric token
_E = r"(?![A-Za-z0-9])"  # right boundary
# A run of digits and phone/card separators; greedy with nothing after it, so it never backtracks.
_NUMBER_SPAN = re.compile(_B + r"\+?\(?[0-9][0-9 ().\-/]*")
_EMAIL_AT = re.compile(r"@")
_ANY_DIGIT = re.compile(r"[0-9]")
_MIN_CANDIDATE = 8  # shorter than any phone, SSN, card or formatted national id
_MAX_CANDIDATE = 64  # longer than any of them with separators
# Distinct grouped-card candidates examined inside one long run. Callers cap text sizes far below
# this (Limits.max_string / max_url_length); the cap only bounds time on hostile megabytes.
_MAX_GROUPED = 4096
# Grouped card numbers (4-4-4-4, Amex 4-6-5) anywhere in a long run, overlapping (lookahead).
_GROUPED_CARD = re.compile(
    r"(?<![0-9])(?=([0-9]{4}(?:[ \-][0-9]{4}){3}|[0-9]{4}[ \-][0-9]{6}[ \-][0-9]{5})(?![0-9]))"
)
_EMAIL_LOCAL_CHARS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-"
)
_EMAIL_DOMAIN = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24}"
)
_IBAN = re.compile(_B + r"[A-Za-z]{2}[0-9]{2}(?: ?[A-Za-z0-9]){11,32}")
_SSN = re.compile(r"([0-9]{3})([ \-])([0-9]{2})\2([0-9]{4})")
_NANP = re.compile(r"\(?[2-9][0-9]{2}\)?[ .\-]?[2-9][0-9]{2}[ .\-][0-9]{4}")
_CPF = re.compile(r"[0-9]{3}\.[0-9]{3}\.[0-9]{3}-[0-9]{2}")
_DNI = re.compile(_B + r"([XYZ]?)([0-9]{7,8})-?([A-Z])" + _E)
_CN_ID = re.compile(_B + r"[1-9][0-9]{16}[0-9Xx]" + _E)
_NINO = re.compile(
    _B + r"([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]) ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]" + _E
)

# Long texts: RE2 rules out each family in one linear pass, far faster than Python ``re`` with
# a look-behind tried at every position. Each hint is a necessary condition of its finder:
# a number span of _MIN_CANDIDATE characters or more (it starts with "+", "(" or a digit and
# ends with a digit), and each pattern above without its boundaries.
_HINT_MIN_LEN = 512
_HINT_NUMBER = re2.compile(r"[+(0-9][0-9 ().\-/+]{" + str(_MIN_CANDIDATE - 2) + r",}[0-9]")
_HINT_IBAN = re2.compile(r"[A-Za-z]{2}[0-9]{2}(?: ?[A-Za-z0-9]){11}")
_HINT_NATIONAL = re2.compile(
    r"[0-9]{7,8}-?[A-Z]|[1-9][0-9]{16}[0-9Xx]"
    r"|[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]"
)


def _may_hold(hint: re2._Regexp, text: str) -> bool:
    """False only when ``hint`` surely does not occur (short texts: always True)."""
    if len(text) < _HINT_MIN_LEN:
        return True
    try:
        return hint.search(text) is not None
    except UnicodeEncodeError:  # lone surrogates: RE2 cannot read them, the finder can
        return True


def luhn_ok(digits: str) -> bool:
    """Luhn (mod 10) checksum of a string of ASCII digits (separators are not allowed)."""
    if not digits.isascii() or not digits.isdigit():
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def iban_ok(s: str) -> bool:
    """True for a syntactically valid IBAN (spaces allowed): known country, length, mod-97 == 1."""
    compact = s.replace(" ", "").upper()
    if not compact.isascii() or not compact.isalnum() or len(compact) < 15:
        return False
    country = compact[:2]
    if _IBAN_LENGTHS.get(country) != len(compact) or not compact[2:4].isdigit():
        return False
    if not country.isalpha():
        return False
    rearranged = compact[4:] + compact[:4]
    remainder = 0
    for ch in rearranged:  # digits stay, letters become 10..35; computed piecewise, no big ints
        chunk = ch if ch.isdigit() else str(ord(ch) - 55)
        remainder = int(str(remainder) + chunk) % 97
    return remainder == 1


def _card_prefix_ok(digits: str) -> bool:
    return any(lo <= int(digits[:n]) <= hi for lo, hi, n in _CARD_PREFIXES)


def _is_card(span: str) -> bool:
    if any(c not in "0123456789 -" for c in span) or "  " in span or "--" in span:
        return False
    digits = span.replace(" ", "").replace("-", "")
    if not 13 <= len(digits) <= 19 or len(set(digits)) == 1:
        return False
    return _card_prefix_ok(digits) and luhn_ok(digits)


def _is_ssn(span: str) -> bool:
    m = _SSN.fullmatch(span)
    if m is None:
        return False
    area, group, serial = m.group(1), m.group(3), m.group(4)
    digits = area + group + serial
    if area in {"000", "666"} or area[0] == "9" or group == "00" or serial == "0000":
        return False
    return len(set(digits)) > 1 and digits not in _SSN_SAMPLES


def _is_phone(span: str) -> bool:
    digits = "".join(c for c in span if c.isdigit())
    if span.startswith("+"):
        if not 8 <= len(digits) <= 15:
            return False
        try:
            number = phonenumbers.parse(span, None)
        except phonenumbers.NumberParseException:
            return False
        return bool(phonenumbers.is_possible_number(number))
    if _NANP.fullmatch(span) is None:
        return False
    try:
        number = phonenumbers.parse(span, "US")
    except phonenumbers.NumberParseException:
        return False
    return bool(phonenumbers.is_possible_number(number))


def _cpf_ok(span: str) -> bool:
    d = [int(c) for c in span if c.isdigit()]
    if len(set(d)) == 1:
        return False
    for n in (9, 10):
        s = sum(d[i] * (n + 1 - i) for i in range(n))
        if (s * 10 % 11) % 10 != d[n]:
            return False
    return True


def _cn_id_ok(s: str) -> bool:
    month, day = int(s[10:12]), int(s[12:14])
    if s[6:8] not in {"19", "20"} or not 1 <= month <= 12 or not 1 <= day <= 31:
        return False
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    total = sum(int(c) * w for c, w in zip(s[:17], weights, strict=True))
    return "10X98765432"[total % 11] == s[17].upper()


def _number_spans(text: str) -> list[str]:
    """Digit runs with separators, trimmed; a run glued to a letter is part of an id, not PII."""
    out: list[str] = []
    for m in _NUMBER_SPAN.finditer(text):
        span = m.group().rstrip(" ().-/")
        end = m.start() + len(span)
        if end < len(text) and text[end].isascii() and text[end].isalpha():
            continue
        if span.startswith("(") and ")" not in span:
            span = span[1:]
        out.append(span)
    return out


def _classify_number(span: str, found: set[str]) -> None:
    if _is_card(span):
        found.add("card")
    elif _is_ssn(span):
        found.add("ssn")
    elif _CPF.fullmatch(span) and _cpf_ok(span):
        found.add("national-id")
    elif _is_phone(span):
        found.add("phone")


def _find_numbers(text: str, found: set[str]) -> None:
    for span in _number_spans(text):
        if len(span) < _MIN_CANDIDATE:
            continue
        if len(span) <= _MAX_CANDIDATE:
            before = len(found)
            _classify_number(span, found)
            if len(found) > before or " " not in span:
                continue
        else:  # a long run: grouped card numbers inside it, then its space-separated pieces
            seen: set[str] = set()
            for m in _GROUPED_CARD.finditer(span):
                if len(seen) >= _MAX_GROUPED or "card" in found:
                    break
                if m.group(1) not in seen and _is_card(m.group(1)):
                    found.add("card")
                seen.add(m.group(1))
        for piece in set(span.split()):
            if _MIN_CANDIDATE <= len(piece) <= _MAX_CANDIDATE:
                _classify_number(piece, found)


def _find_emails(text: str, found: set[str]) -> None:
    for m in _EMAIL_AT.finditer(text):
        at = m.start()
        start = at
        while start > at - 64 and start > 0 and text[start - 1] in _EMAIL_LOCAL_CHARS:
            start -= 1
        domain = _EMAIL_DOMAIN.match(text, at + 1, min(len(text), at + 256))
        if start == at or domain is None:
            continue
        name = text[start:at].lstrip(".")
        if not name or name.endswith(".") or ".." in name:
            continue
        if registrable_domain(domain.group().lower()) is not None:
            found.add("email")
            return


def _find_ibans(text: str, found: set[str]) -> None:
    for m in _IBAN.finditer(text):
        compact = m.group().replace(" ", "").upper()
        length = _IBAN_LENGTHS.get(compact[:2])
        if length is not None and iban_ok(compact[:length]):
            found.add("iban")
            return


def _find_national_ids(text: str, found: set[str]) -> None:
    for m in _DNI.finditer(text):
        prefix, number, letter = m.group(1), m.group(2), m.group(3)
        if prefix:
            if len(number) != 7:
                continue
            number = str("XYZ".index(prefix)) + number
        elif len(number) != 8:
            continue
        if _DNI_LETTERS[int(number) % 23] == letter:
            found.add("national-id")
            return
    for m in _CN_ID.finditer(text):
        if _cn_id_ok(m.group()):
            found.add("national-id")
            return
    for m in _NINO.finditer(text):
        if m.group(1) not in _NINO_BAD_PREFIXES:
            found.add("national-id")
            return


def find_pii(text: str) -> list[str]:
    """Kinds of PII found in ``text`` (unique, in ``PII_KINDS`` order). Linear in ``len(text)``."""
    found: set[str] = set()
    if "@" in text:
        _find_emails(text, found)
    if _ANY_DIGIT.search(text) is not None:
        if _may_hold(_HINT_NUMBER, text):
            _find_numbers(text, found)
        if _may_hold(_HINT_IBAN, text):
            _find_ibans(text, found)
        if _may_hold(_HINT_NATIONAL, text):
            _find_national_ids(text, found)
    return [kind for kind in PII_KINDS if kind in found]
