"""``elicitation-gateway stdio -- COMMAND`` as a desktop client runs it: a real gateway process,
a real child (tests/peers/stdio_child.py, raw JSON lines chosen by the test), pipes both ways.
Process hygiene: every way the conversation can end, bounded; no zombie; stdout carries MCP
lines only; the child's environment is what the operator listed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway import errors
from gateway.cli.main import _build_parser
from gateway.stdio.child import MINIMAL_ENV
from gateway.stdio.run import options_from_args
from tests.peers.procs import ROOT, free_port, peer_env, read_log_events

CHILD = ROOT / "tests" / "peers" / "stdio_child.py"
WAIT = 30.0  # the longest any single step may take (a slow, shared machine)
BIG = 10_000_000


@dataclass
class Gateway:
    process: asyncio.subprocess.Process
    stderr_path: Path
    tmp: Path
    saved: str | None = None  # stderr, kept when the temporary directory goes

    async def send(self, obj: Any) -> None:
        await self.send_raw(json.dumps(obj).encode() + b"\n")

    async def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def recv(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), WAIT)
        assert line.endswith(b"\n"), (
            f"stdout ended: {line[:200]!r}; stderr: {self.stderr()[-2000:]}"
        )
        value = json.loads(line)
        assert isinstance(value, dict) and value.get("jsonrpc") == "2.0"
        return value

    async def rest(self) -> bytes:
        """Everything else the gateway writes to stdout, up to its end."""
        assert self.process.stdout is not None
        return await asyncio.wait_for(self.process.stdout.read(), WAIT)

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    async def exit_code(self) -> int:
        return await asyncio.wait_for(self.process.wait(), WAIT)

    def stderr(self) -> str:
        if self.saved is not None:
            return self.saved
        return self.stderr_path.read_text(errors="replace")

    def events(self, name: str) -> list[dict[str, Any]]:
        found = []
        for line in self.stderr().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                event = json.loads(line)
                if isinstance(event, dict) and event.get("event") == name:
                    found.append(event)
        return found

    def pids(self) -> list[int]:
        return [int(p) for p in (self.tmp / "pids").read_text().split()]

    async def call(self, rid: Any, name: str, **arguments: Any) -> None:
        params = {"name": name, "arguments": arguments}
        await self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


@contextlib.asynccontextmanager
async def gateway(
    *child_args: str, options: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> AsyncIterator[Gateway]:
    with tempfile.TemporaryDirectory(prefix="stdio-") as tmp_name:
        tmp = Path(tmp_name)
        stderr_path = tmp / "stderr.log"
        argv = [sys.executable, "-m", "gateway", "stdio", *options, "--"]
        argv += [sys.executable, str(CHILD), "--pidfile", str(tmp / "pids"), *child_args]
        with stderr_path.open("wb") as err:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=err,
                cwd=ROOT,
                env=peer_env(env),
                limit=64 * 1024 * 1024,
            )
        gw = Gateway(process, stderr_path, tmp)
        try:
            yield gw
        finally:
            if process.returncode is None:
                process.kill()
                await asyncio.wait_for(process.wait(), WAIT)
            gw.saved = gw.stderr()


async def initialized(gw: Gateway) -> None:
    await gw.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "raw", "version": "1"}}})  # fmt: skip
    assert (await gw.recv())["id"] == 0


def gone(pid: int) -> bool:
    """The process no longer runs (absent; or a zombie of a process that is not ours)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


