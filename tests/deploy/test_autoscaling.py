"""Autoscaling, alerting and dashboard files: every Kubernetes object validated against the Kubernetes JSON schemas
(kubernetes-validate ships them: offline), the KEDA object checked field by field (its CRD schema is not shipped),
and every metric name in a query checked against what the nodes' exporter really serves."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from tests.metrics.samples import snapshot
from webtrawl.config import Timeouts
from webtrawl.metrics import MetricsExporter

yaml = pytest.importorskip("yaml", reason="PyYAML (dev dependency) reads the manifests")
kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="dev dependency: offline Kubernetes schemas")

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S_VERSION = "1.30.0"
_METRIC = re.compile(r"\b(webtrawl_[a-z_]+|node_[a-z_]+)\b")
_PROMQL_WORDS = {"node_filesystem_avail_bytes"}  # node_exporter's, not ours


def _docs(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _exported_names() -> set[str]:
    """Metric names in the exporter's real output for a snapshot of a running shared-crawl node."""
    exporter = MetricsExporter(0)
    snap = snapshot(1.0)
    snap.extra.update(node_fetched=5, node_leases=2)
    exporter.update(snap)
    text = generate_latest(exporter.registry).decode()
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}


def _unknown_metrics(expr: str) -> set[str]:
    return set(_METRIC.findall(expr)) - _exported_names() - _PROMQL_WORDS


def test_every_kubernetes_object_validates_against_the_kubernetes_schemas() -> None:
    paths = [*sorted((DEPLOY / "k8s").glob("*.yaml")), DEPLOY / "k8s" / "autoscaling" / "hpa.yaml"]
    checked = []
    for path in paths:
        for doc in _docs(path):
            if doc["kind"] == "Kustomization":
                continue
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
            checked.append(doc["kind"])
    assert {"Deployment", "StatefulSet", "HorizontalPodAutoscaler", "ConfigMap", "Service", "Job"} <= set(checked)


def _node_deployment() -> dict[str, Any]:
    docs = _docs(DEPLOY / "k8s" / "nodes.yaml")
    return next(d for d in docs if d["kind"] == "Deployment")


def test_the_hpa_scales_the_node_deployment_on_the_adapters_queue_metric() -> None:
    (hpa,) = _docs(DEPLOY / "k8s" / "autoscaling" / "hpa.yaml")
    deploy = _node_deployment()
    ref = hpa["spec"]["scaleTargetRef"]
    assert (ref["kind"], ref["name"], ref["apiVersion"]) == ("Deployment", deploy["metadata"]["name"], "apps/v1")
    assert hpa["metadata"]["namespace"] == deploy["metadata"]["namespace"]
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "External" and metric["external"]["target"]["type"] == "AverageValue"
    adapter = yaml.safe_load((DEPLOY / "k8s" / "autoscaling" / "prometheus-adapter-values.yaml").read_text())
    (rule,) = adapter["rules"]["external"]
    assert rule["name"]["as"] == metric["external"]["metric"]["name"]
    assert re.search(r"\bwebtrawl_queued\b", rule["metricsQuery"]) and "webtrawl_queued" in rule["seriesQuery"]
    assert _unknown_metrics(rule["metricsQuery"] + rule["seriesQuery"]) == set()
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    assert hpa["spec"]["behavior"]["scaleDown"]["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 300}]


def test_the_keda_scaled_object_is_well_formed_and_queries_the_exporter() -> None:
    (obj,) = _docs(DEPLOY / "k8s" / "autoscaling" / "keda-scaledobject.yaml")
    deploy = _node_deployment()
    assert obj["apiVersion"] == "keda.sh/v1alpha1" and obj["kind"] == "ScaledObject"
    spec = obj["spec"]
    allowed = {"scaleTargetRef", "minReplicaCount", "maxReplicaCount", "pollingInterval", "cooldownPeriod"}
    allowed |= {"advanced", "triggers", "idleReplicaCount", "fallback", "initialCooldownPeriod"}
    assert set(spec) <= allowed
    assert spec["scaleTargetRef"]["name"] == deploy["metadata"]["name"]
    assert obj["metadata"]["namespace"] == deploy["metadata"]["namespace"]
    assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]
    (trigger,) = spec["triggers"]
    meta = trigger["metadata"]
    assert trigger["type"] == "prometheus" and {"serverAddress", "query", "threshold"} <= set(meta)
    assert all(isinstance(v, str) for v in meta.values())  # KEDA trigger metadata is a map of strings
    assert float(meta["threshold"]) > 0 and "webtrawl_queued" in meta["query"]
    assert _unknown_metrics(meta["query"]) == set()
    # the HPA KEDA creates takes the same behavior block as autoscaling/v2: validate it with that schema
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "keda-hpa-trawl-node"},
        "spec": {
            "scaleTargetRef": spec["scaleTargetRef"],
            "maxReplicas": spec["maxReplicaCount"],
            "behavior": spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"],
        },
    }
    kubernetes_validate.validate(hpa, K8S_VERSION, strict=True)


def test_scale_in_drains_within_the_grace_period() -> None:
    """A pod removed by the autoscaler gets SIGTERM and drains; nothing may shorten or pre-empt that."""
    pod = _node_deployment()["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    t = Timeouts()
    assert pod["terminationGracePeriodSeconds"] >= t.total + t.robots + 10 + 60
    assert "preStop" not in container.get("lifecycle", {})  # a preStop hook would eat into the grace period


def test_prometheus_alert_rules_use_only_exported_metrics() -> None:
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yaml").read_text())
    names = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
            assert rule["alert"].startswith("Webtrawl") and re.fullmatch(r"\d+[smh]", rule["for"])
            assert rule["expr"].count("(") == rule["expr"].count(")")
            assert _unknown_metrics(rule["expr"]) == set(), rule["alert"]
            names.append(rule["alert"])
    assert {"WebtrawlHighErrorRate", "WebtrawlStalled", "WebtrawlNodeMemoryHigh", "WebtrawlRedisMemoryHigh"} <= set(
        names
    )
    assert "WebtrawlDiskLow" in names and len(names) == len(set(names))


def test_the_grafana_dashboard_queries_only_exported_metrics() -> None:
    dash = json.loads((DEPLOY / "grafana" / "webtrawl-dashboard.json").read_text())
    exprs = [t["expr"] for panel in dash["panels"] for t in panel["targets"]]
    assert len(exprs) >= 10
    for expr in exprs:
        assert _unknown_metrics(expr) == set(), expr
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)) and all("gridPos" in p for p in dash["panels"])
