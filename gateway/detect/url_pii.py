"""Personal data that only a URL's context reveals (the generic finder, ``gateway.detect.pii``,
looks at values alone): dates of birth and passport numbers by their parameter name, a name next
to a street address, and national identity numbers under any (opaque) parameter name, accepted
only when their checksum or built-in date holds.

``url_pii_kinds(pairs)`` takes decoded ``(key, value)`` pairs of one URL part (query, fragment or a
JSON object found in a value) and returns the kinds found, from {"date-of-birth", "passport",
"name-address", "national-id"} — never where or what. Plain string operations and bounded ``re``
patterns without nested quantifiers: linear time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

import re2

_DOB_KEYS: Final = frozenset(
    {"dob", "birth", "birthdate", "birth_date", "birthday", "date_of_birth", "dateofbirth",
     "bdate", "bday", "born", "geb", "gebdat", "gebdatum", "geburtsdatum", "geburtstag",
     "nacimiento", "fecha_nacimiento", "fechanacimiento", "fnac", "naissance",
     "date_naissance", "datenaissance", "ddn", "nascimento", "data_nascimento", "dtnasc",
     "nascita", "data_nascita", "datanascita", "urodzenia", "data_urodzenia", "dr", "dn",
     "rojdenie", "data_rozhdeniya", "dogum", "dogum_tarihi", "syntymaaika", "fodselsdato",
     "fodelsedatum", "geboortedatum", "gebdate", "tgl_lahir", "tanggal_lahir", "ngaysinh",
     "seinen", "birthymd", "birth_ymd", "dt_nasc", "d_o_b",
     # the word for "birth" / "date of birth" in more languages, as keys write it (ASCII)
     "nascimiento", "fdn", "fodelsedag", "fodselsdag", "syntymapaiva", "narozeni",
     "datum_narozeni", "narodenia", "datum_narodenia", "szuletesi", "szuletesi_datum",
     "szulido", "szuletesnap", "nasterii", "data_nasterii", "nastere", "rozhdeniya",
     "narodzhennia", "narodzhennya", "data_narodzhennia", "razhdane", "data_razhdane",
     "gennisis", "imerominia_gennisis", "lahir", "tarikh_lahir", "ngay_sinh", "kapanganakan",
     "petsa_ng_kapanganakan", "kaarawan", "kuzaliwa", "tarehe_ya_kuzaliwa", "seinengappi",
     "seinen_gappi", "tanjobi", "saengil", "saengnyeonwolil", "chusheng", "chusheng_riqi",
     "shengri", "janm_tithi", "janmtithi", "tarikh_milad", "milad", "taarich_leida", "leida",
     "tavallod", "tarikh_tavallod", "dogumtarihi", "dogum_gunu", "rodjenja", "datum_rodjenja",
     "rojstva", "datum_rojstva", "gimimo", "dzimsanas", "synnipaev", "fecha_nac", "nac"}
)  # fmt: skip
_PASSPORT_KEYS: Final = frozenset(
    {"passport", "passport_no", "passport_number", "passportno", "passportnumber", "pp", "ppn",
     "pass_no", "passno", "pasaporte", "passeport", "reisepass", "passaporto", "paszport",
     "pasport", "paspoort", "passaporte", "pasaport", "hochieu", "ryoken", "huzhao",
     "travel_document", "traveldoc", "doc_no", "document_number",
     # more languages (ASCII, as keys write them)
     "zagranpasport", "zagran", "cestovni_pas", "utlevel", "diavatirio", "ho_chieu", "paspor",
     "yeogwon", "darkon", "gozarnameh", "jawaz", "jawaz_safar", "pasipoti", "passi", "passin"}
)  # fmt: skip
# Keys that hold a document's number when another value names the document.
_NUMBER_KEYS: Final = frozenset({"number", "no", "num", "nr", "id", "value", "doc_number"})
_NAME_KEYS: Final = frozenset(
    {"n", "name", "fullname", "full_name", "nm", "customer", "recipient", "nombre", "nom",
     "name_full", "vorname", "nachname", "imie", "nazwisko", "nome", "first_name", "firstname",
     "last_name", "lastname", "surname", "fio", "ad", "adsoyad", "holder", "cardholder",
     "contact", "who", "person", "patient", "empfaenger", "destinatario", "destinataire"}
)  # fmt: skip
_ADDRESS_KEYS: Final = frozenset(
    {"a", "addr", "address", "street", "adresse", "direccion", "endereco", "strasse", "indirizzo",
     "adres", "ulica", "adr", "address1", "address_line1", "line1", "shipping_address",
     "billing_address", "home", "domicilio", "anschrift", "alamat", "diachi", "jusho"}
)  # fmt: skip
_BENIGN_ID_KEYS: Final = frozenset(
    {"tracking", "tracking_id", "tracking-id", "trackingid", "order", "order_id", "orderid",
     "invoice", "invoice_id", "ref", "reference", "page", "limit", "offset", "ts", "timestamp",
     "time", "amount", "price", "qty", "count", "month", "year", "zip", "postcode", "plz",
     "version", "build", "ver", "v", "cursor", "since", "until", "start", "end", "from", "to",
     "client_id", "app_id", "appid", "pid", "gid", "cat", "category", "product", "sku", "item",
     "phone", "tel", "mobile", "lat", "lng", "lon", "id", "ids", "pg", "n", "num", "no", "nr",
     "t"}
)  # fmt: skip
_DATE: Final = re.compile(
    r"(?:(19[0-9]{2}|20[0-2][0-9])[-./]?([01]?[0-9])[-./]?([0-3]?[0-9])"
    r"|([0-3]?[0-9])[-./ ]([0-3]?[0-9])[-./ ](19[0-9]{2}|20[0-2][0-9])"
    # 21031992: day, month and year run together (read only under a birth-date key)
    r"|([0-3][0-9])([01][0-9])(19[0-9]{2}|20[0-2][0-9]))"
)
# 01-Jun-1993, 11 Oct 1994: a day, an English month abbreviation and a year
_MONTHS: Final = (
    "jan",
    "feb",
    "mar",
    "apr",
    "may",
    "jun",
    "jul",
    "aug",
    "sep",
    "oct",
    "nov",
    "dec",
)
_NAMED_MONTH_DATE: Final = re.compile(
    r"([0-3]?[0-9])[-./ ]([a-z]{3})[a-z]*\.?[-./ ](19[0-9]{2}|20[0-2][0-9])", re.IGNORECASE
)
_PASSPORT: Final = re.compile(r"[A-Z0-9]{6,10}")
_STREET: Final = re.compile(
    r"(?i)(?:\b(?:ul|al|pl|str|st|rd|ave|av|blvd|calle|rua|via|viale|rue|avenida|carrera|"
    r"jl|jalan|ulitsa|ul\.|cad|sok|sk|mah|straat|vej|gatan|gata|tie|katu|utca|ulice)\b\.?"
    r"|(?:street|straße|strasse|road|avenue|lane|drive|weg|gasse|platz|allee|laan|gracht|"
    r"väg|vägen|gade|veien|tie|katu)\b"
    # Cyrillic, Greek, Arabic, Hebrew, Persian, Devanagari street words and abbreviations
    r"|(?:\b(?:ул|вул|пр|просп|пер|бул|наб|пл|ш)\.)"
    r"|(?:\b(?:улица|вулиця|проспект|переулок|провулок|бульвар|шоссе|οδός|οδος|λεωφόρος)\b)"
    r"|(?:شارع|خیابان|רחוב|שדרות|मार्ग|रोड|सड़क))"
)
_WORD: Final = re.compile(r"[^\W\d_]{2,}")

# ---------------------------------------------------------------- checksums


def _digits(value: str) -> str | None:
    stripped = value.replace(" ", "").replace(".", "").replace("-", "").replace("/", "")
    return stripped if stripped.isdigit() else None


def _weighted(digits: str, weights: Iterable[int]) -> int:
    return sum(int(d) * w for d, w in zip(digits, weights, strict=False))


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _date_ok(dd: int, mm: int) -> bool:
    return 1 <= mm <= 12 and 1 <= dd <= 31


def _cpf(d: str) -> bool:
    if len(d) != 11 or len(set(d)) == 1:
        return False
    for n in (9, 10):
        check = _weighted(d, range(n + 1, 1, -1)) * 10 % 11 % 10
        if check != int(d[n]):
            return False
    return True


def _pesel(d: str) -> bool:
    if len(d) != 11 or not _date_ok(int(d[4:6]), int(d[2:4]) % 20):
        return False
    return (10 - _weighted(d, (1, 3, 7, 9, 1, 3, 7, 9, 1, 3)) % 10) % 10 == int(d[10])


def _tc_kimlik(d: str) -> bool:
    if len(d) != 11 or d[0] == "0":
        return False
    n = [int(c) for c in d]
    d10 = ((n[0] + n[2] + n[4] + n[6] + n[8]) * 7 - (n[1] + n[3] + n[5] + n[7])) % 10
    return d10 == n[9] and sum(n[:10]) % 10 == n[10]


def _fodselsnummer(d: str) -> bool:
    if len(d) != 11 or not _date_ok(int(d[0:2]) % 40, int(d[2:4]) % 40):
        return False
    k1 = 11 - _weighted(d, (3, 7, 6, 1, 8, 9, 4, 5, 2)) % 11
    k2 = 11 - _weighted(d, (5, 4, 3, 2, 7, 6, 5, 4, 3, 2)) % 11
    k1, k2 = k1 % 11, k2 % 11
    return k1 != 10 and k2 != 10 and k1 == int(d[9]) and k2 == int(d[10])


def _isikukood(d: str) -> bool:
    if len(d) != 11 or d[0] not in "123456" or not _date_ok(int(d[5:7]), int(d[3:5])):
        return False
    check = _weighted(d, (1, 2, 3, 4, 5, 6, 7, 8, 9, 1)) % 11
    if check == 10:
        check = _weighted(d, (3, 4, 5, 6, 7, 8, 9, 1, 2, 3)) % 11
        check = 0 if check == 10 else check
    return check == int(d[10])


def _cnp(d: str) -> bool:
    if len(d) != 13 or d[0] not in "12345678" or not _date_ok(int(d[5:7]), int(d[3:5])):
        return False
    check = _weighted(d, (2, 7, 9, 1, 4, 6, 3, 5, 8, 2, 7, 9)) % 11
    return (1 if check == 10 else check) == int(d[12])


def _thai(d: str) -> bool:
    if len(d) != 13 or d[0] in "09":
        return False
    return (11 - _weighted(d, range(13, 1, -1)) % 11) % 10 == int(d[12])


def _egn(d: str) -> bool:
    if len(d) != 10 or not _date_ok(int(d[4:6]), int(d[2:4]) % 20):
        return False
    check = _weighted(d, (2, 4, 8, 5, 10, 9, 7, 3, 6)) % 11
    return (0 if check == 10 else check) == int(d[9])


def _rnokpp(d: str) -> bool:
    if len(d) != 10 or len(set(d)) == 1:
        return False
    return _weighted(d, (-1, 5, 7, 9, 4, 6, 10, 5, 7)) % 11 % 10 == int(d[9])


_VERHOEFF_D: Final = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 0, 6, 7, 8, 9, 5),
    (2, 3, 4, 0, 1, 7, 8, 9, 5, 6), (3, 4, 0, 1, 2, 8, 9, 5, 6, 7),
    (4, 0, 1, 2, 3, 9, 5, 6, 7, 8), (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2), (7, 6, 5, 9, 8, 2, 1, 0, 4, 3),
    (8, 7, 6, 5, 9, 3, 2, 1, 0, 4), (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)  # fmt: skip
_VERHOEFF_P: Final = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 5, 7, 6, 2, 8, 3, 0, 9, 4),
    (5, 8, 0, 3, 7, 9, 6, 1, 4, 2), (8, 9, 1, 6, 0, 4, 3, 5, 2, 7),
    (9, 4, 5, 3, 1, 2, 6, 8, 7, 0), (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5), (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)  # fmt: skip


def _aadhaar(d: str) -> bool:
    if len(d) != 12 or d[0] in "01":
        return False
    c = 0
    for i, ch in enumerate(reversed(d)):
        c = _VERHOEFF_D[c][_VERHOEFF_P[i % 8][int(ch)]]
    return c == 0


def _bsn(d: str) -> bool:
    if len(d) != 9 or d[0] == "0":
        return False
    return _weighted(d, (9, 8, 7, 6, 5, 4, 3, 2, -1)) % 11 == 0


def _israeli(d: str) -> bool:
    if len(d) != 9 or len(set(d)) == 1:
        return False
    total = 0
    for i, ch in enumerate(d):
        v = int(ch) * (1 + i % 2)
        total += v - 9 if v > 9 else v
    return total % 10 == 0


def _sin(d: str) -> bool:
    return len(d) == 9 and d[0] not in "08" and _luhn(d)


def _nir(d: str) -> bool:
    if len(d) != 15 or d[0] not in "12" or not 1 <= int(d[3:5]) <= 12:
        return False
    return 97 - int(d[:13]) % 97 == int(d[13:])


def _nik(d: str) -> bool:
    if len(d) != 16 or not 11 <= int(d[:2]) <= 94:
        return False
    return _date_ok(int(d[6:8]) % 40, int(d[8:10])) and d[12:] != "0000"


def _rrn(value: str) -> bool:
    m = re.fullmatch(r"([0-9]{6})-?([1-8][0-9]{6})", value)
    if m is None:
        return False
    d = m.group(1) + m.group(2)
    if not _date_ok(int(d[4:6]), int(d[2:4])):
        return False
    check = (11 - _weighted(d, (2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5)) % 11) % 10
    return check == int(d[12])


def _hetu(value: str) -> bool:
    m = re.fullmatch(r"([0-9]{6})[-+A-FU-Y]([0-9]{3})([0-9A-Y])", value.upper())
    if m is None or not _date_ok(int(value[0:2]), int(value[2:4])):
        return False
    return "0123456789ABCDEFHJKLMNPRSTUVWXY"[int(m.group(1) + m.group(2)) % 31] == m.group(3)


def _nric(value: str) -> bool:
    m = re.fullmatch(r"([STFG])([0-9]{7})([A-Z])", value.upper())
    if m is None:
        return False
    prefix, digits, letter = m.groups()
    total = _weighted(digits, (2, 7, 6, 5, 4, 3, 2)) + (4 if prefix in "TG" else 0)
    table = "JZIHGFEDCBA" if prefix in "ST" else "XWUTRQPNMLK"
    return table[total % 11] == letter


def _rut(value: str) -> bool:
    m = re.fullmatch(r"([0-9]{1,2}(?:\.?[0-9]{3}){2})-([0-9Kk])", value)
    if m is None:
        return False
    body = m.group(1).replace(".", "")
    total = sum(int(c) * (2 + i % 6) for i, c in enumerate(reversed(body)))
    check = 11 - total % 11
    expected = "0" if check == 11 else "K" if check == 10 else str(check)
    return expected == m.group(2).upper()


def _pt_nif(d: str) -> bool:
    """Portugal's NIF: nine digits, a mod-11 check digit."""
    if len(d) != 9 or d[0] not in "123568 9".replace(" ", ""):
        return False
    check = 11 - _weighted(d, range(9, 1, -1)) % 11
    return (0 if check >= 10 else check) == int(d[8])


