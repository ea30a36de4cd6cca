"""Static checks of the Dockerfile (parsed here), .dockerignore and deploy/compose.yaml.

No container engine runs on our machines, so the image is never built in tests; what can be
checked without one is: the stages, pins, user, entry point, health check (executed against a
local HTTP server), what is installed and copied, and the compose service settings.
"""

from __future__ import annotations

import http.server
import json
import re
import shlex
import socket
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.cli.main import _build_parser
from gateway.enforce.seal import KeyRing
from gateway.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "deploy" / "compose.yaml"
ENV_EXAMPLE = ROOT / "deploy" / "gateway.env.example"
DEFAULT_DRAIN_SECONDS = 20.0
COMPILERS = re.compile(
    r"\b(build-essential|gcc|g\+\+|clang|cc|make|cmake|rustc|cargo|gfortran|"
    r"python3?-dev|libc6?-dev|musl-dev)\b"
)
SECRET_NAMES = re.compile(r"(^|/)(\.env|.*\.env|keys?|.*\.key|.*\.pem|secrets?)(/|$)", re.I)
REAL_KEY = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{43,}(?![A-Za-z0-9_-])")
# name:X.Y.Z[-variant][@sha256:<64 hex>]
EXACT_IMAGE = re.compile(r"^[a-z0-9./_-]+:\d+\.\d+\.\d+(-[a-z0-9.-]+)?(@sha256:[0-9a-f]{64})?$")


# --- a small Dockerfile parser -----------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    keyword: str
    value: str
    line: int

    def exec_form(self) -> list[str]:
        parsed = json.loads(self.value)
        assert isinstance(parsed, list), f"line {self.line}: not an exec form"
        return [str(p) for p in parsed]


@dataclass
class Stage:
    image: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


@dataclass
class Dockerfile:
    args: dict[str, str]
    stages: list[Stage]


def parse_dockerfile(text: str) -> Dockerfile:
    """Logical instructions: comments dropped (also inside continuations), `\\` lines joined,
    global ARG defaults substituted into FROM."""
    logical: list[tuple[int, str]] = []
    buffer: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not buffer:
            start = number
        if stripped.endswith("\\"):
            buffer.append(stripped[:-1].strip())
            continue
        buffer.append(stripped)
        logical.append((start, " ".join(buffer)))
        buffer = []
    assert not buffer, "dangling line continuation at the end of the Dockerfile"

    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for number, line in logical:
        keyword, _, value = line.partition(" ")
        keyword = keyword.upper()
        value = value.strip()
        if keyword == "FROM":
            parts = value.split()
            image = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: global_args[m[1] or m[2]], parts[0])
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            stages.append(Stage(image=image, name=name))
        elif not stages:
            assert keyword == "ARG", f"line {number}: only ARG may precede FROM"
            arg_name, _, default = value.partition("=")
            global_args[arg_name] = default
        else:
            stages[-1].instructions.append(Instruction(keyword, value, number))
    return Dockerfile(global_args, stages)


def _env(stage: Stage) -> dict[str, str]:
    out: dict[str, str] = {}
    for instruction in stage.all("ENV"):
        for item in shlex.split(instruction.value):
            key, sep, value = item.partition("=")
            assert sep, f"line {instruction.line}: use ENV KEY=VALUE"
            out[key] = value
    return out


def _copy_parts(instruction: Instruction) -> tuple[dict[str, str], list[str], str]:
    """(flags, sources, destination) of a COPY/ADD."""
    words = (
        instruction.exec_form() if instruction.value.startswith("[") else instruction.value.split()
    )
    flags = dict(w[2:].partition("=")[::2] for w in words if w.startswith("--"))
    paths = [w for w in words if not w.startswith("--")]
    return flags, paths[:-1], paths[-1]


@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def final(dockerfile: Dockerfile) -> Stage:
    return dockerfile.stages[-1]


