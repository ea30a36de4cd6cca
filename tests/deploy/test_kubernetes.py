"""Kubernetes manifests: offline schema validation (kubernetes-validate, strict) and our own rules.

The schema checks run with the network switched off (any socket connect or name lookup fails the
test), so they prove the validator uses its bundled schemas only.
"""

from __future__ import annotations

import argparse
import copy
import functools
import importlib.util
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from gateway.cli.main import _build_parser
from gateway.enforce.seal import KeyRing
from gateway.errors import ConfigError
from gateway.policy.loader import load_policy
from gateway.proxy.config import load_settings

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
# The oldest and the newest minor versions the manifests are written for.
K8S_VERSIONS = ("1.30.0", "1.37.0")
POD_LABELS = {
    "app.kubernetes.io/name": "elicitation-gateway",
    "app.kubernetes.io/component": "gateway",
}
CONTAINER = ("spec", "template", "spec", "containers", 0)
DEFAULT_DRAIN_SECONDS = 20.0  # the gateway's default for --drain-seconds


def _manifest_files() -> list[Path]:
    return sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


@functools.cache
def _parsed() -> tuple[tuple[str, dict[str, Any]], ...]:
    return tuple(
        (p.name, d)
        for p in _manifest_files()
        for d in yaml.safe_load_all(p.read_text(encoding="utf-8"))
        if d
    )


def _all_documents() -> list[tuple[str, dict[str, Any]]]:
    """Every manifest document (fresh copies: tests may mutate them)."""
    return copy.deepcopy(list(_parsed()))


def _one(kind: str) -> dict[str, Any]:
    found = [d for _, d in _all_documents() if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def _pod_spec() -> dict[str, Any]:
    spec: dict[str, Any] = _one("Deployment")["spec"]["template"]["spec"]
    return spec


def _container() -> dict[str, Any]:
    containers = _pod_spec()["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


def _serve_args() -> argparse.Namespace:
    """The container's arguments parsed by the gateway's own command line parser."""
    args = _container()["args"]
    assert "command" not in _container(), "keep the image's ENTRYPOINT (elicitation-gateway)"
    return _build_parser().parse_args(args)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("network access during an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_network_guard_is_effective(no_network: None) -> None:
    with pytest.raises(AssertionError, match="network access"):
        socket.create_connection(("127.0.0.1", 9))
    with pytest.raises(AssertionError, match="network access"):
        socket.getaddrinfo("example.com", 443)


# --- schema validation -------------------------------------------------------------------------


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize(("name", "doc"), _all_documents(), ids=lambda v: str(v)[:40])
def test_manifest_validates_against_kubernetes_schema(
    name: str, doc: dict[str, Any], version: str, no_network: None
) -> None:
    validated = kubernetes_validate.validate(doc, version, strict=True)
    assert validated == version.rsplit(".", 1)[0], f"{name}: validated against {validated}"


def test_every_expected_manifest_exists() -> None:
    kinds = sorted(d["kind"] for _, d in _all_documents())
    assert kinds == sorted(
        [
            "ConfigMap",
            "Deployment",
            "HorizontalPodAutoscaler",
            "Namespace",
            "NetworkPolicy",
            "PodDisruptionBudget",
            "Secret",
            "Service",
        ]
    )


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "replica"), 2),  # unknown field (typo)
        (("spec", "replicas"), "two"),  # wrong type
        ((*CONTAINER, "securityContext", "readOnlyRootFileSystem"), True),  # misspelt field
        ((*CONTAINER, "resources", "limits", "cpu"), ["1"]),  # wrong type, deep down
    ],
)
def test_schema_validation_rejects_broken_deployments(
    path: tuple[str | int, ...], value: object, no_network: None
) -> None:
    doc = _one("Deployment")
    node: Any = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, K8S_VERSIONS[-1], strict=True)


# --- kustomize ---------------------------------------------------------------------------------


def _kustomization() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((K8S / "kustomization.yaml").read_text(encoding="utf-8"))
    return data