def _kz_iin(d: str) -> bool:
    """Kazakhstan's IIN: a birth date (YYMMDD), a century/sex digit, a two-pass mod-11 check."""
    if len(d) != 12 or not _date_ok(int(d[4:6]), int(d[2:4])) or d[6] not in "123456":
        return False
    check = _weighted(d, range(1, 12)) % 11
    if check == 10:
        check = _weighted(d, (3, 4, 5, 6, 7, 8, 9, 10, 11, 1, 2)) % 11
    return check != 10 and check == int(d[11])


def _rodne_cislo(d: str) -> bool:
    """Czech and Slovak birth number: YYMMDD (women's month +50, +20/+70 since 2004), then a
    number divisible by 11 (ten digits)."""
    if len(d) != 10:
        return False
    month = int(d[2:4]) % 50
    month = month - 20 if month > 20 else month
    if not _date_ok(int(d[4:6]), month):
        return False
    return int(d) % 11 == 0 or (int(d[:9]) % 11 == 10 and d[9] == "0")


def _se_personnummer(d: str) -> bool:
    """Sweden's personnummer (ten digits): YYMMDD (day +60 for a coordination number), Luhn."""
    if len(d) != 10:
        return False
    day = int(d[4:6])
    return _date_ok(day - 60 if day > 60 else day, int(d[2:4])) and _luhn(d)