def test_parser_handles_comments_and_continuations() -> None:
    parsed = parse_dockerfile(
        "# syntax=docker/dockerfile:1\nARG BASE=python:3.11.7-slim\nFROM ${BASE} AS b\n"
        "RUN a \\\n    # a comment inside\n    && b\nFROM b\nUSER 1:1\n"
    )
    assert [s.image for s in parsed.stages] == ["python:3.11.7-slim", "b"]
    assert parsed.stages[0].name == "b"
    assert parsed.stages[0].all("RUN")[0].value == "a && b"
    assert parsed.stages[1].all("USER")[0].value == "1:1"


# --- Dockerfile ----------------------------------------------------------------------------------


def test_multi_stage_build(dockerfile: Dockerfile) -> None:
    assert len(dockerfile.stages) >= 2
    names = [s.name for s in dockerfile.stages[:-1]]
    assert "builder" in names


@pytest.mark.parametrize(
    ("image", "exact"),
    [
        ("python:3.11.7-slim-bookworm", True),
        ("python:3.11.7-slim-bookworm@sha256:" + "a" * 64, True),
        ("python:3.11-slim", False),
        ("python:3", False),
        ("python:latest", False),
        ("python", False),
        ("python:3.11.7-slim@sha256:short", False),
    ],
)
def test_exact_image_pattern(image: str, exact: bool) -> None:
    assert bool(EXACT_IMAGE.match(image)) is exact


def test_every_base_image_is_pinned_to_an_exact_version(dockerfile: Dockerfile) -> None:
    stage_names = {s.name for s in dockerfile.stages if s.name}
    external = [s.image for s in dockerfile.stages if s.image not in stage_names]
    assert external
    for image in external:
        assert EXACT_IMAGE.match(image), image
        assert ":latest" not in image


def test_base_python_satisfies_requires_python(dockerfile: Dockerfile) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    minimum = tuple(int(p) for p in project["requires-python"].removeprefix(">=").split("."))
    for stage in dockerfile.stages:
        match = re.match(r"^python:(\d+)\.(\d+)\.\d+", stage.image)
        if match:
            assert (int(match[1]), int(match[2])) >= minimum
    # Builder and final stage share the interpreter the venv points at.
    images = {s.image for s in dockerfile.stages}
    assert len(images) == 1


def test_builder_installs_the_project_non_editable_with_constraints(dockerfile: Dockerfile) -> None:
    builder = next(s for s in dockerfile.stages if s.name == "builder")
    run = " ".join(i.value for i in builder.all("RUN"))
    assert "-c constraints.txt" in run
    assert " -e " not in run and "--editable" not in run
    assert "[dev]" not in run
    assert "/opt/venv" in run


def test_final_stage_copies_only_the_venv_and_reference_policies(final: Stage) -> None:
    copies = [_copy_parts(i) for i in final.all("COPY")]
    assert not final.all("ADD")
    from_builder = [(src, dest) for flags, src, dest in copies if flags.get("from") == "builder"]
    assert from_builder == [(["/opt/venv"], "/opt/venv")]
    from_context = [src for flags, srcs, _ in copies if "from" not in flags for src in srcs]
    assert from_context == ["policies"]


def test_no_secret_is_copied(dockerfile: Dockerfile) -> None:
    for stage in dockerfile.stages:
        for instruction in stage.all("COPY") + stage.all("ADD"):
            flags, sources, _ = _copy_parts(instruction)
            for source in sources:
                assert not SECRET_NAMES.search(source), f"line {instruction.line}: {source}"
                if "from" not in flags:
                    assert (ROOT / source).exists(), f"line {instruction.line}: {source} missing"
        assert "GATEWAY_KEYS" not in _env(stage)
        for arg in stage.all("ARG"):
            assert "KEY" not in arg.value.upper() and "SECRET" not in arg.value.upper()


