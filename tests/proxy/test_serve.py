"""`serve` configuration: flags > GATEWAY_* environment > config file > defaults."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import aiohttp
import pytest

from gateway.cli.main import _build_parser
from gateway.errors import ConfigError
from gateway.proxy.config import PACKAGED_POLICIES, load_settings
from gateway.proxy.serve import _overrides, event_loop_factory, resolve_flags, resolve_sources
from gateway.proxy.upstream_settings import build_upstreams
from tests.peers.procs import (
    ROOT,
    free_port,
    peer_env,
    read_log_events,
    running,
    start_upstream,
    wait_for_health,
)

MODERN = "2026-07-28"


def test_flags_win_over_environment_and_environment_over_the_file(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(
        "listen: 127.0.0.1:7000\nlog_level: error\nworkers: 3\nupstreams: {a: {url: 'http://a/mcp'}}\n"
    )
    args = _build_parser().parse_args(["serve", "--listen", "127.0.0.1:9000"])
    env = {
        "GATEWAY_CONFIG": str(config),
        "GATEWAY_LISTEN": "127.0.0.1:8000",
        "GATEWAY_WORKERS": "2",
        "GATEWAY_DRAIN_SECONDS": "7",
    }
    flags = resolve_flags(args, env)
    settings = load_settings(flags["config"], _overrides(flags, None))
    assert settings.listen == "127.0.0.1:9000"  # flag
    assert settings.workers == 2  # environment over file
    assert settings.drain_seconds == 7  # environment over default
    assert settings.log_level == "error"  # file over default
    assert settings.upstreams["a"].url == "http://a/mcp"


def test_bad_startup_settings_exit_2_with_a_clear_message(tmp_path: Path) -> None:
    for argv, needle in (
        (
            ["--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9/mcp", "--workers", "2"],
            "fixed port",
        ),
        (["--upstream", "ftp://x"], "upstreams.default.url"),
        (
            ["--upstream", "http://127.0.0.1:9/mcp", "--policy", str(tmp_path / "none.yaml")],
            "none.yaml",
        ),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "gateway", "serve", *argv],
            cwd=ROOT,
            env=peer_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, (argv, done.stderr)
        assert needle in done.stderr, (argv, done.stderr)


SERVE = [sys.executable, "-m", "gateway", "serve", "--upstream", "http://127.0.0.1:9/mcp"]


def wait_healthy(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    """Until ``/healthz`` answers (30 s at most); the process must still be running."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    assert proc.poll() is None, log.read_text()