def _za_id(d: str) -> bool:
    """South Africa's ID number: YYMMDD, gender digits, citizenship 0/1, 8 or 9, Luhn."""
    if len(d) != 13 or not _date_ok(int(d[4:6]), int(d[2:4])) or d[10] not in "01":
        return False
    return _luhn(d)


def _my_number(d: str) -> bool:
    """Japan's Individual Number: twelve digits, a mod-11 check digit."""
    if len(d) != 12:
        return False
    body = d[:11][::-1]
    total = sum(int(c) * (i + 2 if i < 6 else i - 4) for i, c in enumerate(body))
    remainder = total % 11
    return (0 if remainder <= 1 else 11 - remainder) == int(d[11])


_BY_LENGTH: Final = {
    9: (_bsn, _israeli, _sin, _pt_nif),
    10: (_egn, _rnokpp, _rodne_cislo, _se_personnummer),
    11: (_cpf, _pesel, _tc_kimlik, _fodselsnummer, _isikukood),
    12: (_aadhaar, _kz_iin, _my_number),
    13: (_cnp, _thai, _za_id),
    15: (_nir,),
    16: (_nik,),
}
# Weak validators (one check digit, or a date without one): a random number passes one in ten, so
# they count only under an identity-number key or a short opaque key (``x``, ``uid``), never under
# a known benign one (``order``, ``id``, ``page``).
# Formats that are nothing but digits and one check digit, with no date or range inside (even
# 123456789 passes Portugal's NIF): read only under a key that names an identity number.
_KEY_ONLY: Final = frozenset({_pt_nif})
_WEAK: Final = frozenset(
    {_bsn, _israeli, _sin, _rnokpp, _aadhaar, _thai, _nik, _pt_nif, _rodne_cislo,
     _se_personnummer, _my_number, _kz_iin}
)  # fmt: skip
_ID_KEYS: Final = frozenset(
    {"nin", "nid", "ssn", "sin", "tz", "bsn", "pesel", "cpf", "nik", "ktp", "aadhaar", "aadhar",
     "uid", "uidai", "egn", "cnp", "nir", "rut", "run", "ik", "hetu", "nric", "fin", "rrn",
     "tckn", "tc", "kimlik", "rnokpp", "inn", "ipn", "nif", "nie", "dni", "curp", "rfc", "cuil",
     "cuit", "personnummer", "pnr", "cpr", "fnr", "nationalid", "national_id", "idno", "id_no",
     "idnumber", "id_number", "citizen_id", "citizenid", "thaiid", "personal_code", "codice",
     "teudat_zehut", "teudat", "zehut", "rodne_cislo", "rodnecislo", "rc", "iin", "mynumber",
     "my_number", "kojin_bango", "said", "sa_id", "id_nr", "personalnummer", "nino"}
)  # fmt: skip