def test_no_compiler_is_installed(dockerfile: Dockerfile) -> None:
    assert COMPILERS.search("apt-get install -y build-essential")  # the pattern bites
    assert not COMPILERS.search("pip install --only-binary=:all: -c constraints.txt x.whl")
    for stage in dockerfile.stages:
        for run in stage.all("RUN"):
            assert not COMPILERS.search(run.value), f"line {run.line}: {run.value}"


def test_final_stage_runs_as_a_numeric_non_root_user(final: Stage) -> None:
    users = final.all("USER")
    assert users, "no USER in the final stage: the container would run as root"
    uid, _, gid = users[-1].value.partition(":")
    assert uid.isdigit() and int(uid) != 0
    assert gid.isdigit() and int(gid) != 0
    # Nothing after USER switches back.
    assert users[-1].line > max(i.line for i in final.all("COPY"))


def test_python_writes_no_bytecode_and_finds_the_venv(final: Stage) -> None:
    env = _env(final)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["PATH"].startswith("/opt/venv/bin:")
    assert env["HOME"] == "/tmp"  # the only writable place under a read-only root


def test_entrypoint_is_the_cli_and_cmd_parses(final: Stage) -> None:
    (entrypoint,) = final.all("ENTRYPOINT")
    assert entrypoint.exec_form() == ["elicitation-gateway"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
    assert "elicitation-gateway" in scripts
    (cmd,) = final.all("CMD")
    args = _build_parser().parse_args(cmd.exec_form())
    assert args.command == "serve"
    assert args.listen == "0.0.0.0:8080"
    (expose,) = final.all("EXPOSE")
    assert expose.value.split() == ["8080"]
    # Policy and config come from the mounted /etc/gateway, not from the baked copies.
    assert args.config.startswith("/etc/gateway/")
    volumes = json.loads(final.all("VOLUME")[0].value)
    assert "/etc/gateway" in volumes
    assert "/tmp" in volumes


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status = 200 if self.path == "/healthz" else 404
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def health_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _run_python_check(command: list[str], port: int) -> int:
    """Run a `python -c CODE` health check with its port pointed at `port`."""
    assert command[:2] == ["python", "-c"], command
    code = command[2].replace("127.0.0.1:8080", f"127.0.0.1:{port}")
    assert code != command[2], "the check does not target 127.0.0.1:8080"
    return subprocess.run([sys.executable, "-c", code], timeout=20, check=False).returncode


def test_healthcheck_uses_the_stdlib_and_works(final: Stage, health_server: int) -> None:
    (health,) = final.all("HEALTHCHECK")
    options, _, command = health.value.partition(" CMD ")
    assert "--interval=" in options and "--timeout=" in options
    argv = json.loads(command)
    assert "curl" not in command and "wget" not in command
    assert "/healthz" in argv[2]
    assert _run_python_check(argv, health_server) == 0
    # Against a port with nothing listening it fails (the check can fail).
    assert _run_python_check(argv, _closed_port()) != 0


def _closed_port() -> int:
    """A free port number with nothing listening on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_dockerignore_keeps_the_context_small_and_secret_free() -> None:
    patterns = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    for required in (
        ".venv",
        ".git",
        "**/node_modules",
        "tests/conformance/node_modules",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".hypothesis",
        "**/__pycache__",
        "deploy/gateway.env",
    ):
        assert required in patterns, required
    # Nothing the builder copies is excluded.
    for needed in ("pyproject.toml", "constraints.txt", "README.md", "gateway", "policies"):
        assert needed not in patterns


# --- compose -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return data


def test_compose_services_are_locked_down(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"gateway", "upstream"}
    for name, service in services.items():
        assert service["read_only"] is True, name
        uid, _, gid = str(service["user"]).partition(":")
        assert int(uid) == 10001 and int(gid) == 10001, name
        assert "/tmp" in service["tmpfs"], name
        assert service["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in service["security_opt"], name
        assert service["healthcheck"]["test"][0] == "CMD", name
        assert service["build"]["dockerfile"] == "Dockerfile"
        assert (COMPOSE.parent / service["build"]["context"] / "Dockerfile").is_file()
        assert not str(service["image"]).endswith(":latest")


def test_only_the_demo_image_carries_the_demo_extra(
    dockerfile: Dockerfile, compose: dict[str, Any]
) -> None:
    """The production image is built without extras (no MCP SDK); compose's demo upstream, which
    is written with the SDK, asks for ``demo`` under an image name of its own."""
    builder = next(s for s in dockerfile.stages if s.name == "builder")
    assert [a.value for a in builder.all("ARG")] == ['GATEWAY_EXTRAS=""']
    run = " ".join(i.value for i in builder.all("RUN"))
    assert '"${wheel}${GATEWAY_EXTRAS:+[${GATEWAY_EXTRAS}]}"' in run
    upstream, gateway = compose["services"]["upstream"], compose["services"]["gateway"]
    assert upstream["build"]["args"] == {"GATEWAY_EXTRAS": "demo"}
    assert "args" not in gateway["build"]
    assert upstream["image"] != gateway["image"]


def test_compose_gateway_fronts_the_demo_upstream(compose: dict[str, Any]) -> None:
    gateway = compose["services"]["gateway"]
    upstream = compose["services"]["upstream"]
    args = _build_parser().parse_args(gateway["command"])
    assert args.command == "serve"
    assert args.upstream == "http://upstream:8000/mcp"
    assert upstream["entrypoint"] == ["python", "-m", "gateway.demo.upstream"]
    assert upstream["command"][upstream["command"].index("--port") + 1] == "8000"
    assert args.policy.startswith("/etc/gateway/policies/")
    mounts = {v.split(":")[1]: v for v in gateway["volumes"]}
    assert mounts["/etc/gateway/policies"].endswith(":ro")
    assert (
        COMPOSE.parent / mounts["/etc/gateway/policies"].split(":")[0] / "default.yaml"
    ).is_file()
    assert gateway["depends_on"]["upstream"]["condition"] == "service_healthy"
    grace = float(str(gateway["stop_grace_period"]).removesuffix("s"))
    assert grace > DEFAULT_DRAIN_SECONDS


def test_compose_healthchecks_work(compose: dict[str, Any], health_server: int) -> None:
    test = compose["services"]["gateway"]["healthcheck"]["test"]
    assert _run_python_check(test[1:], health_server) == 0


def test_compose_keys_come_from_the_env_file_only(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        environment = service.get("environment") or {}
        assert "GATEWAY_KEYS" not in json.dumps(environment), name
    assert compose["services"]["gateway"]["env_file"] == ["gateway.env"]


@pytest.mark.parametrize(
    "path",
    [DOCKERFILE, COMPOSE, ENV_EXAMPLE, ROOT / "deploy" / "kubernetes" / "secret.yaml"],
    ids=lambda p: p.name,
)
def test_no_real_key_in_deployment_files(path: Path) -> None:
    # A 32-byte key is 43 base64url characters; nothing that long and key-shaped may appear.
    assert REAL_KEY.search("GATEWAY_KEYS=" + "A" * 43)
    found = REAL_KEY.findall(path.read_text(encoding="utf-8"))
    assert not found, f"{path.name}: looks like a real key"


def test_env_example_has_no_usable_key() -> None:
    values = {}
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    assert set(values) == {"GATEWAY_KEYS"}
    if values["GATEWAY_KEYS"]:
        with pytest.raises(ConfigError):
            KeyRing.parse(values["GATEWAY_KEYS"], "GATEWAY_KEYS")
    # The key-generation command it documents produces a key the gateway accepts.
    command = next(
        line.strip().removeprefix("#").strip()
        for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines()
        if "token_bytes" in line
    )
    argv = shlex.split(command)
    assert argv[0] == "python"
    key = subprocess.run(
        [sys.executable, *argv[1:]], capture_output=True, text=True, timeout=20, check=True
    ).stdout.strip()
    ring = KeyRing.parse(key, "generated")
    assert not ring.generated
