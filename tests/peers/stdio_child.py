"""A raw stdio MCP-ish server for the process-hygiene tests (no SDK: every byte it writes is
chosen by the test).

``python tests/peers/stdio_child.py [--ignore-sigterm] [--ignore-eof] [--garbage]
[--pidfile PATH] [--helper]``

It reads one JSON-RPC message per line and answers requests:

* ``initialize`` / ``ping`` / anything else: an empty-ish result;
* ``tools/call`` by name: ``echo`` (the arguments back), ``env`` (its environment's names),
  ``big`` (a text of ``arguments.size`` bytes), ``hang`` (no answer, ever), ``die`` (exits with
  status ``arguments.code`` at once, the call unanswered), ``elicit`` (sends a password
  ``elicitation/create`` first and answers the call with the answer it got).

``--garbage`` writes a non-JSON line and a strict-parser trap (a duplicate key) before every
answer; ``--ignore-sigterm`` ignores SIGTERM; ``--ignore-eof`` keeps running after stdin ends;
``--pidfile`` writes its pid (and, with ``--helper``, the pid of a helper process it starts in
its own process group, which ignores SIGTERM and sleeps) one per line. It writes one line to
stderr at start (``stdio-child: started``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

PASSWORD = {
    "mode": "form",
    "message": "Sign in again",
    "requestedSchema": {"type": "object", "properties": {"password": {"type": "string"}}},
}


def send(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def answer(args: argparse.Namespace, rid: Any, result: Any) -> None:
    if args.garbage:
        sys.stdout.write("Server listening on stdio\n")
        trap = '{"jsonrpc":"2.0","id":ID,"result":{},"result":{"x":1}}\n'
        sys.stdout.write(trap.replace("ID", json.dumps(rid)))
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def text(body: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": body}]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--ignore-eof", action="store_true")
    parser.add_argument("--garbage", action="store_true")
    parser.add_argument("--pidfile", default=None)
    parser.add_argument("--helper", action="store_true")
    args = parser.parse_args()
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pids = [os.getpid()]
    if args.helper:
        helper = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import signal,time;signal.signal(signal.SIGTERM,signal.SIG_IGN);time.sleep(600)",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        pids.append(helper.pid)
    if args.pidfile:
        with open(args.pidfile, "w") as handle:
            handle.write("".join(f"{p}\n" for p in pids))
    print("stdio-child: started", file=sys.stderr, flush=True)
    pending: dict[str, Any] = {}
    for raw in sys.stdin:
        msg = json.loads(raw)
        if "method" not in msg:  # an answer to our elicitation
            rid = pending.pop(str(msg.get("id")), None)
            if rid is not None:
                answer(args, rid, text(json.dumps(msg.get("result", msg.get("error")))))
            continue
        if "id" not in msg:
            continue
        rid, method, params = msg["id"], msg["method"], msg.get("params") or {}
        if method != "tools/call":
            answer(
                args,
                rid,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "serverInfo": {"name": "raw", "version": "1"},
                }
                if method == "initialize"
                else {},
            )
            continue
        name, arguments = params.get("name"), params.get("arguments") or {}
        if name == "echo":
            answer(args, rid, text(json.dumps(arguments)))
        elif name == "env":
            answer(args, rid, text(json.dumps(sorted(os.environ))))
        elif name == "big":
            answer(args, rid, text("x" * int(arguments.get("size", 10_000_000))))
        elif name == "hang":
            pass
        elif name == "die":
            sys.stdout.flush()
            os._exit(int(arguments.get("code", 3)))
        elif name == "elicit":
            pending["e1"] = rid
            send({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": PASSWORD})
    if args.ignore_eof:
        time.sleep(600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