_PHONE_KEYS: Final = frozenset(
    {"phone", "tel", "mobile", "mobil", "msisdn", "cell", "cellphone", "cellular", "celular",
     "handy", "telefon", "telefono", "telefone", "telephone", "phonenumber", "phone_number",
     "mobile_number", "mobilenumber", "mobileno", "phoneno", "mob", "whatsapp", "wa", "sdt",
     "nomor_hp", "nohp", "hp", "contact_number", "numero_telefono", "telefonnummer", "gsm",
     "portable", "cep", "cep_tel",
     # more languages (ASCII, as keys write them)
     "movil", "kinito", "tilefono", "telefonu", "telepon", "nomor_telepon", "dienthoai",
     "dien_thoai", "puhelin", "matkapuhelin", "mobiltelefon", "komorka", "numer_telefonu",
     "handynummer", "simu", "nambari_ya_simu", "denwa", "denwa_bango", "keitai", "jeonhwa",
     "dianhua", "shouji", "hatif", "jawwal", "raqam_hatif", "telefoon", "mobiel", "tlf",
     "mobilnummer", "telefonszam", "mobiltelefonszam", "telefonas", "talrunis", "telefoni"}
)  # fmt: skip
_PHONE_VALUE: Final = re.compile(r"\+?[0-9](?:[ .\-]?[0-9]){6,14}")
# Keys whose value is a place, a title or a search, never a person's name.
_NOT_NAME_KEYS: Final = frozenset(
    {"q", "query", "search", "s", "k", "text", "title", "subject", "city", "town", "region",
     "state", "country", "place", "location", "loc", "dest", "destination", "origin", "from",
     "to", "via", "category", "cat", "tag", "tags", "topic", "product", "item", "company",
     "org", "organization", "team", "event", "venue", "plan", "tier", "lang", "locale", "tz",
     "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "ref", "source",
     "step", "page", "view", "tab", "mode", "type", "sort", "order", "filter", "district",
     "province", "county", "ciudad", "cidade", "stadt", "ville", "citta", "kota"}
)  # fmt: skip
# Keys whose date is an event (a booking, a range, a timestamp), not a birthday.
_EVENT_DATE_KEYS: Final = frozenset(
    {"date", "dt", "d1", "d2", "from", "to", "start", "end", "since", "until", "checkin",
     "checkout", "check_in", "check_out", "arrival", "departure", "ts", "time", "day", "when",
     "created", "updated", "modified", "published", "expires", "exp", "valid", "due", "at",
     "v", "ver", "version", "build", "rev", "release", "period", "month", "year", "week"}
)  # fmt: skip
_LATEST_BIRTH_YEAR: Final = 2012  # a date of birth next to a name: a person old enough to sign up
_KEY_SEPARATORS: Final = re.compile(r"[_\-.\s]+")


