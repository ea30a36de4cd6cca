"""Outbound checks on the user's answers (sans-IO).

An accepted form answer must match the schema that was requested (types, enums, bounds, formats,
required fields, no extra fields), and must not carry a secret value pasted by mistake. Content
for which no form schema is known (a URL-mode or unsealed answer, a decline that carries content)
matches no schema, and its strings are still scanned for secrets. A violation turns the answer
into a decline for the server; the client sees a normal outcome. Findings name the field, never
the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from datetime import date, datetime
from typing import Any, Final

from gateway.detect.findings import Finding, Reason, json_path

_EMAIL: Final = re.compile(r"[^@\s]{1,64}@[^@\s]{1,255}")
_URI: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[^\s]*")

SecretScanner = Callable[[str, str], list[Finding]]


def _format_ok(fmt: str, value: str) -> bool:
    if fmt == "email":
        return _EMAIL.fullmatch(value) is not None
    if fmt == "uri":
        return _URI.fullmatch(value) is not None
    if fmt == "date":
        try:
            date.fromisoformat(value)
        except ValueError:
            return False
        return len(value) == 10
    if fmt == "date-time":
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return False
        return "T" in value or "t" in value or " " in value
    return True  # unknown formats were already judged by the request policy


def _choices(schema: Mapping[str, Any]) -> list[Any] | None:
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return [o.get("const") for o in options if isinstance(o, Mapping)]
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _value_ok(schema: Mapping[str, Any], value: Any) -> bool:
    kind = schema.get("type")
    if kind == "string":
        if not isinstance(value, str):
            return False
        if isinstance(schema.get("minLength"), int) and len(value) < schema["minLength"]:
            return False
        if isinstance(schema.get("maxLength"), int) and len(value) > schema["maxLength"]:
            return False
        fmt = schema.get("format")
        if isinstance(fmt, str) and not _format_ok(fmt, value):
            return False
        choices = _choices(schema)
        return choices is None or value in choices
    if kind in ("number", "integer"):
        if not _is_number(value) or (kind == "integer" and not float(value).is_integer()):
            return False
        low, high = schema.get("minimum"), schema.get("maximum")
        if _is_number(low) and value < low:
            return False
        return not (_is_number(high) and value > high)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return False
        items = schema.get("items")
        choices = _choices(items) if isinstance(items, Mapping) else None
        if choices is not None and any(v not in choices for v in value):
            return False
        low, high = schema.get("minItems"), schema.get("maxItems")
        if isinstance(low, int) and len(value) < low:
            return False
        return not (isinstance(high, int) and len(value) > high)
    return False


def _scan_all(value: Any, parts: tuple[str | int, ...], scan: SecretScanner) -> list[Finding]:
    """Scan every string inside ``value`` (any JSON shape; depth is bounded by the parser)."""
    if isinstance(value, str):
        return scan(value, json_path(*parts))
    found: list[Finding] = []
    if isinstance(value, Mapping):
        for name, item in value.items():
            found.extend(_scan_all(item, (*parts, str(name)), scan))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_scan_all(item, (*parts, index), scan))
    return found


def check_answer(schema: Any, content: Any, scan: SecretScanner | None = None) -> list[Finding]:
    """Findings for an accepted form answer ``content`` against the requested ``schema``.

    ``scan(text, path)`` (the secret-value scanner) runs on every string value when given.
    Paths point into the answer: ``$.content.<field>``. Without a form schema (``None`` or no
    ``properties``) the content is a ``schema-violation`` (``no-schema``) and every string in it
    is still scanned.
    """
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        found = [Finding(Reason.SCHEMA_VIOLATION, json_path("content"), detail="no-schema")]
        if scan is not None:
            found.extend(_scan_all(content, ("content",), scan))
        return found
    if not isinstance(content, Mapping):
        return [Finding(Reason.SCHEMA_VIOLATION, json_path("content"), detail="not-an-object")]
    findings: list[Finding] = []
    required = schema.get("required")
    findings.extend(
        Finding(Reason.SCHEMA_VIOLATION, json_path("content", name), detail="missing")
        for name in (required if isinstance(required, list) else [])
        if isinstance(name, str) and name not in content
    )
    for name, value in content.items():
        path = json_path("content", str(name))
        field = props.get(name)
        if not isinstance(field, Mapping):
            findings.append(Finding(Reason.SCHEMA_VIOLATION, path, detail="unexpected-field"))
            continue
        if value is None and name not in (required or []):
            continue  # an optional field left empty
        if not _value_ok(field, value):
            findings.append(Finding(Reason.SCHEMA_VIOLATION, path, detail="invalid-value"))
        if scan is not None:
            texts = value if isinstance(value, list) else [value]
            for text in texts:
                if isinstance(text, str):
                    findings.extend(scan(text, path))
    return findings
