"""Settings: config file + flags, clear errors naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import load_settings
from gateway.errors import ConfigError


def test_flags_only() -> None:
    s = load_settings(None, {"upstreams": {"default": {"url": "http://127.0.0.1:1/mcp"}}})
    assert s.listen == "127.0.0.1:8080"
    assert s.timeouts.idle == 300.0


def test_config_file_with_several_upstreams(tmp_path: Path) -> None:
    cfg = tmp_path / "gw.yaml"
    cfg.write_text(
        "listen: 0.0.0.0:9000\nupstreams:\n  acme: {url: 'http://a:1/mcp'}\n"
        "  beta: {url: 'https://b/mcp'}\ntimeouts: {connect: 2}\n"
    )
    s = load_settings(str(cfg), {"listen": "127.0.0.1:9001"})
    assert s.listen == "127.0.0.1:9001"  # flags win over the file
    assert set(s.upstreams) == {"acme", "beta"}
    assert s.timeouts.connect == 2


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("upstreams: {a: {url: 'ftp://x'}}\n", "upstreams.a.url"),
        ("upstreams: {a: {url: 'http://x', extra: 1}}\n", "upstreams.a.extra"),
        ("listen: nope\nupstreams: {a: {url: 'http://x'}}\n", "listen"),
        ("timeouts: {idle: -1}\nupstreams: {a: {url: 'http://x'}}\n", "timeouts.idle"),
        ("upstreams: {'a/b': {url: 'http://x'}}\n", "upstreams"),
        ("[1, 2]\n", "top level"),
        ("a: [\n", "invalid YAML"),
        ("{}\n", "no upstream"),
    ],
)
def test_bad_config_names_file_and_field(tmp_path: Path, text: str, needle: str) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_settings(str(cfg))
    assert str(cfg) in str(err.value)
    assert needle in str(err.value)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings("/nonexistent/gw.yaml")