def test_kustomization_lists_every_manifest_but_the_example_secret() -> None:
    k = _kustomization()
    assert k["apiVersion"] == "kustomize.config.k8s.io/v1beta1"
    assert k["kind"] == "Kustomization"
    assert k["namespace"] == _one("Namespace")["metadata"]["name"]
    listed = set(k["resources"])
    assert all((K8S / r).is_file() for r in listed)
    assert listed == {p.name for p in _manifest_files()} - {"secret.yaml"}


@pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl (with built-in kustomize) not installed"
)
def test_kustomize_build_renders_valid_namespaced_resources(no_network: None) -> None:
    # kubectl runs as a subprocess: the socket guard above does not reach it, but `kustomize`
    # builds from local files only.
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    out = subprocess.run(
        [kubectl, "kustomize", str(K8S)], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert len(docs) == len(_kustomization()["resources"])
    namespace = _kustomization()["namespace"]
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSIONS[-1], strict=True)
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == namespace, doc["kind"]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "elicitation-gateway:0.1.0"


# --- deployment rules --------------------------------------------------------------------------


def test_replicas_and_rollout_keep_capacity() -> None:
    spec = _one("Deployment")["spec"]
    assert spec["replicas"] >= 2
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert spec["selector"]["matchLabels"] == POD_LABELS
    assert spec["template"]["metadata"]["labels"] == POD_LABELS


def test_every_container_has_requests_and_limits() -> None:
    pod = _pod_spec()
    for container in pod["containers"] + pod.get("initContainers", []):
        resources = container["resources"]
        for section in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(resources[section]), (container["name"], section)


