"""Render ``configmap.yaml``: the gateway config plus a policy file, byte for byte.

    python deploy/kubernetes/render_configmap.py            # rewrite configmap.yaml
    python deploy/kubernetes/render_configmap.py --check    # exit 1 when configmap.yaml is stale
    python deploy/kubernetes/render_configmap.py --policy policies/strict.yaml --stdout

Kustomize refuses files outside its directory, so the policy is copied into the manifest by this
script instead of a ``configMapGenerator`` (which would also add a hash suffix and restart the pods
on every change; the gateway reloads a changed policy by itself with ``--watch-policy``).
The policy is stored under the key ``default.yaml`` whatever its source file, because
``gateway.yaml`` refers to it by that name.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEFAULT_POLICY = ROOT / "policies" / "default.yaml"
OUTPUT = HERE / "configmap.yaml"
NAME = "elicitation-gateway-config"
POLICY_KEY = "default.yaml"

# The gateway config mounted at /etc/gateway/gateway.yaml. The policy path is relative to this
# file's folder (the ConfigMap mount). Flags in deployment.yaml override these values.
GATEWAY_CONFIG = """\
# Gateway config (every key: README.md, "Configuration"). Mounted at /etc/gateway/gateway.yaml.
# Command-line flags in deployment.yaml (--listen, --watch-policy, ...) override these values.
policy: default.yaml                  # relative to this file: /etc/gateway/default.yaml
upstreams:                            # served at /servers/<name>/mcp
  # Replace with your MCP server(s), and keep networkpolicy.yaml's egress rules in step.
  example:
    url: http://mcp-upstream.mcp-servers.svc.cluster.local:8000/mcp
timeouts:
  connect: 5
  response: 60
  idle: 300
security:
  # Off for a 0.0.0.0 listener by default ("auto"); list the Service names clients use to turn
  # the Host/Origin guard on, e.g. [elicitation-gateway.elicitation-gateway.svc:8080].
  dns_rebinding_protection: auto
  allowed_hosts: []
  allowed_origins: []
log_level: info
"""

HEADER = """\
# GENERATED from {source} by deploy/kubernetes/render_configmap.py. Do not edit the policy here:
# edit the policy file and re-run the script (the test suite fails when this file is stale).
# The gateway re-reads the policy when the mounted file changes (--watch-policy); a change to
# gateway.yaml needs a rollout (kubectl rollout restart deployment/elicitation-gateway).
"""


class _LiteralDumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks, so the policy stays readable in the manifest."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralDumper.add_representer(str, _str)


def render(policy_path: Path = DEFAULT_POLICY) -> str:
    """The ConfigMap manifest (YAML text) holding ``gateway.yaml`` and the policy file."""
    policy = policy_path.read_text(encoding="utf-8")
    try:
        source = policy_path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        source = policy_path.name
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": NAME,
            "labels": {
                "app.kubernetes.io/name": "elicitation-gateway",
                "app.kubernetes.io/component": "config",
            },
        },
        "data": {"gateway.yaml": GATEWAY_CONFIG, POLICY_KEY: policy},
    }
    body = yaml.dump(
        manifest, Dumper=_LiteralDumper, sort_keys=False, allow_unicode=True, width=100
    )
    return HEADER.format(source=source) + body


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", type=Path, default=DEFAULT_POLICY, help="policy file to embed")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="exit 1 if configmap.yaml is stale")
    group.add_argument("--stdout", action="store_true", help="print instead of writing the file")
    args = parser.parse_args(argv)
    text = render(args.policy)
    if args.stdout:
        sys.stdout.write(text)
        return 0
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT}: stale; run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
