"""Issue 10 form detection: concepts in many languages, the message's ask for opaque fields,
settings and everyday senses that are not secrets, choice lists that spell a secret, and
sensitive personal data that warns. Cases written for these tests (not from the corpus splits)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.detect import lexicon
from gateway.detect.config import FormConfig, Limits
from gateway.detect.fields import check_form
from gateway.detect.findings import Finding, Reason, Severity
from gateway.detect.lexicon import base_lexicon

S: dict[str, Any] = {"type": "string"}
_FIELD_REASONS = (
    Reason.SECRET_FIELD,
    Reason.OTP_FIELD,
    Reason.PAYMENT_FIELD,
    Reason.SENSITIVE_PII_FIELD,
)


def run(message: str, props: dict[str, Any]) -> list[Finding]:
    params = {"message": message, "requestedSchema": {"type": "object", "properties": props}}
    return check_form(params, FormConfig(), Limits())


def reasons(message: str, props: dict[str, Any]) -> dict[str, tuple[str, Severity, str]]:
    prefix = "$.requestedSchema.properties."
    return {
        f.path.removeprefix(prefix): (f.reason.value, f.severity, f.detail)
        for f in run(message, props)
        if f.reason in _FIELD_REASONS
    }


# ------------------------------------------------------------ the ask in the prose


@pytest.mark.parametrize(
    ("message", "key", "reason"),
    [
        ("Sesi Anda telah berakhir. Masukkan kata sandi Anda untuk melanjutkan.", "a9", "secret"),
        ("Η συνεδρία έληξε. Πληκτρολογήστε τον κωδικό πρόσβασης.", "xQ7pLm2Z", "secret"),
        ("เซสชันหมดอายุ กรุณาใส่รหัสผ่านเพื่อดำเนินการต่อ", "field_3fa9c2d1", "secret"),
        ("Kikao kimekwisha. Weka nenosiri lako ili kuendelea.", "v", "secret"),
        ("Phiên đã hết hạn. Vui lòng nhập mật khẩu.", "q17", "secret"),
        ("Wir haben Ihnen einen Code per SMS geschickt. Bitte unten eingeben.", "k2", "otp"),
        ("Zahlung abschließen. Kartennummer:", "zz1", "payment"),
    ],
)
def test_opaque_field_takes_the_message_ask(message: str, key: str, reason: str) -> None:
    found = reasons(message, {key: S})
    assert key in found, found
    assert found[key][0].startswith(reason), found


def test_a_negative_in_one_sentence_does_not_hide_the_next() -> None:
    found = reasons("Your session expired. Enter your password to continue.", {"x1": S})
    assert found["x1"][0] == "secret-field"


@pytest.mark.parametrize(
    "message",
    [
        "Your password was changed successfully. Any feedback?",
        "Your card was charged 20 EUR. Rate your experience:",
        "Passwords must be 12 characters. Choose a display name.",
        "Thanks for verifying your phone number via SMS code. Nickname?",
    ],
)
def test_the_ask_is_where_the_message_asks(message: str) -> None:
    assert reasons(message, {"x1": S}) == {}


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("We sent you a 6-digit code by SMS. Enter it below.", "otp-field"),
        ("Is this you? Your password is needed to continue.", "secret-field"),
        ("Last step: the three digits on the back of your card.", "payment-field"),
        ("Zahlung abschließen. Kartennummer:", "payment-field"),
    ],
)
def test_asks_across_sentences(message: str, reason: str) -> None:
    assert reasons(message, {"x1": S})["x1"][0] == reason


def test_a_named_field_does_not_take_the_message_ask() -> None:
    assert reasons("Reset your password: enter your email", {"email": S}) == {}
    assert reasons("Enter your password", {"first_name": S, "user_id": S}) == {}


# ------------------------------------------------------------ plain words, many languages


@pytest.mark.parametrize(
    "title",
    [
        "lösenord", "adgangskode", "salasana", "slaptažodis", "jelszó", "geslo", "лозинка",
        "סיסמה", "رمز عبور", "পাসওয়ার্ড", "கடவுச்சொல்", "รหัสผ่าน", "mật khẩu", "kata sandi",
        "nenosiri", "pasahitza", "contrasenya", "fjalëkalimi", "პაროლი", "գաղտնաբառ",
    ],
)  # fmt: skip
def test_password_in_many_languages(title: str) -> None:
    assert reasons("", {"f": {"type": "string", "title": title}})["f"][0] == "secret-field"


@pytest.mark.parametrize(
    ("title", "reason"),
    [
        ("kod weryfikacyjny", "otp-field"),
        ("doğrulama kodu", "otp-field"),
        ("रिकवरी वाक्यांश", "secret-field"),
        ("frase de recuperación", "secret-field"),
        ("ikhodi yokuqinisekisa", "otp-field"),
        ("säkerhetsfråga", "secret-field"),
    ],
)
def test_other_concepts_in_other_languages(title: str, reason: str) -> None:
    assert reasons("", {"f": {"type": "string", "title": title}})["f"][0] == reason


def test_findings_name_the_concept() -> None:
    assert reasons("", {"f": {"type": "string", "title": "salasana"}})["f"][2] == "password"
    assert reasons("", {"f": {"type": "string", "title": "fødselsdato"}})["f"] == (
        "sensitive-pii-field",
        Severity.LOW,
        "date-of-birth",
    )


# ------------------------------------------------------------ false blocks


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "integer", "title": "Minimum password length", "minimum": 8},
        {"type": "integer", "title": "Passwort-Gültigkeit (Tage)"},
        {"type": "integer", "title": "Max output tokens", "default": 1024},
        {"type": "integer", "title": "Number of backup codes to generate"},
        {"type": "integer", "title": "OTP validity (seconds)", "maximum": 600},
        {"type": "integer", "title": "PIN attempts before lock", "maximum": 5},
    ],
)
def test_numeric_settings_are_not_secrets(spec: dict[str, Any]) -> None:
    assert reasons("Security policy", {"s": spec}) == {}


def test_a_code_or_card_number_asked_as_a_number_still_blocks() -> None:
    found = reasons(
        "We texted you a code", {"c": {"type": "integer", "minimum": 0, "maximum": 999999}}
    )
    assert found["c"][0] == "otp-field"
    pin = {"type": "integer", "title": "Senha do cartão", "maximum": 9999}
    assert reasons("Confirme a compra", {"s": pin})["s"][0] == "secret-field"


def test_a_negative_never_cancels_the_title_that_names_the_secret() -> None:
    zip_pw = {"type": "string", "title": "Password for the encrypted ZIP"}
    assert reasons("Unpack", {"zip_password": zip_pw})["zip_password"][0] == "secret-field"


@pytest.mark.parametrize(
    ("message", "props"),
    [
        ("Delivery address", {"city": S, "pin": {"type": "string", "title": "PIN code"}}),
        ("Deploy", {"pull_secret": {"type": "string", "title": "imagePullSecrets name"}}),
        ("Add an opcode", {"mnemonic": {"type": "string", "title": "Mnemonic", "maxLength": 6}}),
        ("Kampania", {"haslo": {"type": "string", "title": "Hasło reklamowe (slogan)"}}),
        (
            "Complete the payment",
            {"po": {"type": "string", "title": "Number", "description": "purchase order number"}},
        ),
        ("Token", {"sym": {"type": "string", "title": "Token symbol", "maxLength": 5}}),
    ],
)
def test_benign_senses_pass(message: str, props: dict[str, Any]) -> None:
    assert reasons(message, props) == {}


def test_a_domain_named_in_a_description_is_not_a_link() -> None:
    spec = {"type": "string", "title": "Repository", "description": "as shown on gitlab.com"}
    assert run("Link your project", {"repo": spec}) == []
    disguised = {"type": "string", "description": "see аррӏе.com"}
    assert any(f.reason is Reason.CLICKABLE_URL for f in run("Link", {"repo": disguised}))


# ------------------------------------------------------------ choice lists


def test_digits_chosen_one_by_one_are_a_pin() -> None:
    digit = {"type": "string", "enum": [str(i) for i in range(10)]}
    found = reasons("For your security", {f"d{i}": digit for i in range(4)})
    assert {v[0] for v in found.values()} == {"secret-field"} and len(found) == 4


def test_words_picked_from_lists_are_a_recovery_phrase() -> None:
    words = ["abandon", "ability", "able", "about", "above", "absent", "absorb", "abstract",
             "absurd", "abuse", "access", "accident", "account"]  # fmt: skip
    found = reasons("Verify", {f"w{i}": {"type": "string", "enum": words} for i in range(3)})
    assert {v[2] for v in found.values()} == {"word-choices"}


def test_an_ordinary_choice_list_passes() -> None:
    sizes = {"type": "string", "enum": ["XS", "S", "M", "L", "XL"]}
    assert reasons("Order", {"size": sizes}) == {}


def test_health_data_in_a_choice_list_warns() -> None:
    blood = {"type": "string", "title": "Blood type", "enum": ["A+", "A-", "B+", "O-"]}
    assert reasons("Visit", {"blood": blood})["blood"][1] is Severity.LOW


# ------------------------------------------------------------ the vocabulary


def test_concepts_cover_forty_languages() -> None:
    concepts = lexicon._data()["concepts"]
    langs = set(concepts["password"]["terms"]) | set(concepts["password"]["stems"])
    assert len(langs) >= 40
    assert base_lexicon().scan("kata laluan").strong


@pytest.mark.parametrize("name", ["concepts.yaml", "lexicon.yaml"])
def test_data_files_name_each_language_once(name: str) -> None:
    """YAML keeps the last of two equal keys: a language listed twice loses its first terms."""
    path = Path(lexicon.__file__).parents[1] / "data" / name
    root = yaml.compose(path.read_text(encoding="utf-8"))
    assert root is not None
    stack: list[yaml.Node] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            keys = [k.value for k, _ in node.value]
            assert len(keys) == len(set(keys)), (name, node.start_mark.line)
            stack.extend(v for _, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