def test_probes_use_the_health_endpoints() -> None:
    c = _container()
    port_names = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert port_names == {"http": 8080}
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["startupProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert c[probe]["httpGet"]["port"] in ("http", 8080)
    startup = c["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 30


def test_restricted_security_context() -> None:
    pod = _pod_spec()
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for c in pod["containers"]:
        sc = c["securityContext"]
        assert sc["runAsNonRoot"] is True
        assert sc["runAsUser"] == 10001
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
        assert sc.get("privileged", False) is False


def test_image_is_pinned() -> None:
    image = _container()["image"]
    name, _, tag = image.rpartition(":")
    assert "@sha256:" in image or (name and tag and tag != "latest"), image
    assert _container()["imagePullPolicy"] != "Always" or "@sha256:" in image


def test_tmp_is_the_only_writable_mount() -> None:
    volumes = {v["name"]: v for v in _pod_spec()["volumes"]}
    mounts = {m["mountPath"]: m for m in _container()["volumeMounts"]}
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
    for path, mount in mounts.items():
        if path != "/tmp":
            assert mount["readOnly"] is True, path
        assert "subPath" not in mount, f"{path}: subPath mounts never see ConfigMap/Secret updates"


def test_arguments_parse_with_the_real_cli() -> None:
    args = _serve_args()
    assert args.command == "serve"
    assert args.listen == "0.0.0.0:8080"
    assert args.watch_policy == 5
    assert args.upstream is None
    assert args.config is not None


def test_secret_is_mounted_as_the_key_file() -> None:
    args = _serve_args()
    secret_name = _one("Secret")["metadata"]["name"]
    volumes = {v["name"]: v for v in _pod_spec()["volumes"]}
    key_volume = next(name for name, v in volumes.items() if "secret" in v)
    secret = volumes[key_volume]["secret"]
    assert secret["secretName"] == secret_name
    mount = next(m for m in _container()["volumeMounts"] if m["name"] == key_volume)
    files = {f"{mount['mountPath']}/{item['path']}": item["key"] for item in secret["items"]}
    assert args.key_file in files, f"--key-file {args.key_file} is not the mounted Secret file"
    assert files[args.key_file] in _one("Secret")["stringData"]
    assert secret["defaultMode"] & 0o007 == 0, "the key file must not be world-readable"
    env_names = {e["name"] for e in _container().get("env", [])}
    assert "GATEWAY_KEYS" not in env_names, "keys come from the mounted file, not the environment"


def test_config_map_is_mounted_where_the_config_flag_points() -> None:
    args = _serve_args()
    cm = _one("ConfigMap")
    volumes = {v["name"]: v for v in _pod_spec()["volumes"]}
    config_volume = next(name for name, v in volumes.items() if "configMap" in v)
    assert volumes[config_volume]["configMap"]["name"] == cm["metadata"]["name"]
    mount = next(m for m in _container()["volumeMounts"] if m["name"] == config_volume)
    assert mount["mountPath"] == "/etc/gateway"
    config_path = Path(args.config)
    assert config_path.parent == Path(mount["mountPath"])
    assert config_path.name in cm["data"]


def test_grace_period_outlasts_pre_stop_and_drain() -> None:
    args = _serve_args()
    drain = getattr(args, "drain_seconds", None)
    drain = DEFAULT_DRAIN_SECONDS if drain is None else drain
    pre_stop = 0.0
    hook = _container().get("lifecycle", {}).get("preStop")
    if hook is not None:
        command = hook["exec"]["command"]
        assert Path(command[0]).name == "sleep", shlex.join(command)
        pre_stop = float(command[1])
    grace = _pod_spec()["terminationGracePeriodSeconds"]
    assert grace > pre_stop + drain, (grace, pre_stop, drain)


def test_workers_fit_the_cpu_limit() -> None:
    workers = getattr(_serve_args(), "workers", None)
    assert workers is not None, "set --workers: the default counts the node's cores, not the limit"
    cpu = str(_container()["resources"]["limits"]["cpu"])
    limit = float(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)
    assert 1 <= workers <= max(1, round(limit))


def test_prometheus_annotations_match_the_port() -> None:
    annotations = _one("Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == "/metrics"
    assert int(annotations["prometheus.io/port"]) == _container()["ports"][0]["containerPort"]


def test_pods_spread_across_nodes() -> None:
    pod = _pod_spec()
    spreads = pod["topologySpreadConstraints"]
    assert any(s["topologyKey"] == "kubernetes.io/hostname" for s in spreads)
    for s in spreads:
        assert s["labelSelector"]["matchLabels"] == POD_LABELS
    anti = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert anti[0]["podAffinityTerm"]["labelSelector"]["matchLabels"] == POD_LABELS


# --- companions --------------------------------------------------------------------------------


def test_service_targets_the_pods() -> None:
    svc = _one("Service")["spec"]
    assert svc["selector"] == POD_LABELS
    assert svc.get("sessionAffinity", "None") == "None"  # stateless replicas
    assert [p["targetPort"] for p in svc["ports"]] == ["http"]


def test_hpa_scales_the_deployment_on_cpu() -> None:
    hpa = _one("HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    ref = hpa["spec"]["scaleTargetRef"]
    assert (ref["kind"], ref["name"]) == ("Deployment", _one("Deployment")["metadata"]["name"])
    assert hpa["spec"]["minReplicas"] >= 2
    assert (
        hpa["spec"]["minReplicas"]
        <= _one("Deployment")["spec"]["replicas"]
        <= hpa["spec"]["maxReplicas"]
    )
    assert [m["resource"]["name"] for m in hpa["spec"]["metrics"]] == ["cpu"]


def test_pdb_keeps_one_pod() -> None:
    pdb = _one("PodDisruptionBudget")["spec"]
    assert pdb["minAvailable"] == 1
    assert pdb["selector"]["matchLabels"] == POD_LABELS
    assert pdb["minAvailable"] < _one("Deployment")["spec"]["replicas"]


def test_network_policy_allows_only_the_gateway_port_in_and_dns_plus_upstream_out() -> None:
    np = _one("NetworkPolicy")["spec"]
    assert np["podSelector"]["matchLabels"] == POD_LABELS
    assert set(np["policyTypes"]) == {"Ingress", "Egress"}
    for rule in np["ingress"]:
        assert rule["from"], "an ingress rule without `from` admits everyone"
        assert [(p["port"], p["protocol"]) for p in rule["ports"]] == [(8080, "TCP")]
    egress_ports = set()
    for rule in np["egress"]:
        assert rule["to"], "an egress rule without `to` allows every destination"
        assert rule["ports"], "an egress rule without ports allows every port"
        egress_ports |= {(p["port"], p["protocol"]) for p in rule["ports"]}
    assert {(53, "UDP"), (53, "TCP")} <= egress_ports
    # The upstream declared in gateway.yaml is reachable through one of the rules.
    settings = yaml.safe_load(_one("ConfigMap")["data"]["gateway.yaml"])
    upstream_ports = {
        int(u["url"].rsplit(":", 1)[1].split("/")[0]) for u in settings["upstreams"].values()
    }
    assert upstream_ports <= {port for port, _ in egress_ports}


def test_namespace_enforces_restricted_pod_security() -> None:
    labels = _one("Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


# --- ConfigMap content -------------------------------------------------------------------------


def test_configmap_policy_equals_the_policy_file() -> None:
    data = _one("ConfigMap")["data"]
    assert data["default.yaml"] == (ROOT / "policies" / "default.yaml").read_text(encoding="utf-8")


def test_configmap_is_up_to_date_with_the_render_script() -> None:
    result = subprocess.run(
        [sys.executable, str(K8S / "render_configmap.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_render_script_detects_a_stale_configmap(tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("version: 1\nenforce: false\n", encoding="utf-8")
    rendered = subprocess.run(
        [sys.executable, str(K8S / "render_configmap.py"), "--policy", str(other), "--stdout"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    doc = yaml.safe_load(rendered)
    assert doc["data"]["default.yaml"] == "version: 1\nenforce: false\n"
    assert rendered != (K8S / "configmap.yaml").read_text(encoding="utf-8")


def test_configmap_files_load_with_the_gateway(tmp_path: Path) -> None:
    """gateway.yaml and the policy, laid out as the ConfigMap mount, load with the real loaders
    and with the container's flags applied on top."""
    for key, value in _one("ConfigMap")["data"].items():
        (tmp_path / key).write_text(value, encoding="utf-8")
    args = _serve_args()
    overrides: dict[str, Any] = {
        "listen": args.listen,
        "policy_watch_interval": args.watch_policy,
    }
    for flag in ("workers", "drain_seconds"):
        if getattr(args, flag, None) is not None:
            overrides[flag] = getattr(args, flag)
    settings = load_settings(str(tmp_path / Path(args.config).name), overrides)
    assert settings.listen == "0.0.0.0:8080"
    assert Path(settings.policy) == tmp_path / "default.yaml"
    assert settings.upstreams
    policy = load_policy(settings.policy)
    assert policy is not None


def test_example_secret_holds_no_usable_key() -> None:
    secret = _one("Secret")
    assert "data" not in secret, "use stringData with a placeholder, never encoded real keys"
    for value in secret["stringData"].values():
        assert "PLACEHOLDER" in value
        with pytest.raises(ConfigError):
            KeyRing.parse(value, "secret.yaml")


def _render_module() -> Any:
    spec = importlib.util.spec_from_file_location("render_configmap", K8S / "render_configmap.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "policy",
    [
        "version: 1\n",
        "version: 1",  # no final newline
        "version: 1\n\n\n",  # trailing blank lines
        "  # indented first line\nversion: 1\n",
        "version: 1   \nenforce: true\t\n",  # trailing whitespace
        'description: "déjà vu — 検査"\nversion: 1\n',
        "version: 1\r\nenforce: true\r\n",  # CRLF: newlines read as Python reads text
    ],
)
def test_render_keeps_any_policy_text_exact(policy: str, tmp_path: Path) -> None:
    source = tmp_path / "policy.yaml"
    source.write_bytes(policy.encode("utf-8"))
    text = _render_module().render(source)
    doc = yaml.safe_load(text)
    assert doc["data"]["default.yaml"] == source.read_text(encoding="utf-8")
    kubernetes_validate.validate(doc, K8S_VERSIONS[-1], strict=True)
