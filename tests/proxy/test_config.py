"""Settings: config file + flags, clear errors naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.errors import ConfigError
from gateway.policy.loader import load_policy
from gateway.proxy.config import PACKAGED_POLICIES, load_settings


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


def test_packaged_policies_are_the_policies_directory_byte_for_byte() -> None:
    """policies/ (the documented, edited copy) is the source; gateway/data/policies/ ships it
    inside the package so the default resolves from any working directory. After editing a
    policy: cp policies/*.yaml gateway/data/policies/."""
    root = Path(__file__).resolve().parents[2]
    shipped = {p.name: p.read_bytes() for p in PACKAGED_POLICIES.glob("*.yaml")}
    source = {p.name: p.read_bytes() for p in (root / "policies").glob("*.yaml")}
    assert source, "no policies/*.yaml"
    assert shipped == source


def test_default_policy_is_the_shipped_one_wherever_the_gateway_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    s = load_settings(None, {"upstreams": {"default": {"url": "http://127.0.0.1:1/mcp"}}})
    assert Path(s.policy).is_absolute()
    assert Path(s.policy) == PACKAGED_POLICIES / "default.yaml"
    assert load_policy(s.policy).revision  # loads from a directory without policies/


@pytest.mark.parametrize(
    ("key", "value", "label"),
    [
        ("workers", "abc", "GATEWAY_WORKERS"),
        ("log_level", "verbose", "GATEWAY_LOG_LEVEL"),
        ("drain_seconds", "-1", "--drain-seconds"),
        ("listen", "nope", "GATEWAY_LISTEN"),
    ],
)
def test_setting_errors_name_the_flag_or_variable_not_the_config_file(
    tmp_path: Path, key: str, value: str, label: str
) -> None:
    cfg = tmp_path / "gw.yaml"
    cfg.write_text("upstreams: {a: {url: 'http://a/mcp'}}\n")
    with pytest.raises(ConfigError) as err:
        load_settings(str(cfg), {key: value}, {key: label})
    message = str(err.value)
    assert message.startswith(f"{label}: ")
    assert str(cfg) not in message and "command line" not in message


def test_log_level_is_case_insensitive() -> None:
    s = load_settings(
        None, {"log_level": "DEBUG", "upstreams": {"default": {"url": "http://a/mcp"}}}
    )
    assert s.log_level == "debug"
