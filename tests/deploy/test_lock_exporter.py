"""deploy/components/lock-exporter: renders with the base, validates, least-privilege RBAC, the
container runs real `exporter` options, and the Grafana dashboard only queries series that the
exporter serves."""

from __future__ import annotations

import json
import re

import kubernetes_validate
import pytest
from dra_affinity.exporter.lock_exporter import Health
from dra_affinity.lint.commands.exporter_cmd import exporter
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from tests.cli import run
from tests.deploy.manifests import DEPLOY, Obj, all_of, find, selects
from tests.deploy.test_manifests import KUBERNETES, render_with

COMPONENT = DEPLOY / "components" / "lock-exporter"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> list[Obj]:
    return render_with(tmp_path_factory.mktemp("lock-exporter"), resources=["base"],
                       components=["components/lock-exporter"])


def _mine(objects: list[Obj]) -> list[Obj]:
    return [o for o in objects if "lock-exporter" in o["metadata"]["name"]
            or o["metadata"]["name"] == "dra-affinity-lock-dashboard"]


def test_objects_validate_and_live_in_the_base_namespace(rendered: list[Obj]) -> None:
    mine = _mine(rendered)
    assert {o["kind"] for o in mine} >= {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment",
                                         "Service", "NetworkPolicy", "ConfigMap"}
    for obj in mine:
        kubernetes_validate.validate(obj, KUBERNETES, strict=True)
        if obj["kind"] not in {"ClusterRole", "ClusterRoleBinding"}:
            assert obj["metadata"]["namespace"] == "dra-affinity"


def test_rbac_is_list_and_watch_of_the_three_kinds_only(rendered: list[Obj]) -> None:
    role = find(rendered, "ClusterRole", "dra-affinity-lock-exporter")
    assert role["rules"] == [{"apiGroups": ["resource.k8s.io"],
                              "resources": ["resourceslices", "resourceclaims", "deviceclasses"],
                              "verbs": ["list", "watch"]}]
    binding = find(rendered, "ClusterRoleBinding", "dra-affinity-lock-exporter")
    deployment = find(rendered, "Deployment", "dra-affinity-lock-exporter")
    pod = deployment["spec"]["template"]["spec"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": pod["serviceAccountName"],
                                    "namespace": "dra-affinity"}]


def test_container_runs_exporter_options_and_the_service_selects_it(rendered: list[Obj]) -> None:
    deployment = find(rendered, "Deployment", "dra-affinity-lock-exporter")
    pod = deployment["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert container["command"] == ["dra-affinity"] and container["args"][0] == "exporter"
    ctx = exporter.make_context("exporter", list(container["args"][1:]))  # raises on an unknown option
    assert ctx.params["listen"].endswith(f":{container['ports'][0]['containerPort']}")
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert deployment["spec"]["replicas"] == 1  # totals: two exporters would be summed twice
    service = find(rendered, "Service", "dra-affinity-lock-exporter")
    assert selects(service["spec"]["selector"], pod["metadata"]["labels"])
    policies = [p for p in all_of(rendered, "NetworkPolicy")
                if selects(p["spec"]["podSelector"]["matchLabels"], pod["metadata"]["labels"])]
    assert [p["metadata"]["name"] for p in policies] == ["dra-affinity-lock-exporter"]


def test_dashboard_queries_only_series_the_exporter_serves(rendered: list[Obj]) -> None:
    config_map = find(rendered, "ConfigMap", "dra-affinity-lock-dashboard")
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(config_map["data"]["grafana-dashboard.json"])
    assert dashboard == json.loads((COMPONENT / "grafana-dashboard.json").read_text())
    out = run("locks", "examples/cluster/dump.yaml", "--all", "--format", "prometheus")
    served = {f.name for f in text_string_to_metric_families(out.out)}
    registry = CollectorRegistry()
    Health(registry)
    for family in registry.collect():  # labelled series have no sample until first set
        suffixes = {"counter": ("_total",), "summary": ("_sum", "_count")}.get(family.type, ("",))
        served |= {family.name + suffix for suffix in suffixes}
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    assert exprs
    for expr in exprs:
        names = set(re.findall(r"\b(?:sharing_affinity|dra_affinity)_[a-z_]+", expr))
        assert names, expr
        assert names <= served, f"{expr}: {names - served} is not served"


def test_component_files_are_all_referenced() -> None:
    listed = (COMPONENT / "kustomization.yaml").read_text()
    for path in COMPONENT.iterdir():
        if path.name != "kustomization.yaml":
            assert path.name in listed, path