async def all_gone(pids: list[int]) -> bool:
    deadline = time.monotonic() + WAIT
    while not all(gone(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


# -- stdout, stderr, audit ----------------------------------------------------------------


async def test_stdout_carries_only_mcp_lines_and_the_child_stderr_passes_through() -> None:
    async with gateway() as gw:
        await initialized(gw)
        await gw.call(1, "echo", word="hello")
        assert json.loads((await gw.recv())["result"]["content"][0]["text"]) == {"word": "hello"}
        gw.close_stdin()
        assert await gw.rest() == b""
        assert await gw.exit_code() == 0
        assert "stdio-child: started" in gw.stderr()
        assert (
            gw.events("stdio.started") and gw.events("stdio.stopped")[0]["why"] == "client-closed"
        )


async def test_the_childs_stderr_can_go_to_a_file(tmp_path: Path) -> None:
    err = tmp_path / "child.err"
    async with gateway(options=("--child-stderr", str(err))) as gw:
        await initialized(gw)
        gw.close_stdin()
        assert await gw.exit_code() == 0
    assert "stdio-child: started" in err.read_text()
    assert "stdio-child: started" not in gw.stderr()


async def test_a_blocked_elicitation_is_audited_to_the_audit_file_and_the_server_declined(
    tmp_path: Path,
) -> None:
    audit = tmp_path / "audit.log"
    async with gateway(options=("--audit-file", str(audit), "--name", "raw")) as gw:
        await initialized(gw)
        await gw.call(1, "elicit")
        answer = await gw.recv()  # no elicitation/create before it: it was blocked
        assert answer["id"] == 1
        texts = [c["text"] for c in answer["result"]["content"]]
        assert json.loads(texts[0]) == {"action": "decline"}
        assert "blocked a request from raw for a password" in texts[1]
        gw.close_stdin()
        assert await gw.exit_code() == 0
    decisions = [e for e in read_log_events(audit) if e["event"] == "elicitation.decision"]
    assert [(d["action"], d["transport"], d["upstream"]) for d in decisions] == [
        ("block", "stdio", "raw")
    ]
    assert "elicitation.decision" not in gw.stderr()


async def test_garbage_on_the_childs_stdout_is_never_forwarded() -> None:
    async with gateway("--garbage") as gw:
        await initialized(gw)
        await gw.call(1, "echo", n=1)
        reply = await gw.recv()
        assert reply["id"] == 1 and "result" in reply
        gw.close_stdin()
        assert await gw.rest() == b""  # nothing else reached the client
        assert await gw.exit_code() == 0
    reasons = [e["reason"] for e in gw.events("stdio.server_line_dropped")]
    assert len(reasons) == 4  # two per answer (initialize, echo)
    assert {r.split(":")[0] for r in reasons} == {"JSON parse error"}
    assert "Server listening" not in json.dumps(reasons)  # the line itself is not logged


async def test_metrics_are_opt_in_and_count_the_decisions() -> None:
    port = free_port()
    async with gateway(options=("--metrics-listen", f"127.0.0.1:{port}")) as gw:
        await initialized(gw)
        await gw.call(1, "elicit")
        assert (await gw.recv())["id"] == 1
        url = f"http://127.0.0.1:{port}/metrics"
        text = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=WAIT).read())
        gw.close_stdin()
        assert await gw.exit_code() == 0
    wanted = 'gateway_elicitations_total{action="block",carrier="server-request",mode="form"} 1.0'
    assert wanted in text.decode(), text.decode()


