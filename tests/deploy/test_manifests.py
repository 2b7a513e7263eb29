"""deploy/: every manifest parses, the kustomizations render and reference what exists, the
objects validate against Kubernetes 1.37's schemas, they point at each other consistently, and
the security settings the issue asks for are there."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import click
import jsonschema
import kubernetes_validate
import pytest
import yaml
from dra_affinity.lint.commands.serve_cmd import serve

from tests.cli import REPO
from tests.deploy.manifests import (
    DEPLOY,
    KUSTOMIZATIONS,
    Obj,
    all_of,
    find,
    key,
    kustomization,
    load_documents,
    matches_target,
    patch_entries,
    render,
    resolve_pointer,
    selects,
    yaml_files,
)
from tests.deploy.vap_harness import run_expression

KUBERNETES = "1.37"
CERT_MANAGER_SCHEMA = json.loads((Path(__file__).parent / "schemas" / "cert-manager-v1.json").read_text())
WEBHOOK_SECRET = "dra-affinity-webhook-tls"
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration",
                  "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}


@pytest.fixture(scope="module")
def base() -> list[Obj]:
    return render(DEPLOY / "base")


@pytest.fixture(scope="module")
def cert_manager() -> list[Obj]:
    return render(DEPLOY / "overlays" / "cert-manager")


def render_with(tmp_path: Path, **entries: list[str]) -> list[Obj]:
    """Render a throw-away kustomization in `tmp_path` whose entries are deploy/ directories."""
    rel = {k: [os.path.relpath(DEPLOY / p, tmp_path) for p in v] for k, v in entries.items()}
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(rel))
    return render(tmp_path)


# ------------------------------------------------------------------------------------------------
# Parsing and references between files
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", yaml_files(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_manifest_parses_into_kubernetes_objects(path: Path) -> None:
    docs = load_documents(path)
    assert docs, f"{path} is empty"
    for doc in docs:
        assert isinstance(doc, dict) and doc.get("apiVersion") and doc.get("kind"), doc
        if doc["kind"] not in ("Kustomization", "Component"):
            assert doc["metadata"]["name"]


def _kustomization_dirs() -> list[Path]:
    return sorted(p.parent for p in DEPLOY.rglob("kustomization.yaml"))


@pytest.mark.parametrize("directory", _kustomization_dirs(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_kustomization_entries_exist_and_no_manifest_is_orphaned(directory: Path) -> None:
    spec = kustomization(directory)
    referenced: set[Path] = set()
    for entry in spec.get("resources", []):
        target = (directory / entry).resolve()
        assert target.exists(), f"{directory}: resource {entry} does not exist"
        if target.is_dir():
            assert (target / "kustomization.yaml").exists(), f"{entry} is not a kustomization"
        referenced.add(target)
    for entry in spec.get("components", []):
        component = kustomization((directory / entry).resolve())
        assert component["kind"] == "Component", f"{entry} is not a Component"
    for patch in spec.get("patches", []):
        assert "path" in patch or "patch" in patch
        if "path" in patch:
            assert (directory / patch["path"]).exists()
    own = {p.resolve() for p in directory.glob("*.yaml") if p.name != "kustomization.yaml"}
    assert own <= referenced, f"not referenced by {directory}/kustomization.yaml: {own - referenced}"


def _patched(tmp_path: Path, directory: Path) -> tuple[list[Obj], list[Obj]]:
    """The objects a kustomization's patches apply to (unpatched) and its rendering."""
    spec = kustomization(directory)
    if spec["kind"] == "Component":
        return render(DEPLOY / "base"), render_with(tmp_path, resources=["base"],
                                                    components=[str(directory.relative_to(DEPLOY))])
    bases = [e for e in spec.get("resources", []) if (directory / e).is_dir()]
    before = [obj for b in bases for obj in render((directory / b).resolve())]
    return before, render(directory)


@pytest.mark.parametrize("directory", [DEPLOY / "overlays/cert-manager", DEPLOY / "components/fail-open",
                                       DEPLOY / "components/mtls", DEPLOY / "components/apiserver-source"],
                         ids=lambda p: str(p.relative_to(DEPLOY)))
