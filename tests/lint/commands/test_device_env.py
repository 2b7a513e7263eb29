"""Device selectors, releases and feature gates through the installed console script.

A DeviceClass selector using `includes` on a list-type attribute (KEP-5491) is evaluated as the
scheduler does from 1.37 (lists are values whatever DRAListTypeAttributes says, stored selectors
ignore gates); `--kubernetes-version 1.38` is accepted and says its CEL environment is 1.37's;
`--feature-gate NAME=on|off` is validated against the release and changes the scheduler model.
"""

from __future__ import annotations

from pathlib import Path

from tests.cli import run

DRIVER = "networking.example.com"
SLICES = f"""\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: nics-meta}}
spec:
  driver: {DRIVER}
  nodeName: node-a
  pool: {{name: node-a, generation: 1, resourceSliceCount: 2}}
  sharingAffinity:
    - name: subnet
      expression: 'has(object.subnetID) ? object.subnetID : ""'
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: nics-0}}
spec:
  driver: {DRIVER}
  nodeName: node-a
  pool: {{name: node-a, generation: 1, resourceSliceCount: 2}}
  devices:
    - name: eth1
      allowMultipleAllocations: true
      attributes:
        vlans: {{ints: [10, 20, 30]}}
        ports: {{strings: [a, b]}}
      capacity:
        {DRIVER}/slots: {{value: "4", requestPolicy: {{default: "1"}}}}
"""
CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: pod-a, namespace: ml}
spec:
  devices:
    requests:
      - name: nic
        exactly: {deviceClassName: vlan20}
    config:
      - requests: [nic]
        opaque:
          driver: networking.example.com
          parameters: {subnetID: subnet-A}
