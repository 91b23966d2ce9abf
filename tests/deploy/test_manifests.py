"""The Kubernetes manifests of deploy/kubernetes and the image definition deploy/Containerfile.

Every document is validated offline against the schemas of one named Kubernetes version (those
kubernetes-validate bundles, strict: an unknown field fails), and the pieces must fit together:
probes on the gateway's listener, Services in front of the ports the sources name, the database
password from a Secret through the variable the database file names, and configuration files
that ``roadkit check`` accepts once laid out as the gateway Deployment mounts them.
"""

from __future__ import annotations

import copy
import re
import socket
import tomllib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate
import pytest
import yaml
from yarl import URL

from roadkit.cli import main as roadkit_main

ROOT = Path(__file__).parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes"
CONTAINERFILE = ROOT / "deploy" / "Containerfile"
#: The Kubernetes version the manifests are written for (docs/operations.md names it too).
KUBERNETES_VERSION = "1.34.0"


def documents() -> list[tuple[str, dict[str, Any]]]:
    """(file name, document) for every document of every manifest file."""
    found = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document is not None:
                found.append((path.name, document))
    return found


def named(kind: str, name: str) -> dict[str, Any]:
    matches = [d for _, d in documents() if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, got {len(matches)}"
    return matches[0]


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [d for _, d in documents() if d["kind"] == kind]


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No connection may leave the test: the schemas must come with the package."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"the validation tried to connect to {args[1:]}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    yield


def test_every_manifest_is_valid_for_the_named_kubernetes_version_offline(offline: None) -> None:
    found = documents()
    assert len(found) >= 15
    for name, document in found:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
        assert document["metadata"]["name"], name


def test_the_validation_rejects_an_unknown_field_and_a_wrong_type(offline: None) -> None:
    deployment = copy.deepcopy(named("Deployment", "roadkit-gateway"))
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {"httpGet": {"path": "/readyz", "port": 8080}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    budget = copy.deepcopy(named("PodDisruptionBudget", "roadkit-gateway"))
    budget["spec"]["selector"] = "app=roadkit"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(budget, KUBERNETES_VERSION, strict=True)


def _gateway_container() -> dict[str, Any]:
    (container,) = named("Deployment", "roadkit-gateway")["spec"]["template"]["spec"]["containers"]
    return container


def _selects(selector: dict[str, str], kind: str = "Deployment") -> list[str]:
    """The Deployments whose pods carry every label of ``selector``."""
    return [d["metadata"]["name"] for d in of_kind(kind) if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()]


def test_the_gateway_probes_its_listener_and_is_guarded_and_scaled() -> None:
    container = _gateway_container()
    port = {p["name"]: p["containerPort"] for p in container["ports"]}["http"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    service = tomllib.loads(named("ConfigMap", "roadkit-gateway-server")["data"]["service.toml"])
    assert [listener["port"] for listener in service["listeners"]] == [port]
    server = tomllib.loads(named("ConfigMap", "roadkit-gateway-server")["data"]["server.toml"])
    metrics_port = server["administrator"]["metrics_listener"]["port"]
    annotations = named("Deployment", "roadkit-gateway")["spec"]["template"]["metadata"]["annotations"]
    assert int(annotations["prometheus.io/port"]) == {p["name"]: p["containerPort"] for p in container["ports"]}["metrics"] == metrics_port
    grace = named("Deployment", "roadkit-gateway")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert server["services"][0]["stop_timeout"] + 5 < grace, "the workers must finish within the grace period"

    budget = named("PodDisruptionBudget", "roadkit-gateway")
    assert _selects(budget["spec"]["selector"]["matchLabels"]) == ["roadkit-gateway"]
    gateway_service = named("Service", "roadkit-gateway")
    assert _selects(gateway_service["spec"]["selector"]) == ["roadkit-gateway"]

    autoscaler = named("HorizontalPodAutoscaler", "roadkit-gateway")
    assert autoscaler["apiVersion"] == "autoscaling/v2"
    assert autoscaler["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "roadkit-gateway"}
    metrics = {m["type"]: m for m in autoscaler["spec"]["metrics"]}
    assert metrics["Pods"]["pods"]["metric"]["name"] == "roadkit_requests_per_second"
    assert metrics["Resource"]["resource"]["name"] == "cpu"
    assert autoscaler["spec"]["minReplicas"] > budget["spec"]["minAvailable"]


def _gateway_sources() -> dict[str, dict[str, Any]]:
    return {name: tomllib.loads(text) for name, text in named("ConfigMap", "roadkit-gateway-sources")["data"].items()}


def _listens_on(container: dict[str, Any]) -> int:
    """The port an engine container's command listens on."""
    words = container["command"] + container.get("args", [])
    if "--port" in words:  # osrm-routed
        return int(words[words.index("--port") + 1])
    assert words[0] == "valhalla_service", words
    return 8002  # roadkit valhalla-build writes httpd.service.listen = "tcp://*:8002"


def test_every_engine_server_a_source_names_is_a_service_in_front_of_an_engine_container() -> None:
    remote = {name: s for name, s in _gateway_sources().items() if s.get("type") in ("osrm-http", "valhalla-http")}
    assert {s["type"] for s in remote.values()} == {"osrm-http", "valhalla-http"}
    for name, source in remote.items():
        for server in source["http"]["servers"]:
            url = URL(server)
            service = named("Service", url.host or "")
            (port,) = [p for p in service["spec"]["ports"] if p["port"] == url.port]
            (deployment,) = _selects(service["spec"]["selector"])
            containers = named("Deployment", deployment)["spec"]["template"]["spec"]["containers"]
            target = [c for c in containers for p in c.get("ports", []) if p.get("name") == port["targetPort"]]
            assert len(target) == 1, f"{name}: {server}: no container port named {port['targetPort']} in {deployment}"
            (container_port,) = [p["containerPort"] for p in target[0]["ports"] if p["name"] == port["targetPort"]]
            assert _listens_on(target[0]) == container_port, f"{name}: {target[0]['name']} of {deployment} listens elsewhere"
    assert {"osrm", "valhalla"} <= {d["metadata"]["name"] for d in of_kind("Deployment")}


def test_the_database_is_external_and_its_password_comes_from_a_secret() -> None:
    database = tomllib.loads(named("ConfigMap", "roadkit-gateway-sources")["data"]["pgrouting.database.toml"])
    assert "password" not in database
    postgres = named("Service", database["host"])
    assert postgres["spec"]["type"] == "ExternalName" and postgres["spec"]["externalName"]
    env = {e["name"]: e for e in _gateway_container()["env"]}
    reference = env[database["password_env"]]["valueFrom"]["secretKeyRef"]
    assert reference == {"name": "roadkit-postgres", "key": "password"}
    assert of_kind("Secret") == [], "no password ships in the manifests"
    for _, document in documents():
        assert not re.search(r"password\s*=\s*\"", yaml.safe_dump(document)), document["metadata"]["name"]


def test_the_gateway_configuration_passes_roadkit_check_as_mounted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ConfigMap is written where the Deployment mounts it (below tmp_path instead of /): roadkit check accepts the set."""
    spec = named("Deployment", "roadkit-gateway")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    for mount in _gateway_container()["volumeMounts"]:
        config_map = volumes[mount["name"]].get("configMap")
        if config_map is None:
            continue
        folder = tmp_path / PurePosixPath(mount["mountPath"]).relative_to("/")
        folder.mkdir(parents=True)
        for key, text in named("ConfigMap", config_map["name"])["data"].items():
            (folder / key).write_text(text)
    args = _gateway_container()["args"]
    assert args[:2] == ["roadkit", "serve"]
    server = tmp_path / PurePosixPath(args[2]).relative_to("/")
    assert server.is_file(), f"{args[2]} is not in a mounted ConfigMap"
    monkeypatch.setenv("ROADKIT_PG_PASSWORD", "not-a-secret")
    assert roadkit_main(["check", str(server)]) == 0
    # Every source of the ConfigMap is in use (none skipped for a typo in its id or kind).
    sources = {s["id"] for s in _gateway_sources().values() if "id" in s}
    resources = named("ConfigMap", "roadkit-gateway-resources")["data"]
    named_in_resources = {i for text in resources.values() for i in tomllib.loads(text)["sources"]}
    assert sources == named_in_resources


def test_the_image_is_built_from_debian_and_pypi_only_and_runs_the_mounted_server_file() -> None:
    text = CONTAINERFILE.read_text()
    (default,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.MULTILINE)
    assert default == "docker.io/library/python:3.12-slim-bookworm"
    assert re.findall(r"^FROM (\S+)", text, re.MULTILINE) == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]
    # The build context keeps only what .containerignore lets through (every COPY's source, nothing else).
    kept = re.findall(r"^!(\S+)$", (ROOT / ".containerignore").read_text(), re.MULTILINE)
    for source in re.findall(r"^COPY (?!--from)(\S+) ", text, re.MULTILINE):
        assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
        assert source in kept, f"COPY {source}: left out of the build context by .containerignore"
    for url in re.findall(r"https?://\S+", text):
        raise AssertionError(f"the image fetches {url}: only apt-get and pip (Debian and PyPI) may bring anything in")
    assert re.search(r"^USER 10001$", text, re.MULTILINE)
    (command,) = re.findall(r"^CMD (.+)$", text, re.MULTILINE)
    assert yaml.safe_load(command) == _gateway_container()["args"]
    for document in of_kind("Deployment"):
        assert document["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == 10001