def _key_forms(key: str) -> tuple[str, ...]:
    """The key as written and without separators (``thai_id`` → ``thaiid``), plus its parts."""
    parts = tuple(p for p in _KEY_SEPARATORS.split(key) if p)
    return (key, "".join(parts), *parts)


def id_key(key: str) -> bool:
    """A key that names an identity number (``cpf``, ``thai_id``, ``national-id``, ``user_nik``)."""
    return any(form in _ID_KEYS for form in _key_forms(key))


def phone_key(key: str) -> bool:
    """A key that names a phone number (``mobile``, ``phone_number``, ``customer_tel``)."""
    return any(form in _PHONE_KEYS for form in _key_forms(key))


def national_id(key: str, value: str, *, weak: bool | None = None) -> bool:
    """A national identity number (checksum or built-in date valid) in one parameter value.
    ``weak`` forces whether one-check-digit formats count (default: decided by ``key``)."""
    value = value.strip()
    if not 8 <= len(value) <= 20:
        return False
    if _rrn(value) or _hetu(value) or _nric(value) or _rut(value):
        return True
    digits = _digits(value)
    if digits is None:
        return False
    named = id_key(key)
    if key in _BENIGN_ID_KEYS and not named:
        return False  # an order number, a product or page id: never read as a person's number
    weak_ok = (named or len(key) <= 3) if weak is None else weak
    for check in _BY_LENGTH.get(len(digits), ()):
        if check in _WEAK and not weak_ok:
            continue
        if check in _KEY_ONLY and not named:
            continue
        if check(digits):
            return True
    return False