"""


def device_class(expression: str) -> str:
    return ("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: vlan20}\n"
            f"spec:\n  selectors:\n    - cel:\n        expression: '{expression}'\n")


def write_inputs(tmp_path: Path, expression: str) -> list[str]:
    files = {"slices.yaml": SLICES, "claim.yaml": CLAIM, "class.yaml": device_class(expression)}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return [str(tmp_path / name) for name in files]


def outcomes(result_json: dict[str, object]) -> list[str]:
    results = result_json["results"]
    assert isinstance(results, list)
    return [r["outcome"] for r in results]


def test_dry_run_evaluates_includes_on_a_list_attribute(tmp_path: Path) -> None:
    matching = write_inputs(tmp_path, f'device.attributes["{DRIVER}"].vlans.includes(20)')
    ok = run("dry-run", "--format", "json", *matching)
    assert ok.code == 0, ok.err
    assert outcomes(ok.json()) == ["ok"]
    assert ok.json()["results"][0]["affinity"] == {"subnet": "subnet-A"}

    other = write_inputs(tmp_path, f'device.attributes["{DRIVER}"].vlans.includes(40) && '
                                   f'device.attributes["{DRIVER}"].ports.size() == 2')
    none = run("dry-run", "--format", "json", *other)
    assert none.code == 0, none.err
    assert outcomes(none.json()) == []  # the class selects no device: the pool is no candidate
    assert "no claim requests matched any pool" in run("dry-run", *other).out


def test_dry_run_reports_a_type_error_in_a_selector_as_upstream(tmp_path: Path) -> None:
    files = write_inputs(tmp_path, "device.driver <= 8")
    result = run("dry-run", "--format", "json", *files)
    assert result.code == 1
    [entry] = result.json()["results"]
    assert entry["outcome"] == "selector-error"
    text = str(entry)
    assert "found no matching overload for '_<=_' applied to '(string, int)'" in text


def test_kubernetes_1_38_is_accepted_and_says_which_cel_environment(tmp_path: Path) -> None:
    files = write_inputs(tmp_path, f'device.attributes["{DRIVER}"].vlans.includes(20)')
    result = run("dry-run", "--format", "json", "--kubernetes-version", "1.38", *files)
    assert result.code == 0, result.err
    data = result.json()
    assert outcomes(data) == ["ok"]
    assert data["kubernetes"] == {
        "version": "1.38", "celEnvironment": "1.37",
        "note": "Kubernetes 1.38's CEL environment is not published yet; "
                "the newest known one (1.37) is used"}
    current = run("dry-run", "--format", "json", *files).json()
    assert current["kubernetes"] == {"version": "1.37", "celEnvironment": "1.37"}
    assert run("dry-run", "--kubernetes-version", "1.39", *files).code == 2
    assert "1.37 to 1.38" in run("dry-run", "--help").out


def test_feature_gates_are_validated_against_the_release(tmp_path: Path) -> None:
    files = write_inputs(tmp_path, "true")
    unknown = run("locks", "--feature-gate", "DRANope=on", *files)
    assert unknown.code == 2
    assert "unknown feature gate 'DRANope': known gates are DRAConsumableCapacity, " \
           "DRAFractionalCapacityRange, DRAListTypeAttributes, DRAPrioritizedList, " \
           "DRASharingAffinity" in unknown.err
    locked = run("simulate", "--feature-gate", "DRAPrioritizedList=false", *files)
    assert locked.code == 2
    assert "feature is locked to true in Kubernetes 1.37" in locked.err
    bad = run("locks", "--feature-gate", "DRAListTypeAttributes", *files)
    assert bad.code == 2 and "expected NAME=on|off" in bad.err


def test_the_sharing_affinity_gate_changes_the_lock_model(tmp_path: Path) -> None:
    files = write_inputs(tmp_path, "true")
    on = run("locks", "--all", "--format", "json", "--feature-gate", "DRAListTypeAttributes=off",
             "--feature-gate", "DRASharingAffinity=true", *files)
    assert on.code == 0, on.err
    [pool] = on.json()["pools"]
    assert pool["tracked"] is True
    off = run("locks", "--all", "--format", "json", "--feature-gate", "DRASharingAffinity=off",
              *files)
    [pool] = off.json()["pools"]
    assert pool["tracked"] is False
    assert pool["untrackedReason"] == "the DRASharingAffinity feature gate is off"
    # the bare form keeps its meaning
    bare = run("locks", "--all", "--format", "json", "--feature-gate", "off", *files)
    assert bare.json()["pools"] == off.json()["pools"]


SUITE = """\
name: gates
kubernetesVersion: "{version}"
resources: [{resources}]
cases:
  - name: with the release's gates the claim locks the NIC
    allocate:
      - claim: ml/pod-a
        device: eth1
        lock: {{subnet: subnet-A}}
  - name: DRASharingAffinity off leaves the affinity pool unallocatable
    featureGates: {{DRASharingAffinity: off, DRAListTypeAttributes: on}}
    allocate:
      - claim: ml/pod-a
        unschedulable: true
"""


def test_suite_cases_set_feature_gates(tmp_path: Path) -> None:
    files = write_inputs(tmp_path, f'device.attributes["{DRIVER}"].vlans.includes(20)')
    resources = ", ".join(Path(f).name for f in files)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(version="1.38", resources=resources))
    result = run("test", "--format", "json", str(suite))
    assert result.code == 0, result.out + result.err

    locked = SUITE.format(version="1.37", resources=resources).replace(
        "DRAListTypeAttributes: on", "DRAPrioritizedList: off")
    suite.write_text(locked)
    refused = run("test", "--format", "json", str(suite))
    assert refused.code == 1
    assert "featureGates: cannot set feature gate DRAPrioritizedList to false" in refused.out

    suite.write_text(SUITE.format(version="1.37", resources=resources).replace(
        "DRAListTypeAttributes: on", "DRANope: on"))
    unknown = run("test", str(suite))
    assert unknown.code == 2
    assert "DRANope" in unknown.err


def test_cel_check_names_the_cel_environment_of_1_38() -> None:
    result = run("cel", "check", "--kubernetes-version", "1.38", "--format", "json", "object.a")
    assert result.code == 0, result.err
    assert result.json()["kubernetes"]["celEnvironment"] == "1.37"
    assert "not published yet" in result.json()["kubernetes"]["note"]
