"""Personal data that only a URL's context reveals (``gateway.detect.url_pii``), and how the URL
analyser applies it to opaque names, encodings, bare fragments and path segments."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest

from gateway.detect.config import Limits, UrlConfig
from gateway.detect.findings import Reason
from gateway.detect.url_pii import bare_national_id, names_an_id, national_id, url_pii_kinds
from gateway.detect.urls import analyze_url

THAI_ID = "1711471049746"
CPF = "45298415377"
BSN = "265370565"
NRIC = "T6108567F"
HETU = "020381-2345"


def reasons(url: str, context: str = "") -> set[Reason]:
    return {f.reason for f in analyze_url(url, "$.url", UrlConfig(), Limits(), context=context)}


def b64(text: str, *, urlsafe: bool = False, pad: bool = True) -> str:
    raw = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(text.encode())
    out = raw.decode()
    return out if pad else out.rstrip("=")


# ---------------------------------------------------------------- url_pii_kinds


@pytest.mark.parametrize("key", ["thai_id", "national-id", "user_cpf", "NIK"])
def test_identity_keys_with_separators(key: str) -> None:
    value = THAI_ID if "thai" in key or "national" in key else CPF
    if key == "NIK":
        value = "3174094509870003"
    assert "national-id" in url_pii_kinds([(key.casefold(), value)])


@pytest.mark.parametrize(
    ("key", "value"),
    [("mobile", "+4915123456"), ("phone_number", "0612345678"), ("customer_tel", "+61 412 345")],
)
def test_phone_keys_need_only_a_phone_shaped_value(key: str, value: str) -> None:
    assert "phone" in url_pii_kinds([(key, value)])


@pytest.mark.parametrize(("key", "value"), [("mobile", "ios"), ("phone", "yes"), ("tel", "12")])
def test_phone_keys_with_other_values(key: str, value: str) -> None:
    assert "phone" not in url_pii_kinds([(key, value)])


def test_name_and_address_under_opaque_keys() -> None:
    pairs = [("x", "Marta Oliveira"), ("y", "27 Calle Mayor, 28013 Madrid"), ("step", "3")]
    assert "name-address" in url_pii_kinds(pairs)


@pytest.mark.parametrize(
    "pairs",
    [
        [("city", "San Sebastian"), ("addr", "27 Calle Mayor")],  # a place, not a person
        [("q", "Pizza Napoli"), ("addr", "27 Calle Mayor")],  # a search
        [("x", "Marta Oliveira"), ("y", "room 4")],  # no street address
    ],
)
def test_name_address_needs_a_person_and_a_street(pairs: list[tuple[str, str]]) -> None:
    assert "name-address" not in url_pii_kinds(pairs)


@pytest.mark.parametrize("date", ["19710215", "1971-02-15", "15.02.1971"])
def test_old_date_next_to_a_name_is_a_date_of_birth(date: str) -> None:
    assert "date-of-birth" in url_pii_kinds([("name", "Ali Kaya"), ("b", date)])


@pytest.mark.parametrize(
    "pairs",
    [
        [("name", "Ali Kaya"), ("checkin", "19710215")],  # an event key
        [("name", "Ali Kaya"), ("b", "20300215")],  # a future date is a booking, not a birth
        [("b", "19710215")],  # a date alone
    ],
)
def test_dates_that_are_not_births(pairs: list[tuple[str, str]]) -> None:
    assert "date-of-birth" not in url_pii_kinds(pairs)


def test_bare_national_ids() -> None:
    assert bare_national_id(NRIC, weak=False)  # a letter format with a check letter: always
    assert bare_national_id(HETU, weak=False)
    assert not bare_national_id(BSN, weak=False)  # digits alone: only with context
    assert bare_national_id(BSN, weak=True)
    assert not bare_national_id("123456789", weak=True)  # checksum fails


def test_names_an_id_in_many_languages() -> None:
    assert names_an_id("Please verify your identity")
    assert names_an_id("Sahkan identiti anda")
    assert names_an_id("กรุณายืนยันตัวตน")
    assert not names_an_id("Open this page to continue")


# ---------------------------------------------------------------- in the URL analyser


@pytest.mark.parametrize(
    "url",
    [
        f"https://app.example.com/a?d={b64(HETU, pad=False)}",  # unpadded base64 of an ID
        f"https://app.example.com/a?z={b64('512-38-4471', urlsafe=True)}",  # an SSN, base64url
        "https://app.example.com/a?v=" + b64(json.dumps({"cpf": CPF})),  # JSON holding an ID
        f"https://app.example.com/a?t={b64(CPF)}",  # digits in base64 under a "benign" key
    ],
)
def test_encoded_identity_numbers_under_opaque_keys(url: str) -> None:
    found = reasons(url)
    assert Reason.PII_IN_URL in found
    assert Reason.ENCODED_PAYLOAD in found


def test_percent_encoded_digits_under_an_identity_key() -> None:
    encoded = "".join(f"%{ord(c):02X}" for c in THAI_ID)
    assert Reason.PII_IN_URL in reasons(f"https://hr.example.com/on?thai_id={encoded}")
    phone = "".join(f"%{ord(c):02X}" for c in "+4915123456")
    assert Reason.PII_IN_URL in reasons(f"https://hr.example.com/on?mobile={phone}")


@pytest.mark.parametrize("fragment", [NRIC, BSN, quote(HETU)])
def test_identity_number_as_the_whole_fragment(fragment: str) -> None:
    assert Reason.PII_IN_URL in reasons(f"https://events.example.com/register#{fragment}")


@pytest.mark.parametrize("fragment", ["section-2", "123456789", "L120-L140", "2024"])
def test_ordinary_fragments(fragment: str) -> None:
    assert Reason.PII_IN_URL not in reasons(f"https://docs.example.com/page#{fragment}")


def test_identity_number_in_a_path_needs_context() -> None:
    url = f"https://portal.example.com/applicant/{BSN}/details"
    assert Reason.PII_IN_URL in reasons(url, context="Verify your identity to continue.")
    assert Reason.PII_IN_URL not in reasons(url, context="Open your order page.")
    assert Reason.PII_IN_URL in reasons(f"https://portal.example.com/u/{NRIC}/x")


@pytest.mark.parametrize(
    "url",
    [
        "https://shop.example.com/orders/45298415377",  # a CPF-valid number as an order id
        "https://tickets.example.com/e/summit-tickets-475365790823",
        "https://jobs.example.com/view/3543224967",
    ],
)
def test_long_numeric_ids_in_paths_alone_are_not_pii(url: str) -> None:
    assert Reason.PII_IN_URL not in reasons(url, context="Open this page to continue.")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("teudat_zehut", "831437033"),  # Israel
        ("rodne_cislo", "645526/1120"),  # Czechia / Slovakia
        ("nif", "243340176"),  # Portugal
        ("iin", "651228327356"),  # Kazakhstan
        ("r", "741117-1494"),  # Sweden, under a short opaque key
        ("mynumber", "527487588413"),  # Japan
        ("said", "9810049334082"),  # South Africa
    ],
)
def test_more_national_ids_by_checksum(key: str, value: str) -> None:
    assert national_id(key, value)


def test_a_bare_check_digit_format_needs_a_key_naming_it() -> None:
    # 123456789 passes Portugal's NIF check: only under a key that names an identity number
    assert national_id("nif", "123456789")
    assert not national_id("_bare", "123456789", weak=True)
    assert not national_id("nif", "243340177")  # wrong check digit


def test_a_name_next_to_a_cyrillic_street_address_is_name_and_address() -> None:
    pairs = [("a", "Olena Kovalenko"), ("b", "вул. Хрещатик 22, кв. 8"), ("c", "01001 Київ")]
    assert url_pii_kinds(pairs) == {"name-address"}
    assert url_pii_kinds([("a", "Olena Kovalenko"), ("b", "Хрещатик")]) == set()


@pytest.mark.parametrize(
    "message",
    [
        "Жалғастыру алдында жеке басыңызды растауымыз керек.",  # kk: confirm your identity
        "Kudingeka siqinisekise ubuwena ngaphambi kokuqhubeka.",  # zu
        "Devam etmeden önce kimliğinizi doğrulamamız gerekiyor.",  # tr, inflected
    ],
)
def test_inflected_words_for_identity_make_an_identity_context(message: str) -> None:
    assert names_an_id(message)


@pytest.mark.parametrize(
    ("pairs", "kind"),
    [
        ([("geb_datum", "1979-03-08")], "date-of-birth"),  # the key's parts joined
        ([("ngay_sinh", "02-09-1995")], "date-of-birth"),
        ([("tarehe_ya_kuzaliwa", "01-Jun-1993")], "date-of-birth"),  # a named month
        ([("seinengappi", "21031992")], "date-of-birth"),  # day, month, year run together
        ([("num_passeport", "18AF42817")], "passport"),  # one part of the key names it
        ([("pasaport_no", "U09876543")], "passport"),
        ([("movil", "612 345 678")], "phone"),
    ],
)
def test_personal_data_under_keys_in_more_languages(
    pairs: list[tuple[str, str]], kind: str
) -> None:
    assert kind in url_pii_kinds(pairs)


@pytest.mark.parametrize(
    "pairs",
    [
        [("geb_datum", "31-Foo-1990")],  # no month
        [("seinengappi", "99999999")],  # not a date
        [("num_passeport", "page")],  # no number
        [("start_date", "21031992")],  # an event's date
    ],
)
def test_those_keys_with_other_values_are_not_personal_data(pairs: list[tuple[str, str]]) -> None:
    assert url_pii_kinds(pairs) == set()


@pytest.mark.parametrize(
    "pairs",
    [
        [("a", "Tereza Nováková"), ("b", "Vinohradská 1234/56"), ("c", "120 00 Praha 2")],
        [("a", "佐藤 美咲"), ("b", "東京都世田谷区北沢2-10-15")],
    ],
)
def test_names_and_addresses_written_the_central_european_and_japanese_way(
    pairs: list[tuple[str, str]],
) -> None:
    assert "name-address" in url_pii_kinds(pairs)


def test_a_title_and_a_numbered_chapter_are_no_address() -> None:
    assert url_pii_kinds([("author", "Jane Austen"), ("part", "Volume 2")]) == set()
