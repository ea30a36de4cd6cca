"""gateway.detect.findings: findings, their evidence (for people), decisions."""

from __future__ import annotations

from gateway.detect.findings import Action, Decision, Evidence, Finding, Reason, Severity

PATH = "$.requestedSchema.properties.x1"


def test_evidence_takes_no_part_in_equality_or_hashing() -> None:
    """Existing comparisons and deduplication of findings stay as they were."""
    plain = Finding(Reason.SECRET_FIELD, PATH, Severity.HIGH, "secret")
    explained = Finding(
        Reason.SECRET_FIELD,
        PATH,
        Severity.HIGH,
        "secret",
        Evidence("password", "message-ask", "mot de passe", "fr"),
    )
    other = Finding(
        Reason.SECRET_FIELD, PATH, Severity.HIGH, "secret", Evidence("pin", "term", "pin", "en")
    )
    assert plain == explained == other
    assert hash(plain) == hash(explained) == hash(other)
    assert list(dict.fromkeys([explained, plain, other])) == [explained]
    assert Decision(Action.BLOCK, (explained, plain)).reasons == ["secret-field"]


def test_evidence_describes_itself_for_people() -> None:
    ev = Evidence("password", "message-ask", "mot de passe", "fr")
    assert ev.describe() == 'concept=password signal=message-ask term="mot de passe" lang=fr'
    assert Evidence("shortener", "shortener:bit.ly").describe() == (
        "concept=shortener signal=shortener:bit.ly"
    )
    assert (
        Evidence("x", "term", 'a "b" \\').describe()
        == 'concept=x signal=term term="a \\"b\\" \\\\"'
    )


def test_shortener_is_a_documented_reason_code() -> None:
    assert Reason("shortener") is Reason.SHORTENER