def _is_dob(value: str) -> bool:
    named = _NAMED_MONTH_DATE.fullmatch(value.strip())
    if named is not None:
        month = named.group(2).casefold()
        return month in _MONTHS and _date_ok(int(named.group(1)), _MONTHS.index(month) + 1)
    m = _DATE.fullmatch(value.strip())
    if m is None:
        return False
    if m.group(1):
        return _date_ok(int(m.group(3)), int(m.group(2)))
    if m.group(7):
        return _date_ok(int(m.group(7)), int(m.group(8)))
    first, second = int(m.group(4)), int(m.group(5))
    return _date_ok(first, second) or _date_ok(second, first)  # 17.04.1977 or 04/17/1977 (US)


def _looks_like_name(value: str) -> bool:
    words = _WORD.findall(value)
    return 2 <= len(words) <= 6 and not any(c.isdigit() for c in value)


def _looks_like_address(key: str, value: str) -> bool:
    if len(_CJK_ADDRESS.findall(value)) >= 2 and len(value) >= 6:
        return True  # 東京都世田谷区…, 서울특별시 강남구 …: a prefecture and a ward
    if not any(c.isdigit() for c in value) or not _WORD.search(value):
        return False
    if _HOUSE_NUMBER.fullmatch(value.strip()) is not None:
        return True  # "Vinohradská 1234/56", "12B Rue Nationale"-less: a street and its number
    return key in _ADDRESS_KEYS or _STREET.search(value) is not None


