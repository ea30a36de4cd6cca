"""Elicitations that several test modules send (sans-IO: plain data)."""

from __future__ import annotations

from typing import Any

PASSWORD_FORM: dict[str, Any] = {
    "mode": "form",
    "message": "Sign in again",
    "requestedSchema": {"type": "object", "properties": {"password": {"type": "string"}}},
}
GOOD_URL: dict[str, Any] = {
    "mode": "url",
    "message": "Connect",
    "url": "https://example.com/connect",
    "elicitationId": "e1",
}