def _holder(reuse_port: bool) -> socket.socket:
    """A listening socket on a free loopback port, as another process would hold it (with
    SO_REUSEPORT: like a running gateway's workers)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


@pytest.mark.parametrize("reuse_port", [False, True], ids=["plain", "so-reuseport"])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_serve_refuses_a_port_already_in_use(workers: str, reuse_port: bool) -> None:
    """Before forking: exit 2, one line naming the flag and the address, no worker started
    (formerly: workers shared the port with the other process, or were forked in a loop)."""
    with _holder(reuse_port) as holder:
        port = holder.getsockname()[1]
        started = time.monotonic()
        done = subprocess.run(
            [*SERVE, "--listen", f"127.0.0.1:{port}", "--workers", workers],
            cwd=ROOT,
            env=peer_env(),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        elapsed = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [
        f"elicitation-gateway: error: --listen 127.0.0.1:{port}: "
        "address already in use by another process"
    ]
    assert "gateway.workers" not in done.stdout and "gateway.started" not in done.stdout
    assert elapsed < 15


def test_serve_without_policy_outside_the_repository_uses_the_shipped_default(
    tmp_path: Path,
) -> None:
    port = free_port()
    env = {k: v for k, v in peer_env().items() if k != "GATEWAY_POLICY"}
    log = tmp_path / "out.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*SERVE, "--listen", f"127.0.0.1:{port}", "--workers", "1"],
            cwd=tmp_path,  # no policies/ here
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_healthy(proc, port, log)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    started = [e for e in read_log_events(log) if e.get("event") == "gateway.started"]
    assert started, log.read_text()
    assert Path(started[0]["policy"]) == PACKAGED_POLICIES / "default.yaml"


@pytest.mark.parametrize("how", ["environment", "config file"])
def test_port_in_use_names_how_the_address_was_set(tmp_path: Path, how: str) -> None:
    with _holder(reuse_port=True) as holder:
        listen = f"127.0.0.1:{holder.getsockname()[1]}"
        env = {k: v for k, v in peer_env().items() if not k.startswith("GATEWAY_")}
        argv = [sys.executable, "-m", "gateway", "serve", "--workers", "2"]
        if how == "environment":
            env["GATEWAY_LISTEN"] = listen
            argv += ["--upstream", "http://127.0.0.1:9/mcp"]
            where = f"GATEWAY_LISTEN {listen}"
        else:
            config = tmp_path / "gw.yaml"
            config.write_text(f"listen: {listen}\nupstreams: {{a: {{url: 'http://a:1/mcp'}}}}\n")
            argv += ["--config", str(config)]
            where = f"{config}: listen {listen}"
        done = subprocess.run(
            argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=30, check=False
        )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"elicitation-gateway: error: {where}: address already in use by another process"
    ]


@pytest.mark.parametrize("how", ["console script", "python -m gateway", "operator's choice"])
def test_serve_runs_on_the_system_allocator_unless_the_operator_chose_one(
    tmp_path: Path, how: str
) -> None:
    """gateway/proxy/allocator.py: the same process (same pid) re-executed with PYTHONMALLOC=malloc."""
    if sys.platform != "linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("the system allocator is chosen on glibc only")
    port = free_port()
    env = {k: v for k, v in peer_env().items() if k != "PYTHONMALLOC"}
    if how == "operator's choice":
        env["PYTHONMALLOC"] = "pymalloc"
    script = Path(sys.executable).with_name("elicitation-gateway")
    command = [str(script)] if how == "console script" else [sys.executable, "-m", "gateway"]
    args = ["serve", "--upstream", "http://127.0.0.1:9/mcp", "--listen", f"127.0.0.1:{port}"]
    log = tmp_path / "out.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*command, *args, "--workers", "1"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
        try:
            wait_healthy(proc, port, log)
            environ = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    want = b"PYTHONMALLOC=pymalloc" if how == "operator's choice" else b"PYTHONMALLOC=malloc"
    assert want in environ
    assert b"serve" in cmdline
    if how == "console script":
        assert str(script).encode() in cmdline


def test_upstream_connection_flags_and_variables() -> None:
    """--upstream-* flags over GATEWAY_UPSTREAM_* variables, into upstreams.default."""
    args = _build_parser().parse_args(
        [
            "serve",
            "--upstream",
            "https://127.0.0.1:8443/mcp",
            "--upstream-tls-verify",
            "off",
            "--upstream-server-name",
            "mcp.internal",
            "--upstream-header",
            "Authorization: Bearer ${UPSTREAM_TOKEN}",
            "--upstream-header",
            "X-Tenant: 42",
        ]
    )
    env = {
        "GATEWAY_UPSTREAM_TLS_VERIFY": "on",
        "GATEWAY_UPSTREAM_PROXY": "http://proxy.corp:3128",
        "GATEWAY_UPSTREAM_MAX_CONNECTIONS": "7",
        "UPSTREAM_TOKEN": "t0ken",
    }
    flags = resolve_flags(args, env)
    sources = resolve_sources(args, env)
    settings = load_settings(None, _overrides(flags, flags["upstream"]), sources)
    single = settings.upstreams["default"]
    assert single.tls is not None and single.tls.verify is False  # the flag over the variable
    assert single.tls.server_name == "mcp.internal"
    assert single.proxy == "http://proxy.corp:3128" and single.max_connections == 7
    built = build_upstreams(settings, environ=env, sources=sources)["default"]
    assert built.headers == (("Authorization", "Bearer t0ken"), ("X-Tenant", "42"))
    assert built.proxy is not None and built.proxy.host == "proxy.corp"
    assert sources["upstreams.default.max_connections"] == "GATEWAY_UPSTREAM_MAX_CONNECTIONS"


def test_upstream_connection_flags_need_the_single_upstream() -> None:
    args = _build_parser().parse_args(["serve", "--config", "gw.yaml"])
    flags = resolve_flags(args, {"GATEWAY_UPSTREAM_CA_FILE": "/etc/ca.pem"})
    with pytest.raises(ConfigError, match="GATEWAY_UPSTREAM_CA_FILE applies to --upstream only"):
        _overrides(flags, None)


@pytest.mark.parametrize(
    ("argv", "env", "needles"),
    [
        (["--upstream-ca-file", "/nonexistent/ca.pem"], {}, ["--upstream-ca-file", "no such file"]),
        (
            [],
            {"GATEWAY_UPSTREAM_PROXY": "socks5://u:hunter2@p:1"},
            ["GATEWAY_UPSTREAM_PROXY", "http://"],
        ),
        (
            ["--upstream-header", "Authorization: Bearer ${NOT_SET_ANYWHERE}"],
            {},
            ["--upstream-header", "NOT_SET_ANYWHERE is not set"],
        ),
        (["--upstream-key-file", "/k.pem"], {}, ["key_file given without cert_file"]),
    ],
)
def test_bad_upstream_connection_settings_stop_the_start(
    argv: list[str], env: dict[str, str], needles: list[str]
) -> None:
    done = subprocess.run(
        [*SERVE_TLS, *argv],
        cwd=ROOT,
        env={**peer_env(), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    for needle in needles:
        assert needle in done.stderr, (needle, done.stderr)
    assert "hunter2" not in done.stderr + done.stdout


SERVE_TLS = [sys.executable, "-m", "gateway", "serve", "--upstream", "https://127.0.0.1:9/mcp"]


def test_serve_logs_how_each_upstream_is_reached_without_its_secrets(tmp_path: Path) -> None:
    port = free_port()
    canary = "canary-upstream-token-5f3a"
    env = {**peer_env(), "TOKEN_FOR_TEST": canary}
    argv = [
        *SERVE_TLS,
        "--listen",
        f"127.0.0.1:{port}",
        "--workers",
        "1",
        "--upstream-tls-verify",
        "off",
        "--upstream-proxy",
        "http://gw:hunter2@127.0.0.1:1",
        "--upstream-header",
        "Authorization: Bearer ${TOKEN_FOR_TEST}",
    ]
    log = tmp_path / "out.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_healthy(proc, port, log)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    text = log.read_text()
    events = {e.get("event"): e for e in read_log_events(log)}
    configured = events["upstream.configured"]
    assert configured["proxy"] == "http://127.0.0.1:1 (config)"
    assert configured["static_headers"] == ["Authorization"]
    assert configured["ca"] == "system CAs"
    assert "upstream.tls_verify_off" in events
    assert canary not in text and "hunter2" not in text


def test_the_event_loop_is_uvloops_when_installed_else_the_stock_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import uvloop  # a dependency; imported here to compare with what serve picks

    assert event_loop_factory() is uvloop.new_event_loop
    monkeypatch.setitem(sys.modules, "uvloop", None)  # what an install without it looks like
    assert event_loop_factory() is None


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
async def test_the_gateway_starts_and_relays_with_and_without_uvloop(
    tmp_path: Path, loop: str
) -> None:
    """``serve`` on uvloop, and on the stock loop when uvloop cannot be imported (hidden by a
    module earlier on the path that refuses to import): it starts, says which loop it runs on,
    and relays a request to a real upstream."""
    env: dict[str, str] = {}
    if loop == "asyncio":
        shim = tmp_path / "shim"
        shim.mkdir()
        (shim / "uvloop.py").write_text('raise ImportError("hidden by the test")\n')
        env["PYTHONPATH"] = os.pathsep.join([str(shim), str(ROOT)])
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/list",
    }
    log = tmp_path / "gateway.log"
    port = free_port()
    async with start_upstream() as upstream:
        argv = [*SERVE[:4], "--upstream", upstream.url, "--listen", f"127.0.0.1:{port}"]
        async with running([*argv, "--workers", "1"], port, stdout_path=log, env=env) as gw:
            await wait_for_health(gw)
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session,
                session.post(gw.url, json=body, headers=headers) as resp,
            ):
                answer = await resp.json()
                assert resp.status == 200, answer
    assert answer["id"] == 1
    assert answer["result"]["tools"]
    started = [e for e in read_log_events(log) if e.get("event") == "gateway.started"]
    assert [e["event_loop"] for e in started] == [loop], log.read_text()
