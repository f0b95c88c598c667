"""The deployment files are read the way Docker Compose and Kubernetes read them (YAML), and every trawl command,
flag and TRAWL_* variable in them is checked against the real command-line parser and config loader."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from webtrawl.cli import _build_parser
from webtrawl.config import CrawlConfig, Timeouts, load
from webtrawl.options import OPTIONS

yaml = pytest.importorskip("yaml", reason="PyYAML (dev dependency) reads the manifests")

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"


def _docs(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _drain_seconds() -> float:
    """How long a node may take to stop after SIGTERM with default timeouts (see node.stopping.drain)."""
    t = Timeouts()
    return t.total + t.robots + 10 + 60


def _check_trawl_command(args: list[str], env: dict[str, str]) -> CrawlConfig:
    """Parse a container's trawl arguments with the real CLI and load them with its environment."""
    args = [a.replace("$(POD_NAME)", "trawl-node-5d8f-x2x") for a in args]
    ns = _build_parser().parse_args(args)
    flags = {k: v for k, v in vars(ns).items() if k not in ("command", "verbose", "config", "urls", "json")}
    return load(flags, env=env, config_file=None)


def _trawl_env(env: dict[str, str]) -> dict[str, str]:
    """The TRAWL_* variables, each of which must be a real option (a typo would be silently ignored)."""
    known = {opt.env for opt in OPTIONS}
    unknown = [name for name in env if name.startswith("TRAWL_") and name not in known]
    assert not unknown, f"not trawl options: {unknown}"
    return {k: str(v) for k, v in env.items() if k.startswith("TRAWL_")}


def test_every_kubernetes_manifest_parses_and_names_its_kind_and_namespace() -> None:
    kust = _docs(K8S / "kustomization.yaml")[0]
    files = [K8S / name for name in kust["resources"]] + [K8S / "seed-job.yaml"]
    assert {p.name for p in K8S.glob("*.yaml")} == {p.name for p in files} | {"kustomization.yaml"}
    kinds = []
    for path in files:
        for doc in _docs(path):
            assert doc.get("apiVersion") and doc.get("kind") and doc["metadata"].get("name"), (path, doc)
            if doc["kind"] != "Namespace":
                assert doc["metadata"].get("namespace") == "webtrawl", (path, doc["metadata"])
            kinds.append(doc["kind"])
    assert {"StatefulSet", "Deployment", "Job", "Service", "ConfigMap", "PersistentVolumeClaim"} <= set(kinds)


def _by_kind(kind: str, name: str) -> dict[str, Any]:
    for path in K8S.glob("*.yaml"):
        for doc in _docs(path):
            if doc.get("kind") == kind and doc["metadata"]["name"] == name:
                return doc
    raise AssertionError(f"no {kind} {name}")


def test_the_node_deployment_runs_trawl_node_on_the_cluster_and_drains_within_its_grace_period() -> None:
    deploy = _by_kind("Deployment", "trawl-node")
    pod = deploy["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert deploy["spec"]["selector"]["matchLabels"].items() <= deploy["spec"]["template"]["metadata"]["labels"].items()
    env = _trawl_env(_by_kind("ConfigMap", "trawl-config")["data"])
    cfg = _check_trawl_command(container["args"], env)
    assert container["args"][0] == "node" and cfg.crawl.cluster and cfg.crawl.keep_running and cfg.crawl.redis
    assert cfg.crawl.redis.startswith("redis://redis-cluster-0.redis-cluster:")
    assert pod["terminationGracePeriodSeconds"] >= _drain_seconds()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["metrics"] == cfg.operations.metrics_port
    assert container["livenessProbe"]["httpGet"]["port"] == "metrics"
    volumes = {v["name"] for v in pod["volumes"]}
    assert {m["name"] for m in container["volumeMounts"]} <= volumes


def test_the_redis_statefulset_the_init_job_and_the_nodes_agree_on_names() -> None:
    sts = _by_kind("StatefulSet", "redis-cluster")
    service = _by_kind("Service", sts["spec"]["serviceName"])
    assert service["spec"]["clusterIP"] == "None"
    args = sts["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--cluster-enabled") + 1] == "yes"
    job = _by_kind("Job", "redis-cluster-init")
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    pods = [f"redis-cluster-{i}.{service['metadata']['name']}:6379" for i in range(sts["spec"]["replicas"])]
    assert env["REDIS_NODES"].split() == pods
    script = _by_kind("ConfigMap", "redis-cluster-init")["data"]["cluster-init.sh"]
    shared = (ROOT / "deploy" / "redis" / "cluster-init.sh").read_text()
    body = [line for line in shared.splitlines() if line.strip() and not line.startswith("#")]
    kept = [line for line in script.splitlines() if line.strip() and not line.startswith("#")]
    assert [line.strip() for line in kept] == [line.strip() for line in body if "shellcheck" not in line]