def test_patches_hit_exactly_one_object_and_take_effect(tmp_path: Path, directory: Path) -> None:
    before, after = _patched(tmp_path, directory)
    entries = list(patch_entries(directory))
    assert entries
    for target, ops in entries:
        hits = [o for o in before if matches_target(o, target)]
        assert len(hits) == 1, f"patch target {target} matches {len(hits)} objects"
        patched = next(o for o in after if key(o) == key(hits[0]))
        for op in ops:
            parent = op["path"].rpartition("/")[0]
            if parent:
                resolve_pointer(hits[0], parent)  # every operation needs its parent to exist
            if op["op"] in ("replace", "remove", "test"):
                resolve_pointer(hits[0], op["path"])  # must exist before the patch
            if op["op"] == "add" and op["path"].endswith("/-"):  # appended to a list
                assert op["value"] in resolve_pointer(patched, parent)
            elif op["op"] in ("add", "replace"):
                assert resolve_pointer(patched, op["path"]) == op["value"]


def _package_version() -> str:
    return str(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"])


_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def _images(objects: list[Obj]) -> list[tuple[str, str]]:
    """(object, image) of every container, init container and ephemeral container rendered."""
    found: list[tuple[str, str]] = []

    def visit(node: Any, owner: str) -> None:
        if isinstance(node, dict):
            for name, value in node.items():
                if name in _CONTAINER_LISTS and isinstance(value, list):
                    found.extend((owner, c.get("image", "")) for c in value if isinstance(c, dict))
                visit(value, owner)
        elif isinstance(node, list):
            for item in node:
                visit(item, owner)

    for obj in objects:
        visit(obj.get("spec"), f"{obj['kind']}/{obj['metadata']['name']}")
    return found


def _component_dirs() -> list[str]:
    return sorted(str(p.parent.relative_to(DEPLOY)) for p in DEPLOY.glob("components/*/kustomization.yaml"))


@pytest.mark.parametrize("entry", [*KUSTOMIZATIONS, *_component_dirs()])
def test_every_container_image_is_tagged_with_the_package_version(tmp_path: Path, entry: str) -> None:
    """An untagged image is `:latest` to the kubelet: whatever was pushed last, not this release.
    Components are rendered as an overlay adds them (beside the base), where the base's
    `images:` does not reach them."""
    if entry.startswith("components/"):
        objects = render_with(tmp_path, resources=["base"], components=[entry])
    else:
        objects = render(DEPLOY / entry)
    version = _package_version()
    for owner, image in _images(objects):
        name, _, digest = image.partition("@")
        tag = name.rsplit("/", 1)[-1].partition(":")[2]  # a registry's port is before the last /
        assert tag == version or digest.startswith("sha256:"), f"{entry}: {owner} runs {image!r}"


def test_an_overlays_image_entry_renames_the_webhook_and_the_exporter(tmp_path: Path) -> None:
    """The install steps' `images:` (a registry and a tag) reaches the component's container too."""
    rel = {k: [os.path.relpath(DEPLOY / p, tmp_path) for p in v]
           for k, v in {"resources": ["base"], "components": ["components/lock-exporter"]}.items()}
    images = [{"name": "dra-affinity", "newName": "registry.example.com/dra-affinity", "newTag": "9.9.9"}]
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({**rel, "images": images}))
    assert {image for _, image in _images(render(tmp_path))} == {"registry.example.com/dra-affinity:9.9.9"}


# ------------------------------------------------------------------------------------------------
# Schemas
# ------------------------------------------------------------------------------------------------


def _validate(obj: Obj) -> None:
    if obj["apiVersion"].startswith("cert-manager.io/"):
        schema = {**CERT_MANAGER_SCHEMA, "$ref": f"#/$defs/{obj['kind']}"}
        jsonschema.Draft202012Validator(schema).validate(obj)
        return
    kubernetes_validate.validate(obj, KUBERNETES, strict=True)


@pytest.mark.parametrize("directory", KUSTOMIZATIONS)
def test_objects_validate_against_kubernetes_schemas(directory: str) -> None:
    objects = render(DEPLOY / directory)
    assert objects
    for obj in objects:
        try:
            _validate(obj)
        except (kubernetes_validate.ValidationError, jsonschema.ValidationError) as exc:
            pytest.fail(f"{obj['kind']}/{obj['metadata']['name']}: {exc.message} at {list(exc.path)}")