def _looks_like_person(value: str) -> bool:
    """A person's name written as one: 2–4 capitalised words of letters (``Elif Haddad``), or a
    CJK family and given name with a space between (``佐藤 美咲``)."""
    if _CJK_NAME.fullmatch(value.strip()) is not None:
        return True
    words = value.replace("-", " ").replace("'", " ").split()
    return (
        2 <= len(words) <= 4
        and all(w[:1].isupper() and w.isalpha() for w in words)
        and _looks_like_name(value)
    )


# A street name and its two house numbers, as Czech, Slovak and Polish addresses write them
# ("Vinohradská 1234/56", "Marszałkowska 10/12"): no chapter or volume is numbered so.
_HOUSE_NUMBER: Final = re.compile(
    r"[^\W\d_][^\W\d_'\-.]{3,}(?: [^\W\d_][^\W\d_'\-.]+)? [0-9]{1,5}/[0-9]{1,4}[a-zA-Z]?"
)
# Japanese, Chinese and Korean address units (prefecture, city, ward, town, street, number).
_CJK_ADDRESS: Final = re.compile(
    r"[都道府県市区町村郡省路号]|丁目|番地|특별시|광역시|[시구동읍면]\b|로\b|길\b"
)
_CJK_NAME: Final = re.compile(
    r"[\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]{1,3} [\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]{1,3}"
)


def _birth_date(value: str) -> bool:
    """A valid date (``19590604``, ``1959-06-04``, ``04.06.1959``) of a year before
    ``_LATEST_BIRTH_YEAR``."""
    if not _is_dob(value):
        return False
    m = _DATE.fullmatch(value.strip())
    named = _NAMED_MONTH_DATE.fullmatch(value.strip())
    if named is not None:
        year: str | None = named.group(3)
    else:
        year = (m.group(1) or m.group(6) or m.group(9)) if m is not None else None
    return year is not None and int(year) <= _LATEST_BIRTH_YEAR


def url_pii_kinds(pairs: Iterable[tuple[str, str]]) -> set[str]:
    """Kinds of personal data the ``(key, value)`` pairs of one URL part reveal together."""
    found: set[str] = set()
    name = address = person = old_date = False
    document = numbered = False  # {"doc": "passport", "number": "C77H2GRLJ"}
    for raw_key, raw_value in pairs:
        key = raw_key.strip().casefold().removesuffix("[]")
        value = raw_value.strip()
        if not value or len(value) > 256:
            continue
        forms = _key_forms(key)
        if any(form in _DOB_KEYS for form in forms) and _is_dob(value):
            found.add("date-of-birth")
        elif key not in _EVENT_DATE_KEYS and _birth_date(value):
            old_date = True  # a birth date under an opaque key: counts next to a name
        if phone_key(key) and _PHONE_VALUE.fullmatch(value):
            found.add("phone")
        if (
            any(form in _PASSPORT_KEYS for form in forms)
            and _PASSPORT.fullmatch(value.upper())
            and any(c.isdigit() for c in value)
        ):
            found.add("passport")
        if national_id(key, value):
            found.add("national-id")
        document = document or value.casefold() in _PASSPORT_KEYS
        numbered = numbered or (
            key in _NUMBER_KEYS
            and _PASSPORT.fullmatch(value.upper()) is not None
            and any(c.isdigit() for c in value)
            and any(c.isalpha() for c in value)
        )
        name = name or (key in _NAME_KEYS and _looks_like_name(value))
        # a name written as one under an opaque key (a=Jane Doe&b=12 Main Street)
        person = person or (key not in _NOT_NAME_KEYS and _looks_like_person(value))
        address = address or _looks_like_address(key, value)
    if document and numbered:
        found.add("passport")  # the document named as a value, its number beside it
    if (name or person) and address:
        found.add("name-address")
    if name and old_date:
        found.add("date-of-birth")
    return found