async def test_sighup_reloads_the_policy(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_bytes((ROOT / "policies" / "default.yaml").read_bytes())
    async with gateway(options=("--policy", str(policy))) as gw:
        await initialized(gw)
        await gw.call(1, "elicit")
        assert (await gw.recv())["id"] == 1  # blocked: the answer, no elicitation before it
        policy.write_bytes((ROOT / "policies" / "audit-only.yaml").read_bytes())
        gw.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + WAIT
        while not gw.events("policy.reloaded"):
            assert time.monotonic() < deadline, gw.stderr()[-2000:]
            await asyncio.sleep(0.05)
        await gw.call(2, "elicit")
        shown = await gw.recv()  # shadow mode: forwarded to the user
        assert shown["method"] == "elicitation/create" and shown["id"].startswith("gq1.")
        gw.close_stdin()
        assert await gw.exit_code() == 0


# -- size -----------------------------------------------------------------------------------


async def test_a_10_mb_message_passes_both_ways() -> None:
    async with gateway() as gw:
        await initialized(gw)
        await gw.call(1, "big", size=BIG)
        big = await gw.recv()
        assert len(big["result"]["content"][0]["text"]) == BIG
        await gw.call(2, "echo", blob="y" * BIG)
        echoed = json.loads((await gw.recv())["result"]["content"][0]["text"])
        assert len(echoed["blob"]) == BIG
        gw.close_stdin()
        assert await gw.exit_code() == 0


async def test_a_message_over_the_cap_is_refused_clearly_and_the_conversation_goes_on() -> None:
    async with gateway(options=("--max-message-bytes", "1048576")) as gw:
        await initialized(gw)
        await gw.call(1, "echo", blob="y" * 2_000_000)
        refused = await gw.recv()
        assert refused["id"] is None and refused["error"]["code"] == errors.INVALID_REQUEST
        assert "at most 1048576 bytes" in refused["error"]["message"]
        await gw.call(2, "big", size=2_000_000)  # the server's answer is over the cap too
        await gw.call(3, "echo", n=3)
        assert (await gw.recv())["id"] == 3  # 2 was dropped (never forwarded), 3 passes
        gw.close_stdin()
        reply = json.loads(await gw.rest())  # call 2 is answered with an error at the end
        assert reply["id"] == 2 and reply["error"]["code"] == errors.GATEWAY_UPSTREAM_ERROR
        assert await gw.exit_code() == 0
    assert gw.events("stdio.server_line_dropped")


# -- endings ----------------------------------------------------------------------------------


async def test_the_child_dies_mid_call_calls_in_flight_get_errors_and_its_status_is_ours() -> None:
    async with gateway() as gw:
        await initialized(gw)
        await gw.call(1, "hang")
        await gw.call(2, "die", code=3)
        answers = {(await gw.recv())["id"]: None for _ in range(2)}
        assert set(answers) == {1, 2}
        assert await gw.exit_code() == 3
        assert await all_gone(gw.pids())
    assert gw.events("stdio.stopped")[0]["why"] == "child-exited"


async def test_errors_for_calls_in_flight_are_jsonrpc_errors_with_their_ids() -> None:
    async with gateway() as gw:
        await initialized(gw)
        await gw.call("a", "hang")
        await gw.call(2, "die", code=0)
        got = [await gw.recv(), await gw.recv()]
        assert {g["id"] for g in got} == {"a", 2}
        assert {g["error"]["code"] for g in got} == {errors.GATEWAY_UPSTREAM_ERROR}
        assert await gw.exit_code() == 0


async def test_the_client_closes_stdin_mid_stream() -> None:
    async with gateway() as gw:
        await initialized(gw)
        await gw.call(1, "hang")
        await gw.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","par')  # cut short
        gw.close_stdin()
        rest = [json.loads(x) for x in (await gw.rest()).splitlines()]
        # The cut line is not JSON: refused; the hanging call is answered when the child goes.
        assert [r["error"]["code"] for r in rest] == [
            errors.PARSE_ERROR,
            errors.GATEWAY_UPSTREAM_ERROR,
        ]
        assert await gw.exit_code() == 0
        assert await all_gone(gw.pids())


async def test_a_child_ignoring_eof_and_sigterm_is_killed_after_the_grace() -> None:
    options = ("--grace", "0.5")
    async with gateway("--ignore-sigterm", "--ignore-eof", "--helper", options=options) as gw:
        await initialized(gw)
        pids = gw.pids()
        gw.close_stdin()
        assert await gw.exit_code() == 128 + signal.SIGKILL
        # The child and the helper it started in its group: nothing survives the conversation.
        assert await all_gone(pids)
    stopped = gw.events("stdio.stopped")[0]
    assert stopped["child_status"] == 128 + signal.SIGKILL


async def test_sigterm_to_the_gateway_stops_the_child_group_at_once() -> None:
    async with gateway("--helper", options=("--grace", "30")) as gw:
        await initialized(gw)
        pids = gw.pids()
        started = time.monotonic()
        gw.process.send_signal(signal.SIGTERM)
        code = await gw.exit_code()
        assert code in (0, 128 + signal.SIGTERM)  # the child may exit on SIGTERM either way
        assert time.monotonic() - started < 25  # did not wait out the 30 s grace
        assert await all_gone(pids)
    assert gw.events("stdio.stopped")[0]["why"] == "signal"


# -- the child's environment ------------------------------------------------------------------


async def test_the_child_gets_only_the_listed_environment(tmp_path: Path) -> None:
    env_file = tmp_path / "child.env"
    env_file.write_text("# a comment\nFROM_FILE=1\nexport QUOTED='two words'\n")
    env = {"LISTED": "x", "GATEWAY_KEYS": "k" * 43, "UNLISTED_SECRET": "s"}
    options = ("--env", "LISTED", "--env", "GIVEN=y", "--env-file", str(env_file))
    async with gateway(options=options, env=env) as gw:
        await initialized(gw)
        await gw.call(1, "env")
        names = set(json.loads((await gw.recv())["result"]["content"][0]["text"]))
        gw.close_stdin()
        assert await gw.exit_code() == 0
    assert {"LISTED", "GIVEN", "FROM_FILE", "QUOTED"} <= names
    assert not names & {"GATEWAY_KEYS", "UNLISTED_SECRET", "PYTHONPATH"}
    # Python may add LC_CTYPE itself (PEP 538 locale coercion) inside the child.
    assert names <= {*MINIMAL_ENV, "LISTED", "GIVEN", "FROM_FILE", "QUOTED", "LC_CTYPE"}


# -- usage errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["stdio"], "give the server's command after --"),
        (["stdio", "--env", "GATEWAY_KEYS=x", "--", "true"], "never passed to the child"),
        (["stdio", "--env", "NOT_SET_ANYWHERE_42", "--", "true"], "not set"),
        (["stdio", "--", "/nonexistent/server"], "cannot start /nonexistent/server"),
        (["stdio", "--policy", "/nonexistent.yaml", "--", "true"], "nonexistent.yaml"),
        (["stdio", "--env-file", "/nonexistent.env", "--", "true"], "--env-file"),
        (["stdio", "--upstream", "http://h/mcp", "--", "true"], "not both"),
        (["stdio", "--upstream", "http://h/mcp", "--env", "A"], "--env: only for a COMMAND"),
        (["stdio", "--upstream", "http://h/mcp", "--cwd", "/"], "--cwd: only for a COMMAND"),
        (["stdio", "--upstream", "http://h/mcp", "--grace", "0"], "--grace: only for a COMMAND"),
        (["stdio", "--header", "A: b", "--", "true"], "--header: only for a remote upstream"),
        (["stdio", "--upstream", "ftp://h/mcp"], "--upstream: must be an http:// or https://"),
        (["stdio", "--upstream", "http://h/mcp", "--header", "Host: x"], "--header: header 'Host'"),
    ],
)
async def test_usage_errors_exit_2_with_one_line(args: list[str], message: str) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
        env=peer_env(),
    )
    out, err = await asyncio.wait_for(process.communicate(b""), WAIT)
    assert process.returncode == 2
    assert out == b""  # nothing but MCP on stdout, ever
    last = err.decode().strip().splitlines()[-1]
    assert last.startswith("elicitation-gateway: error:") and message in last


def test_a_remote_upstream_is_named_after_its_host_and_keeps_its_headers() -> None:
    args = _build_parser().parse_args(
        ["stdio", "--upstream", "https://mcp.example.com/mcp", "--header", "X-A: ${A}"]
    )
    options = options_from_args(args)
    assert options.command == () and options.upstream == "https://mcp.example.com/mcp"
    assert (options.name, options.headers) == ("mcp.example.com", ("X-A: ${A}",))


def test_everything_after_the_double_dash_belongs_to_the_command() -> None:
    args = _build_parser().parse_args(
        ["stdio", "--policy", "p.yaml", "--env", "A", "--", "srv", "--policy", "q", "--", "x"]
    )
    options = options_from_args(args)
    assert options.command == ("srv", "--policy", "q", "--", "x")
    assert (options.policy, options.env, options.name) == ("p.yaml", ("A",), "srv")
    assert options.grace == 2.0 and options.max_message_bytes == 16 * 1024 * 1024