def test_the_cluster_init_script_is_valid_shell() -> None:
    subprocess.run(["sh", "-n", str(ROOT / "deploy" / "redis" / "cluster-init.sh")], check=True)


def test_docker_compose_has_a_3_master_cluster_and_2_nodes_with_valid_trawl_commands() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    masters = [s for s in services.values() if "--cluster-enabled" in (s.get("command") or [])]
    assert len(masters) == 3
    init = services["redis-init"]
    assert init["environment"]["REDIS_NODES"].split() == [f"{n}:6379" for n in ("redis-1", "redis-2", "redis-3")]
    nodes = [name for name, s in services.items() if (s.get("command") or [None])[0] == "node"]
    assert nodes == ["node1", "node2"]
    ids = set()
    for name in nodes:
        service = services[name]
        cfg = _check_trawl_command(service["command"], _trawl_env(service["environment"]))
        assert cfg.crawl.cluster and cfg.crawl.redis == "redis://redis-1:6379"
        ids.add(cfg.crawl.node_id)
        assert service["depends_on"]["redis-init"]["condition"] == "service_completed_successfully"
        minutes = int(service["stop_grace_period"].rstrip("m"))
        assert minutes * 60 >= _drain_seconds()
        assert service["restart"] == "on-failure"  # exit 0 after 'trawl stop' stays stopped
    assert len(ids) == 2
    seed = services["seed"]
    _check_trawl_command(seed["command"], {})
    for volume in (v.split(":")[0] for s in services.values() for v in s.get("volumes", [])):
        assert volume in compose.get("volumes", {}) or (ROOT / volume).exists() or volume == "./seeds.txt"


def _copies() -> list[tuple[list[str], str]]:
    """The sources and target of each COPY line of the Dockerfile's build stage (not the copies between stages)."""
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    words = [line.split()[1:] for line in lines if line.startswith("COPY ") and "--from" not in line]
    return [(sources, target) for *sources, target in words]


def test_the_dockerfile_builds_from_files_that_exist_and_runs_trawl() -> None:
    for sources, _target in _copies():
        for source in sources:
            assert (ROOT / source).exists(), source
    text = (ROOT / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["tini", "--", "trawl"]' in text and "EXPOSE 9100" in text  # tini: PID 1 (docs/deploy.md)
    assert "install -y --no-install-recommends tini" in text


def test_what_the_dockerfile_copies_is_enough_to_build_the_package(tmp_path: Path) -> None:
    """The build stage's COPY lines, replayed into an empty directory, then its ``pip install .`` as a wheel build
    (with this venv's setuptools, offline): a file the build needs and the image does not copy fails here."""
    source = tmp_path / "src"
    source.mkdir()
    for sources, target in _copies():
        for name in sources:
            into = source / target / name if target.endswith("/") else source / target
            if (ROOT / name).is_dir():
                shutil.copytree(ROOT / name, into, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
            else:
                into.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, into)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"),
         str(source)],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert [w.name.split("-")[0] for w in (tmp_path / "dist").glob("*.whl")] == ["webtrawl"]