_TEXT_NUMBER: Final = re.compile(
    r"(?<![\w+])(?:[0-9]{6}[-+A][0-9]{3}[0-9A-Y]|[STFG][0-9]{7}[A-Z]|[0-9]{1,2}\.[0-9]{3}\.[0-9]{3}-[0-9Kk]"
    r"|[0-9](?:[0-9]|[ .\-](?=[0-9])){7,22})(?![\w])"
)
# Words that announce an identity number, in the languages of the formats above and more.
_ID_CUES: Final = re2.compile(
    r"(?i)\b(?:id|ids|identity|identit|national|kimlik|tckn|pesel|cpf|aadhaa?r|nik|ktp|"
    r"personnummer|personal|bsn|nir|insee|dni|nie|rut|run|curp|nric|fin|hetu|henkil|isikukood|"
    r"egn|cnp|rnokpp|ipn|inn|snils|sin|ssn|nin|citizen|ciudadan|cidad|identidad|identidade|"
    r"ausweis|identif|fødselsnummer|fodselsnummer|teudat|tz|identiti|identitas|identité|"
    r"identità|identiteit|identitet|tożsamość|tozsamosc|danh tính|danh tinh|kitambulisho)\b|"
    r"егн|рнокпп|інн|инн|снилс|личност|本人確認|身份|신원|ตัวตน|"
    r"паспорт|ідентифікац|身份证|주민등록|マイナンバー|บัตรประชาชน|เลขประจำตัว|תעודת|"
    r"رقم الهوية|الهوية|شناسه|کد ملی|पहचान|आधार|nüfus|"
    # "your identity" in languages that inflect it (kimliğinizi, ταυτότητά σας, басыңызды)
    r"kimliğ|kimlig|ταυτότητ|ταυτοτητ|жеке бас|жеке куәлі|ubuwena|ვინაობ|პირადობ|ինքնությ|"
    r"tożsamoś|totožnost|identitāt|tapatyb|henkilöllisyy|személyazonoss|identitate|"
    r"identitet|identitas|kimlik|zehut|זהות|هويت|هویت|شناخت|ओळख|পরিচয়|அடையாள|గుర్తింపు|"
    r"danh tính|jati diri|pagkakakilanlan|utambulisho|ማንነት|idantitor"
)


def national_ids_in_text(text: str) -> bool:
    """A checksum-valid national identity number anywhere in prose (a message). Formats with one
    check digit only count when the text names an identity number."""
    if len(text) > 8192 or not any(c.isdigit() for c in text):
        return False
    weak = _ID_CUES.search(text) is not None
    for n, m in enumerate(_TEXT_NUMBER.finditer(text)):
        if n >= 64:
            break
        if national_id("_text", m.group(), weak=weak):
            return True
    return False


def names_an_id(text: str) -> bool:
    """The text (a message) speaks of an identity or an identity number."""
    return len(text) <= 8192 and _ID_CUES.search(text) is not None


def bare_national_id(value: str, *, weak: bool) -> bool:
    """A national identity number that is a whole URL part on its own (a path segment, a bare
    fragment): the formats with letters and a check character (NRIC, HETU, RRN, RUT) always;
    all-digit formats when ``weak`` (the context names an identity number, or the part is an
    opaque carrier such as a fragment), never an order or ticket number by its length alone."""
    value = value.strip()
    if not 8 <= len(value) <= 20:
        return False
    if _rrn(value) or _hetu(value) or _nric(value) or _rut(value):
        return True
    return weak and value.isdigit() and national_id("_bare", value, weak=True)
