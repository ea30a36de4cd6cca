"""Layer 0: the shape and size of one ``elicitation/create`` ``params`` object (untrusted input).

Checked against the MCP schema (2025-11-25 and 2026-07-28 ``ElicitRequestFormParams``,
``ElicitRequestURLParams`` and ``PrimitiveSchemaDefinition``) and the policy's ``Limits``:

* size first: serialized size > ``max_bytes`` → ``oversize`` and nothing else is looked at;
* ``params`` must be an object; ``mode`` absent → form; a mode other than form/url → ``malformed``;
* form: a str ``message`` (else ``malformed``) and a flat object ``requestedSchema`` of primitive
  property schemas (else ``schema-violation``: nesting, ``$ref``, unknown types or formats, wrong
  value types); URL: str ``message`` and ``url``, str ``elicitationId`` if present (else
  ``malformed``);
* ``max_depth``, ``max_string``, ``max_properties`` and ``max_enum`` → ``oversize``;
* members of the other mode (a form carrying ``url``, a URL request carrying ``requestedSchema``)
  and property names longer than ``MAX_PROPERTY_NAME`` → ``malformed``; a ``required`` entry that
  names no property is sloppy but harmless (nothing extra is collected): not reported;
* era-specific (only when the caller says which era): a handshake-era (2025-11-25) URL request
  must carry ``elicitationId`` → ``malformed``; a 2026-07-28 one has none.

Unknown annotation keys on a property (``pattern``, ``writeOnly``, ``x-…``) are tolerated, as the
spec's own models ignore extra keys; keys that introduce structure or references are not.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gateway.detect.config import Limits
from gateway.detect.findings import Finding, Reason, json_path

MODES = frozenset({"form", "url"})
STRING_FORMATS = frozenset({"email", "uri", "date", "date-time"})
# Keys that would make the schema nested, referenced or conditional: never in a flat form.
STRUCTURAL_KEYS = frozenset(
    {
        "$ref",
        "$dynamicRef",
        "$defs",
        "definitions",
        "properties",
        "patternProperties",
        "additionalProperties",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "dependentSchemas",
        "prefixItems",
        "contains",
    }
)
_SCHEMA_STRUCTURAL = STRUCTURAL_KEYS - {"properties", "additionalProperties"} | {"anyOf", "oneOf"}
# A property name is a label for a field, not a payload: thousands of characters are an attack on
# the client's rendering or on the gateway, never a form.
MAX_PROPERTY_NAME = 256

_SV = Reason.SCHEMA_VIOLATION
_MAL = Reason.MALFORMED
_BIG = Reason.OVERSIZE

Part = str | int


@dataclass(frozen=True, slots=True)
class Envelope:
    """What layer 0 found. ``inspectable`` says whether the detectors may run on this input."""

    mode: str | None
    findings: tuple[Finding, ...]
    inspectable: bool


def serialized_size(params: Any) -> int:
    """UTF-8 size of the compact JSON form; raises RecursionError, TypeError or ValueError."""
    text = json.dumps(params, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8", "surrogatepass"))


def check_envelope(params: Any, limits: Limits, era: str | None = None) -> Envelope:
    """Layer 0 for one ``params`` object. ``era`` (``"handshake"``, ``"modern"`` or None) turns on
    the era-specific rules; None (unknown) leaves them off."""
    try:
        size = serialized_size(params)
    except RecursionError:
        return Envelope(None, (Finding(_BIG, "$", detail="depth"),), inspectable=False)
    except (TypeError, ValueError):
        return Envelope(None, (Finding(_MAL, "$", detail="not-json"),), inspectable=False)
    if size > limits.max_bytes:
        return Envelope(None, (Finding(_BIG, "$", detail="bytes"),), inspectable=False)
    if not isinstance(params, dict):
        return Envelope(None, (Finding(_MAL, "$", detail="not-object"),), inspectable=False)
    mode = params.get("mode", "form")
    if not isinstance(mode, str) or mode not in MODES:
        return Envelope(None, (Finding(_MAL, "$.mode", detail="mode"),), inspectable=False)
    findings = _limit_findings(params, limits)
    if mode == "form":
        findings += _form_findings(params, limits)
        if "url" in params:
            findings.append(Finding(_MAL, "$.url", detail="url-in-form"))
        inspectable = _form_inspectable(params)
    else:
        findings += _url_findings(params)
        if "requestedSchema" in params:
            findings.append(Finding(_MAL, "$.requestedSchema", detail="schema-in-url"))
        if era == "handshake" and "elicitationId" not in params:
            findings.append(Finding(_MAL, "$.elicitationId", detail="missing"))
        inspectable = isinstance(params.get("url"), str) or isinstance(params.get("message"), str)
    oversize = any(f.reason is _BIG for f in findings)
    return Envelope(mode, tuple(findings), inspectable=inspectable and not oversize)


def _form_inspectable(params: Mapping[str, Any]) -> bool:
    schema = params.get("requestedSchema")
    return (
        isinstance(params.get("message"), str)
        and isinstance(schema, dict)
        and isinstance(schema.get("properties"), dict)
    )


# --- limits -----------------------------------------------------------------------------------


def _limit_findings(params: Any, limits: Limits) -> list[Finding]:
    """Depth and string length over the whole object, iteratively (hostile input: no recursion).

    Strings are checked where their container is expanded (no stack entry, no path per string):
    a 64 KiB form can hold thousands of them."""
    out: list[Finding] = []
    too_deep = False
    max_string, max_depth = limits.max_string, limits.max_depth
    if isinstance(params, str):
        if len(params) > max_string:
            out.append(Finding(_BIG, "$", detail="string"))
        return out
    stack: list[tuple[Any, tuple[Part, ...]]] = [(params, ())]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if len(path) >= max_depth:
            too_deep = True
            continue
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(key, str) and len(key) > max_string:
                out.append(Finding(_BIG, json_path(*path), detail="key"))
            if isinstance(value, str):
                if len(value) > max_string:
                    part = key if isinstance(key, str | int) else str(key)
                    out.append(Finding(_BIG, json_path(*path, part), detail="string"))
            elif isinstance(value, dict | list):
                stack.append((value, (*path, key if isinstance(key, str | int) else str(key))))
    if too_deep:
        out.append(Finding(_BIG, "$", detail="depth"))
    out.sort(key=lambda f: f.path)
    return out


# --- URL mode ---------------------------------------------------------------------------------


def _url_findings(params: Mapping[str, Any]) -> list[Finding]:
    out = [
        Finding(_MAL, json_path(key), detail="type")
        for key in ("message", "url")
        if not isinstance(params.get(key), str)
    ]
    if "elicitationId" in params and not isinstance(params["elicitationId"], str):
        out.append(Finding(_MAL, "$.elicitationId", detail="type"))
    return out


# --- form mode --------------------------------------------------------------------------------


def _form_findings(params: Mapping[str, Any], limits: Limits) -> list[Finding]:
    out: list[Finding] = []
    if not isinstance(params.get("message"), str):
        out.append(Finding(_MAL, "$.message", detail="type"))
    schema = params.get("requestedSchema")
    if not isinstance(schema, dict):
        out.append(Finding(_SV, "$.requestedSchema", detail="type"))
        return out
    root = ("requestedSchema",)
    if schema.get("type") != "object":
        out.append(Finding(_SV, json_path(*root, "type"), detail="type"))
    out += _structural(schema, root, _SCHEMA_STRUCTURAL)
    if "$schema" in schema and not isinstance(schema["$schema"], str):
        out.append(Finding(_SV, json_path(*root, "$schema"), detail="type"))
    props = schema.get("properties")
    if not isinstance(props, dict):
        out.append(Finding(_SV, json_path(*root, "properties"), detail="type"))
        return out
    if len(props) > limits.max_properties:
        out.append(Finding(_BIG, json_path(*root, "properties"), detail="properties"))
    for name, prop in props.items():
        if isinstance(name, str) and len(name) > MAX_PROPERTY_NAME:
            out.append(Finding(_MAL, json_path(*root, "properties"), detail="property-name"))
            continue
        out += _property(prop, (*root, "properties", name), limits)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        out.append(Finding(_SV, json_path(*root, "additionalProperties"), detail="nested"))
    out += _required(schema.get("required"), props, root)
    return out


def _required(required: Any, props: Mapping[str, Any], root: tuple[Part, ...]) -> list[Finding]:
    """``required`` must be a list of strings. A name without a property is harmless (issue 10:
    the client cannot collect a field that is not defined), so only the types are checked."""
    del props
    if required is None:
        return []
    if not isinstance(required, list):
        return [Finding(_SV, json_path(*root, "required"), detail="type")]
    return [
        Finding(_SV, json_path(*root, "required", i), detail="required")
        for i, key in enumerate(required)
        if not isinstance(key, str)
    ]


def _structural(
    schema: Mapping[str, Any], path: tuple[Part, ...], keys: frozenset[str]
) -> list[Finding]:
    return [Finding(_SV, json_path(*path, k), detail="nested") for k in schema if k in keys]


def _property(prop: Any, path: tuple[Part, ...], limits: Limits) -> list[Finding]:
    if not isinstance(prop, dict):
        return [Finding(_SV, json_path(*path), detail="type")]
    out = _structural(prop, path, STRUCTURAL_KEYS)
    for key in ("title", "description"):
        if key in prop and not isinstance(prop[key], str):
            out.append(Finding(_SV, json_path(*path, key), detail="type"))
    kind = prop.get("type")
    if kind == "string":
        out += _string(prop, path, limits)
    elif kind in ("number", "integer"):
        out += _number(prop, path, integer=kind == "integer")
    elif kind == "boolean":
        if "default" in prop and not isinstance(prop["default"], bool):
            out.append(Finding(_SV, json_path(*path, "default"), detail="type"))
    elif kind == "array":
        out += _multi_select(prop, path, limits)
    else:
        out.append(Finding(_SV, json_path(*path, "type"), detail="type"))
    return out


def _string(prop: Mapping[str, Any], path: tuple[Part, ...], limits: Limits) -> list[Finding]:
    out: list[Finding] = []
    if "anyOf" in prop:
        out.append(Finding(_SV, json_path(*path, "anyOf"), detail="nested"))
    fmt = prop.get("format")
    if fmt is not None and fmt not in STRING_FORMATS:
        out.append(Finding(_SV, json_path(*path, "format"), detail="format"))
    out += _wrong_type(prop, path, ("minLength", "maxLength"), _non_negative_int)
    out += _wrong_type(prop, path, ("default", "pattern"), lambda v: isinstance(v, str))
    if "enum" in prop:
        out += _str_list(prop["enum"], (*path, "enum"), limits)
        if "enumNames" in prop:
            names = prop["enumNames"]
            out += _str_list(names, (*path, "enumNames"), limits)
            lists = isinstance(names, list) and isinstance(prop["enum"], list)
            if lists and len(names) != len(prop["enum"]):
                out.append(Finding(_SV, json_path(*path, "enumNames"), detail="length"))
    if "oneOf" in prop:
        out += _titled(prop["oneOf"], (*path, "oneOf"), limits)
    return out


def _number(prop: Mapping[str, Any], path: tuple[Part, ...], *, integer: bool) -> list[Finding]:
    out: list[Finding] = []
    for key in ("minimum", "maximum", "default"):
        if key not in prop:
            continue
        value = prop[key]
        ok = _is_number(value) and (not integer or key != "default" or float(value).is_integer())
        if not ok:
            out.append(Finding(_SV, json_path(*path, key), detail="type"))
    return out


def _multi_select(prop: Mapping[str, Any], path: tuple[Part, ...], limits: Limits) -> list[Finding]:
    out: list[Finding] = []
    items = prop.get("items")
    ipath = (*path, "items")
    if not isinstance(items, dict):
        return [Finding(_SV, json_path(*ipath), detail="type")]
    if "anyOf" in items:
        out += _titled(items["anyOf"], (*ipath, "anyOf"), limits)
    elif items.get("type") == "string" and "enum" in items:
        out += _str_list(items["enum"], (*ipath, "enum"), limits)
    else:
        out.append(Finding(_SV, json_path(*ipath), detail="items"))
    out += _structural(items, ipath, STRUCTURAL_KEYS | {"items"})
    for key in ("minItems", "maxItems"):
        if key in prop and not _non_negative_int(prop[key]):
            out.append(Finding(_SV, json_path(*path, key), detail="type"))
    if "default" in prop:
        out += _str_list(prop["default"], (*path, "default"), limits)
    return out


def _str_list(value: Any, path: tuple[Part, ...], limits: Limits) -> list[Finding]:
    if not isinstance(value, list):
        return [Finding(_SV, json_path(*path), detail="type")]
    if len(value) > limits.max_enum:
        return [Finding(_BIG, json_path(*path), detail="enum")]
    return [
        Finding(_SV, json_path(*path, i), detail="type")
        for i, item in enumerate(value)
        if not isinstance(item, str)
    ]


def _titled(value: Any, path: tuple[Part, ...], limits: Limits) -> list[Finding]:
    """``oneOf``/``anyOf`` options: each exactly ``{"const": str, "title": str}``."""
    if not isinstance(value, list):
        return [Finding(_SV, json_path(*path), detail="type")]
    if len(value) > limits.max_enum:
        return [Finding(_BIG, json_path(*path), detail="enum")]
    return [
        Finding(_SV, json_path(*path, i), detail="option")
        for i, opt in enumerate(value)
        if not (
            isinstance(opt, dict)
            and isinstance(opt.get("const"), str)
            and isinstance(opt.get("title"), str)
        )
    ]


def _wrong_type(
    prop: Mapping[str, Any],
    path: tuple[Part, ...],
    keys: tuple[str, ...],
    ok: Callable[[Any], bool],
) -> list[Finding]:
    return [
        Finding(_SV, json_path(*path, key), detail="type")
        for key in keys
        if key in prop and not ok(prop[key])
    ]


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return not isinstance(value, float) or math.isfinite(value)


def _non_negative_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