def test_schema_validation_catches_mistakes(base: list[Obj]) -> None:
    deployment = find(base, "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["securityContext"]["readOnlyRootFileSystem"] = True  # the field is readOnlyRootFilesystem
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(deployment)
    certificate = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                   "metadata": {"name": "x", "namespace": "y"},
                   "spec": {"secretName": "s", "issuerRef": {"name": "i"}, "dnsName": ["typo"]}}
    with pytest.raises(jsonschema.ValidationError):
        _validate(certificate)


def test_an_api_server_that_does_not_serve_the_field_drops_it() -> None:
    """Stock 1.37 ResourceSlice has no sharingAffinity: strict decoding rejects it (kubectl's
    default), lenient decoding drops it before admission (what deploy/README.md warns about)."""
    doc = load_documents(REPO / "examples" / "networking-node-a.yaml")[0]
    assert "sharingAffinity" in doc["spec"]
    with pytest.raises(kubernetes_validate.ValidationError, match="sharingAffinity"):
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)


# ------------------------------------------------------------------------------------------------
# References between objects
# ------------------------------------------------------------------------------------------------


def test_every_namespaced_object_lives_in_a_namespace_the_base_creates(base: list[Obj],
                                                                       cert_manager: list[Obj]) -> None:
    namespaces = {o["metadata"]["name"] for o in all_of(base, "Namespace")}
    for obj in base + cert_manager:
        if obj["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in obj["metadata"], key(obj)
        else:
            assert obj["metadata"].get("namespace") in namespaces, key(obj)


def test_service_deployment_and_webhook_point_at_each_other(base: list[Obj]) -> None:
    deployment, service = find(base, "Deployment"), find(base, "Service")
    template = deployment["spec"]["template"]
    pod_labels = template["metadata"]["labels"]
    assert selects(deployment["spec"]["selector"]["matchLabels"], pod_labels)
    assert selects(service["spec"]["selector"], pod_labels)
    container = template["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    service_ports = {p["name"]: p for p in service["spec"]["ports"]}
    assert all(p["targetPort"] in ports for p in service_ports.values())
    service_port = service_ports["https"]
    (webhook,) = find(base, "ValidatingWebhookConfiguration")["webhooks"]
    ref = webhook["clientConfig"]["service"]
    assert (ref["name"], ref["namespace"]) == (service["metadata"]["name"], service["metadata"]["namespace"])
    assert ref["port"] == service_port["port"]
    from dra_affinity.webhook.app import create_app
    from dra_affinity.webhook.settings import WebhookSettings

    routes = {r.rule: r.methods or set() for r in create_app(WebhookSettings()).url_map.iter_rules()}
    assert "POST" in routes[ref["path"]]
    # The probes use the plain metrics listener (the kubelet presents no client certificate,
    # which overlays/mtls requires on the admission port), and it is the --metrics-port.
    assert f"--metrics-port={ports['metrics']}" in container["args"]
    assert f"--port={ports['https']}" in container["args"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["scheme"] == "HTTP" and get["port"] == "metrics" and "GET" in routes[get["path"]]
    annotations = template["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(ports["metrics"])
    assert annotations["prometheus.io/path"] == "/metrics" and "GET" in routes["/metrics"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_rbac_grants_the_service_account_read_only_resourceslices(base: list[Obj]) -> None:
    account = find(base, "ServiceAccount")
    deployment = find(base, "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]
    role, binding = find(base, "ClusterRole"), find(base, "ClusterRoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": role["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": account["metadata"]["namespace"]}]
    assert role["rules"] == [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
                              "verbs": ["get", "list", "watch"]}]
    assert not all_of(base, "Role") and not all_of(base, "RoleBinding")
    # The permission exists for --pool-check: the Deployment must use it.
    assert "--pool-check" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]


def test_pdb_and_network_policy_select_the_webhook_pods(base: list[Obj]) -> None:
    deployment = find(base, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    pdb = find(base, "PodDisruptionBudget")
    assert selects(pdb["spec"]["selector"]["matchLabels"], pod_labels)
    assert 0 < pdb["spec"]["minAvailable"] < deployment["spec"]["replicas"]
    policy = find(base, "NetworkPolicy")
    assert selects(policy["spec"]["podSelector"]["matchLabels"], pod_labels)
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    ports = {p["name"]: p["containerPort"]
             for p in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]}
    admission, metrics = policy["spec"]["ingress"]
    assert admission["ports"] == [{"protocol": "TCP", "port": ports["https"]}]
    assert "from" not in admission  # the API server's source is not knowable here (see the file)
    assert metrics["ports"] == [{"protocol": "TCP", "port": ports["metrics"]}]
    assert metrics["from"] == [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "monitoring"}}}]
    (egress,) = policy["spec"]["egress"]
    assert {p["port"] for p in egress["ports"]} == {443, 6443} and "to" not in egress


def test_apiserver_source_component_narrows_the_admission_port_to_the_operators_cidr(
        tmp_path: Path) -> None:
    """As deploy/README.md shows: the component, then the operator's CIDR replacing the
    documentation range; the metrics rule and egress are untouched."""
    spec = {"resources": [os.path.relpath(DEPLOY / "base", tmp_path)],
            "components": [os.path.relpath(DEPLOY / "components/apiserver-source", tmp_path)],
            "patches": [{"target": {"kind": "NetworkPolicy", "name": "dra-affinity-webhook"},
                         "patch": "- op: replace\n  path: /spec/ingress/0/from/0/ipBlock/cidr\n"
                                  "  value: 10.0.0.0/24\n"}]}
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(spec))
    policy = find(render(tmp_path), "NetworkPolicy")
    admission, metrics = policy["spec"]["ingress"]
    assert admission["from"] == [{"ipBlock": {"cidr": "10.0.0.0/24"}}]
    assert admission["ports"] == [{"protocol": "TCP", "port": 8443}]
    assert metrics == find(render(DEPLOY / "base"), "NetworkPolicy")["spec"]["ingress"][1]
    kubernetes_validate.validate(policy, KUBERNETES, strict=True)


