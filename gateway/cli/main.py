"""Command line: ``elicitation-gateway {serve,stdio,check,validate-policy,demo}``."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from gateway import __version__

# As gateway.proxy.config (not imported: start-up).
LOG_LEVELS = ("debug", "info", "warning", "error")


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line naming the flag, exit 2 (the full usage is in ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="elicitation-gateway",
        description="Security gateway for MCP elicitation (reverse proxy + policy engine).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the reverse proxy")
    serve.add_argument("--listen", help="HOST:PORT to listen on (default 127.0.0.1:8080)")
    serve.add_argument(
        "--upstream", help="URL of the single upstream MCP endpoint (served at /mcp)"
    )
    serve.add_argument(
        "--policy", help="policy YAML file (default: the shipped policies/default.yaml)"
    )
    serve.add_argument("--config", help="gateway YAML config (several upstreams, limits, timeouts)")
    up = serve.add_argument_group(
        "the --upstream's connection (with --config: upstreams.<name>.tls, .proxy, …)"
    )
    up.add_argument("--upstream-ca-file", metavar="FILE", help="PEM CA bundle that signs it")
    up.add_argument(
        "--upstream-cert-file", metavar="FILE", help="client certificate (PEM) for mTLS"
    )
    up.add_argument("--upstream-key-file", metavar="FILE", help="the client certificate's key")
    up.add_argument(
        "--upstream-server-name", metavar="NAME", help="TLS name (SNI, verified) if not the URL's"
    )
    up.add_argument(
        "--upstream-tls-verify",
        choices=("on", "off"),
        default=None,
        help="verify its certificate (default on; off only for tests)",
    )
    up.add_argument(
        "--upstream-proxy",
        metavar="URL",
        help="egress proxy http://[user:pass@]host:port, 'none' (direct) or 'env' (default: "
        "HTTPS_PROXY / HTTP_PROXY / NO_PROXY)",
    )
    up.add_argument(
        "--upstream-max-connections",
        type=int,
        default=None,
        metavar="N",
        help="connections open to it at once, per worker (default 1024)",
    )
    up.add_argument(
        "--upstream-header",
        action="append",
        default=None,
        metavar="'NAME: VALUE'",
        help="static header sent to it (repeatable); write secrets as ${ENV_NAME} or "
        "${file:/path}, never literally",
    )
    serve.add_argument(
        "--demo-upstream",
        action="store_true",
        help="start the bundled demo MCP server and use it as the upstream",
    )
    serve.add_argument(
        "--key-file",
        default=None,
        help="sealing keys, one base64url key per line, newest first (else $GATEWAY_KEYS)",
    )
    serve.add_argument(
        "--watch-policy",
        type=float,
        default=None,
        metavar="SECONDS",
        help="also reload the policy when its file changes (checked every SECONDS)",
    )
    serve.add_argument(
        "--audit-file",
        default=None,
        help="append the audit trail (gateway.audit) to this file instead of stdout",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes sharing the port (default: one per core)",
    )
    serve.add_argument(
        "--drain-seconds",
        type=float,
        default=None,
        help="on SIGTERM, how long requests in flight may take to finish (default 20)",
    )
    serve.add_argument(
        "--log-level",
        default=None,
        type=str.lower,
        choices=LOG_LEVELS,
        help="debug, info (default), warning or error",
    )

    stdio = sub.add_parser(
        "stdio",
        help="protect an MCP server for a desktop client: speak MCP on stdin/stdout, run "
        "COMMAND (or reach --upstream URL) as the upstream",
        usage="%(prog)s [options] (-- COMMAND [ARGS...] | --upstream URL [--header 'NAME: VALUE'])",
    )
    stdio.add_argument(
        "--policy", help="policy YAML file (default: the shipped policies/default.yaml)"
    )
    stdio.add_argument(
        "--upstream",
        default=None,
        metavar="URL",
        help="a remote Streamable HTTP MCP server (http:// or https://) instead of COMMAND",
    )
    stdio.add_argument(
        "--header",
        action="append",
        metavar="'NAME: VALUE'",
        help="with --upstream: a static header sent on every request; ${NAME} is the "
        "environment variable, ${file:/path} a file's content; repeatable; never logged",
    )
    stdio.add_argument(
        "--audit-file", default=None, help="append the audit trail here (default: stderr)"
    )
    stdio.add_argument(
        "--env",
        action="append",
        metavar="NAME[=VALUE]",
        help="pass this variable to COMMAND (its value from the gateway's environment unless "
        "given); repeatable. COMMAND gets only these, --env-file's and HOME, LOGNAME, PATH, "
        "SHELL, TERM, USER",
    )
    stdio.add_argument(
        "--env-file",
        action="append",
        metavar="FILE",
        help="NAME=VALUE lines passed to COMMAND's environment; repeatable",
    )
    stdio.add_argument(
        "--child-stderr",
        default=None,
        metavar="FILE",
        help="append COMMAND's stderr here (default: passed through to the gateway's stderr)",
    )
    stdio.add_argument("--cwd", default=None, help="COMMAND's working directory")
    stdio.add_argument(
        "--name",
        default=None,
        help="the server's name in audit lines, notices and per-server "
        "policy overrides (default: COMMAND's file name, or the --upstream URL's host)",
    )
    stdio.add_argument(
        "--grace",
        type=float,
        default=None,
        metavar="SECONDS",
        help="after the client closes stdin: how long COMMAND may take to exit before SIGTERM, "
        "and after SIGTERM before SIGKILL (default 2)",
    )
    stdio.add_argument(
        "--max-message-bytes",
        type=int,
        default=None,
        help="longest JSON-RPC line read from either side (default 16777216)",
    )
    stdio.add_argument(
        "--metrics-listen",
        default=None,
        metavar="HOST:PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics (default: off)",
    )
    stdio.add_argument(
        "--log-level",
        default=None,
        type=str.lower,
        choices=LOG_LEVELS,
        help="debug, info (default), warning or error",
    )
    stdio.add_argument(
        "server_command", nargs=argparse.REMAINDER, metavar="COMMAND", help="-- COMMAND [ARGS...]"
    )

    check = sub.add_parser("check", help="evaluate elicitations (JSON lines on stdin)")
    check.add_argument("--policy", required=True, help="policy YAML file")
    check.add_argument(
        "--capabilities", default="form,url", help="declared modes, e.g. form,url (default)"
    )
    check.add_argument("--server", default=None, help="upstream name for per-server overrides")
    check.add_argument(
        "--era",
        choices=("handshake", "modern"),
        default=None,
        help="protocol era of the requests (era-specific rules; default: off)",
    )
    check.add_argument(
        "--explain",
        action="store_true",
        help="after each verdict line, one line per finding for people: action, reason, path, "
        "concept, signal, lexicon term and language",
    )

    demo = sub.add_parser("demo", help="show the gateway at work on benign and phishing requests")
    demo.add_argument(
        "--policy", default=None, help="policy YAML file (default: the shipped default policy)"
    )

    validate = sub.add_parser("validate-policy", help="validate a policy file")
    validate.add_argument("file", help="policy YAML file")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "serve":
        if argv is None:  # started as a command, not called from Python
            from gateway.proxy.allocator import reexec_with_system_allocator  # noqa: PLC0415

            reexec_with_system_allocator()  # returns only when it is not wanted
        # Until `serve` takes them over (it remembers them from its first line), SIGHUP and
        # SIGUSR1 must not end the process; nothing is loaded or opened yet, so nothing is lost.
        for signum in (signal.SIGHUP, signal.SIGUSR1):
            signal.signal(signum, signal.SIG_IGN)
        from gateway.proxy.serve import run_serve  # noqa: PLC0415 - keep `check` start-up light

        return run_serve(args)
    if args.command == "stdio":
        from gateway.stdio.run import run_stdio  # noqa: PLC0415 - keep `check` start-up light

        return run_stdio(args)
    if args.command == "check":
        from gateway.cli.check import run_check  # noqa: PLC0415

        return run_check(
            policy_path=args.policy,
            capabilities=args.capabilities,
            server=args.server,
            era=args.era,
            explain=args.explain,
            stdin=sys.stdin,
            stdout=sys.stdout,
            stderr=sys.stderr,
        )
    if args.command == "demo":
        from gateway.errors import ConfigError  # noqa: PLC0415
        from gateway.proxy.serve import require_demo_extra  # noqa: PLC0415

        try:
            require_demo_extra("the demo")
        except ConfigError as exc:
            print(f"elicitation-gateway: error: {exc}", file=sys.stderr)
            return 2
        from gateway.demo.run import run_demo  # noqa: PLC0415

        return run_demo(args.policy, sys.stdout, sys.stderr)
    if args.command == "validate-policy":
        from gateway.cli.check import run_validate  # noqa: PLC0415

        return run_validate(args.file, stdout=sys.stdout, stderr=sys.stderr)
    return 2  # pragma: no cover - argparse enforces the choices


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
