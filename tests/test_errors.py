"""The exception tree (gateway/errors.py): the documented table is the one raised."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gateway import errors
from gateway.errors import (
    ClientProtocolError,
    ConfigError,
    GatewayError,
    PolicyError,
    ProtocolError,
    SealError,
    UpstreamBusy,
    UpstreamCertificateUntrusted,
    UpstreamClientCertificateRejected,
    UpstreamConnectError,
    UpstreamConnectionRefused,
    UpstreamConnectTimeout,
    UpstreamDNSError,
    UpstreamHostnameMismatch,
    UpstreamProtocolError,
    UpstreamProxyAuthRequired,
    UpstreamProxyError,
    UpstreamTLSError,
    UpstreamUnavailable,
)
from gateway.proxy.upstream import UpstreamError, UpstreamTimeout

CLASSES = {
    cls.__name__: cls
    for cls in (
        GatewayError,
        ConfigError,
        PolicyError,
        ProtocolError,
        ClientProtocolError,
        UpstreamProtocolError,
        UpstreamUnavailable,
        UpstreamBusy,
        UpstreamConnectError,
        UpstreamDNSError,
        UpstreamConnectionRefused,
        UpstreamConnectTimeout,
        UpstreamProxyError,
        UpstreamProxyAuthRequired,
        UpstreamTLSError,
        UpstreamCertificateUntrusted,
        UpstreamHostnameMismatch,
        UpstreamClientCertificateRejected,
        SealError,
    )
}
_NUMBER = r"(—|\d{3}|-\d{5})"


def _status(text: str) -> int | None:
    return None if text == "—" else int(text)


def _docstring_rows() -> dict[str, tuple[str, int | None, int | None]]:
    """``name: (parent, http_status, jsonrpc_code)`` from the tree in errors.py's docstring."""
    rows: dict[str, tuple[str, int | None, int | None]] = {}
    parents: dict[int, str] = {}
    for line in (errors.__doc__ or "").splitlines():
        m = re.match(rf"^(\s*)(?:[*+-] )(\w+)\s+{_NUMBER}\s+{_NUMBER}(?:\s|$)", line)
        if m is None:
            continue
        depth, name = len(m.group(1)), m.group(2)
        parents[depth] = name
        parent = next((parents[d] for d in sorted(parents, reverse=True) if d < depth), "")
        rows[name] = (parent, _status(m.group(3)), _status(m.group(4)))
    return rows


def _architecture_rows() -> dict[str, tuple[str, int | None, int | None]]:
    """The same from the table in docs/architecture.md (``Error tree``)."""
    text = Path("docs/architecture.md").read_text()
    section = text.split("## Error tree", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0] in CLASSES:
            rows[cells[0]] = (cells[1].replace("—", ""), _status(cells[2]), _status(cells[3]))
    return rows


def _actual() -> dict[str, tuple[str, int | None, int | None]]:
    out = {}
    for name, cls in CLASSES.items():
        # the parent in the tree: the first GatewayError base (UpstreamConnectTimeout is also
        # a TimeoutError, which Python reports as its layout base)
        bases = [b for b in cls.__bases__ if issubclass(b, GatewayError)]
        parent = bases[0].__name__ if bases and cls is not GatewayError else ""
        out[name] = (parent, cls.http_status, cls.jsonrpc_code)
    return out


def test_the_docstring_tree_is_the_class_tree() -> None:
    assert _docstring_rows() == _actual()


def test_the_architecture_table_is_the_class_tree() -> None:
    assert _architecture_rows() == _actual()


@pytest.mark.parametrize("cls", [*CLASSES.values(), UpstreamError, UpstreamTimeout])
def test_every_error_is_a_gateway_error(cls: type[Exception]) -> None:
    assert issubclass(cls, GatewayError)


def test_upstream_client_errors_are_upstream_faults() -> None:
    broken, slow = UpstreamError("reset"), UpstreamTimeout("idle")
    assert isinstance(broken, UpstreamUnavailable) and not broken.timeout
    assert (broken.http_status, broken.jsonrpc_code) == (502, errors.GATEWAY_UPSTREAM_ERROR)
    assert isinstance(slow, TimeoutError) and slow.timeout
    assert (slow.http_status, slow.jsonrpc_code) == (504, errors.GATEWAY_UPSTREAM_TIMEOUT)


def test_an_instance_may_narrow_its_status_without_changing_the_class() -> None:
    too_large = ClientProtocolError("Request body too large", http_status=413)
    assert too_large.http_status == 413
    assert ClientProtocolError.http_status == 400
    assert too_large.message == "Request body too large"


def test_connection_failures_keep_their_status_per_instance() -> None:
    """The class attributes in the table are what an instance answers (the connect timeout
    included), and the client's message is the class's, whatever the detail says."""
    slow = UpstreamConnectTimeout("no connection to 10.0.0.1:443 in time", upstream="u")
    assert (slow.http_status, slow.jsonrpc_code, slow.timeout) == (504, -31002, True)
    assert isinstance(slow, TimeoutError) and slow.message == "upstream connect timed out"
    busy = UpstreamBusy(retry_after=3)
    assert (busy.http_status, busy.jsonrpc_code, busy.retry_after) == (503, -31004, 3)
    untrusted = UpstreamCertificateUntrusted("... /etc/ca.pem ...", upstream="u", address="h:1")
    assert untrusted.message == "upstream certificate not trusted"
    assert "/etc/ca.pem" not in untrusted.message and "/etc/ca.pem" in untrusted.detail