def test_mtls_overlay_mounts_the_client_ca_and_requires_it(base: list[Obj]) -> None:
    mtls = render(DEPLOY / "overlays" / "mtls")
    assert {key(o) for o in mtls} == {key(o) for o in base}  # nothing but the Deployment changes
    pod = find(mtls, "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (flag,) = [a for a in container["args"] if a.startswith("--client-ca-file=")]
    ca_path = flag.partition("=")[2]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    (mount,) = [m for m in mounts.values() if ca_path.startswith(m["mountPath"] + "/")]
    assert mount["readOnly"] is True
    source = volumes[mount["name"]]["configMap"]
    assert source["name"] == "dra-affinity-apiserver-client-ca"
    assert [item["path"] for item in source["items"]] == [ca_path.rpartition("/")[2]]
    assert container["readinessProbe"]["httpGet"]["port"] == "metrics"  # no client cert needed
    ctx = serve.make_context("serve", list(container["args"]))  # every flag a real serve option
    assert ctx.params["client_ca_file"] == ca_path


def test_cert_manager_overlay_issues_the_secret_the_deployment_mounts(cert_manager: list[Obj]) -> None:
    deployment, service = find(cert_manager, "Deployment"), find(cert_manager, "Service")
    secret_volumes = [v["secret"]["secretName"] for v in deployment["spec"]["template"]["spec"]["volumes"]
                      if "secret" in v]
    assert secret_volumes == [WEBHOOK_SECRET]
    certificates = {c["metadata"]["name"]: c for c in all_of(cert_manager, "Certificate")}
    issuers = {i["metadata"]["name"]: i for i in all_of(cert_manager, "Issuer")}
    (serving,) = [c for c in certificates.values() if c["spec"]["secretName"] == WEBHOOK_SECRET]
    svc = f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    assert svc in serving["spec"]["dnsNames"]
    assert "server auth" in serving["spec"]["usages"] and not serving["spec"].get("isCA")
    for certificate in certificates.values():
        assert certificate["spec"]["issuerRef"]["name"] in issuers
    ca_issuer = issuers[serving["spec"]["issuerRef"]["name"]]
    ca_secret = ca_issuer["spec"]["ca"]["secretName"]
    ca_cert = next(c for c in certificates.values() if c["spec"]["secretName"] == ca_secret)
    assert ca_cert["spec"]["isCA"] is True
    annotation = find(cert_manager, "ValidatingWebhookConfiguration")["metadata"]["annotations"]
    namespace, _, name = annotation["cert-manager.io/inject-ca-from"].partition("/")
    assert (namespace, name) == (serving["metadata"]["namespace"], serving["metadata"]["name"])


def test_image_tag_is_the_package_version_and_args_are_serve_options(base: list[Obj]) -> None:
    version = _package_version()
    container = find(base, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == f"dra-affinity:{version}"
    ctx = serve.make_context("serve", list(container["args"]))  # raises on an unknown option
    assert ctx.params["cert_dir"] == container["volumeMounts"][0]["mountPath"]
    assert ctx.params["port"] == container["ports"][0]["containerPort"]
    assert ctx.params["pool_check"] is True
    with pytest.raises(click.UsageError):
        serve.make_context("serve", ["--no-such-option"])


# ------------------------------------------------------------------------------------------------
# Security and availability settings
# ------------------------------------------------------------------------------------------------


def test_pod_runs_unprivileged_with_a_read_only_root(base: list[Obj]) -> None:
    pod = find(base, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
    (container,) = pod["containers"]
    context = container["securityContext"]
    assert context["runAsNonRoot"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["privileged"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    # With a read-only root, /tmp (gunicorn heartbeats, prometheus multiprocess files) is a volume.
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
    assert all(m.get("readOnly") for m in mounts.values() if "secret" in volumes[m["name"]])


def test_namespace_enforces_the_restricted_pod_security_standard(base: list[Obj]) -> None:
    labels = find(base, "Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_deployment_is_highly_available_and_bounded(base: list[Obj]) -> None:
    spec = find(base, "Deployment")["spec"]
    assert spec["replicas"] >= 2
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    spreads = {c["topologyKey"]: c for c in spec["template"]["spec"]["topologySpreadConstraints"]}
    assert set(spreads) == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}
    pod_labels = spec["template"]["metadata"]["labels"]
    assert all(selects(c["labelSelector"]["matchLabels"], pod_labels) for c in spreads.values())
    resources = spec["template"]["spec"]["containers"][0]["resources"]
    assert set(resources["requests"]) == {"cpu", "memory"} and set(resources["limits"]) == {"cpu", "memory"}


# ------------------------------------------------------------------------------------------------
# The webhook registration
# ------------------------------------------------------------------------------------------------


def test_webhook_registration(base: list[Obj], tmp_path: Path) -> None:
    (webhook,) = find(base, "ValidatingWebhookConfiguration")["webhooks"]
    assert webhook["sideEffects"] == "None"
    assert webhook["admissionReviewVersions"] == ["v1"]
    assert webhook["matchPolicy"] == "Equivalent"
    assert 1 <= webhook["timeoutSeconds"] <= 10
    assert webhook["failurePolicy"] == "Fail"
    assert "namespaceSelector" not in webhook and "objectSelector" not in webhook
    assert webhook["rules"] == [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1", "v1beta2"],
                                 "operations": ["CREATE", "UPDATE"], "resources": ["resourceslices"],
                                 "scope": "Cluster"}]
    assert "caBundle" not in webhook["clientConfig"]  # supplied by certs output or cert-manager
    opened = render_with(tmp_path, resources=["base"], components=["components/fail-open"])
    (fail_open,) = find(opened, "ValidatingWebhookConfiguration")["webhooks"]
    assert fail_open == {**webhook, "failurePolicy": "Ignore"}


def _affinity_slice(**spec: Any) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, **spec}}


@pytest.mark.parametrize(("new", "old", "sent"), [
    (_affinity_slice(sharingAffinity=[{"name": "k", "expression": "''"}]), None, True),
    (_affinity_slice(devices=[{"name": "nic0"}]), None, False),
    (_affinity_slice(devices=[{"name": "nic0"}]), _affinity_slice(sharingAffinity=[]), True),
    (_affinity_slice(devices=[{"name": "nic0"}]), _affinity_slice(devices=[]), False),
    (None, _affinity_slice(sharingAffinity=[]), True),  # not sent in practice: DELETE is not registered
], ids=["create-metadata", "create-devices", "update-drops-affinity", "update-devices", "null-object"])
def test_match_conditions_send_only_affinity_slices(base: list[Obj], new: Obj | None, old: Obj | None,
                                                    sent: bool) -> None:
    (webhook,) = find(base, "ValidatingWebhookConfiguration")["webhooks"]
    assert len(webhook["matchConditions"]) == 1
    result = run_expression(webhook["matchConditions"][0]["expression"], (1, 37),
                            {"object": new, "oldObject": old, "request": {}, "variables": {}})
    assert result.error is None and result.value is sent

