"""`dra-affinity simulate --workload`: the fragmentation report, compare, formats, usage errors."""

from __future__ import annotations

from pathlib import Path

from dra_affinity.policies.scheduler.capacity import amount

from tests.cli import run

WORKLOAD = "examples/capacity/nic-20-subnets.yaml"
POOLS = "examples/capacity/nic-pool.yaml"


def test_compare_prints_both_modes_and_the_difference() -> None:
    result = run("simulate", "--workload", WORKLOAD, POOLS, "--compare")
    assert result.code == 0, result.err  # a report, written: alpha leaving a pod pending fails nothing
    lines = result.out.splitlines()
    assert lines[0].startswith("Workload nic-20-subnets: 2000 arrivals")
    header = lines[2].split()
    assert header == ["alpha", "beta", "beta", "-", "alpha"]
    rows = {line[:46].strip(): line[46:].split() for line in lines[3:] if line.strip()}
    alpha, beta, diff = (int(x) for x in rows["pending, peak"])
    assert beta < alpha and diff == beta - alpha
    assert rows["stranded capacity %, peak"][1] == "0.0"
    for metric in ("sharing_affinity_locked_devices", "sharing_affinity_lock_conflict_total",
                   "sharing_affinity_compatible_reuse_total", "sharing_affinity_extractor_evaluations_total"):
        assert metric in rows
    assert "Devices locked per value at end:" in result.out
    assert "alpha: pending at end because of: 1 lock mismatch" in result.out


def test_one_mode_exits_0_when_nothing_is_pending() -> None:
    result = run("simulate", "--workload", WORKLOAD, POOLS, "--mode", "beta")
    assert result.code == 0, result.out
    assert result.out.splitlines()[2].split() == ["beta"]


def test_json_report() -> None:
    result = run("simulate", "--workload", WORKLOAD, POOLS, "--mode", "alpha", "--mode", "beta",
                 "--format", "json")
    doc = result.json()
    assert doc["workload"] == "nic-20-subnets" and doc["seed"] == 7
    alpha, beta = doc["reports"]
    assert (alpha["mode"], beta["mode"]) == ("alpha", "beta")
    assert alpha["arrivals"] == beta["arrivals"] == 2000
    assert alpha["placed"] + alpha["pending"] == 2000
    assert doc["difference"]["modes"] == ["beta", "alpha"]
    assert doc["difference"]["pending, peak"] == beta["peak"]["pending"] - alpha["peak"]["pending"]
    assert len(alpha["series"]) == 100 and alpha["series"][-1]["time"] <= alpha["duration"]
    assert set(alpha["end"]) >= {"locked", "pending", "pendingFit", "strandedPercent", "inUsePercent",
                                 "capacity", "lockedByValue"}
    assert alpha["metrics"]["sharing_affinity_locked_devices"] == alpha["end"]["locked"]
    assert sum(alpha["end"]["lockedByValue"].values()) == alpha["end"]["locked"]
    assert alpha["extractions"] == 20  # one per subnet: the six pools share their extractor
    assert doc["findings"] == []
    for use in alpha["end"]["capacity"]:  # amounts are Kubernetes quantities, as the slices write them
        total, in_use, stranded = (amount(use[k]) for k in ("total", "inUse", "stranded"))
        assert total is not None and in_use is not None and stranded is not None, use
        assert total >= in_use + stranded >= 0


def test_html_goes_to_the_output_file(tmp_path: Path) -> None:
    out = tmp_path / "plan.html"
    result = run("simulate", "--workload", WORKLOAD, POOLS, "--compare", "--format", "html", "-o", str(out))
    assert result.out == ""
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and "Capacity plan: nic-20-subnets" in text


def test_workload_resources_are_read_relative_to_the_workload_file(tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(f"arrivals: 50\nresources: [{(Path.cwd() / 'examples/capacity/nic-claim.yaml')}]\n"
                        "templates:\n  - claim: ml/nic-pod\n    lifetime: {fixed: 3}\n")
    result = run("simulate", "--workload", str(workload), POOLS, "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["reports"][0]["placed"] == 50


def test_usage_errors() -> None:
    both = run("simulate", "--workload", WORKLOAD, POOLS, "--order", "a,b")
    assert both.code == 2 and "--order and --workload exclude each other" in both.err
    compare = run("simulate", POOLS, "--compare")
    assert compare.code == 2 and "needs --workload" in compare.err
    page = run("simulate", POOLS, "--format", "html")
    assert page.code == 2 and "--format html needs --workload" in page.err


def test_a_bad_workload_file_is_a_located_error(tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text("arrivals: 10\ntemplates:\n  - claim: ml/nic-pod\n    lifetime: {fixed: 1}\n"
                        "    wieght: 2\n")
    result = run("simulate", "--workload", str(workload), POOLS)
    assert result.code == 2
    assert f'{workload}:5:5: unknown field "templates[0].wieght" (did you mean "templates[0].weight"?)' \
        in result.err
    workload.write_text("arrivals: 10\ntemplates:\n  - claim: ml/nic-pod\n    lifetime: {fixed: 1}\n"
                        "    rate: 2\n  - claim: ml/nic-pod\n    lifetime: never\n")
    result = run("simulate", "--workload", str(workload), POOLS)
    assert result.code == 2 and f"{workload}:6:5: templates.1: give every template a `rate`" in result.err
    workload.write_text("arrivals: 10\ntemplates:\n  - claim: ml/nic-pod\n    lifetime: never\n"
                        "    vary: [{field: subnetID, config: 2, values: [a]}]\n")
    result = run("simulate", "--workload", str(workload), POOLS, "examples/capacity/nic-claim.yaml")
    assert result.code == 2
    assert f"{workload}:5:30: templates.0.vary.0.config: claim ml/nic-pod has no opaque config" in result.err
    result = run("simulate", "--workload", str(tmp_path / "missing.yaml"), POOLS)
    assert result.code == 2 and "missing.yaml" in result.err


def test_a_template_whose_class_is_missing_is_an_input_error_and_stays_pending(tmp_path: Path) -> None:
    """The workload report (text and JSON) as `simulate` steps: SA000 naming the request and class."""
    repo = Path(__file__).resolve().parents[3]
    for name in ("nic-20-subnets.yaml", "nic-claim.yaml", "nic-pool.yaml"):
        text = (repo / "examples" / "capacity" / name).read_text()
        text = text.replace("deviceClassName: nic.example.com", "deviceClassName: nic-typo")
        (tmp_path / name).write_text(text.replace("arrivals: 2000", "arrivals: 20"))
    (tmp_path / "class.yaml").write_text(
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: nic.example.com}\n"
        "spec:\n  selectors: [{cel: {expression: 'device.driver == \"nic.example.com\"'}}]\n")
    inputs = ("--workload", str(tmp_path / "nic-20-subnets.yaml"), str(tmp_path / "nic-pool.yaml"),
              str(tmp_path / "class.yaml"))
    message = "claim ml/nic-pod request 'nic': DeviceClass 'nic-typo' is not in the input (the scheduler"
    text = run("simulate", *inputs)
    assert text.code == 1, text.out
    assert f"nic-claim.yaml:12:11: SA000 error: {message}" in text.err
    assert "\n    in ResourceClaimTemplate/ml/nic-pod\n" in text.err
    assert "claims placed                                     0" in text.out
    doc = run("simulate", *inputs, "--format", "json").json()
    assert [f["rule"] for f in doc["findings"]] == ["SA000"] and message in doc["findings"][0]["message"]
    [report] = doc["reports"]
    assert report["placed"] == 0 and report["pendingReasons"] == {"no candidate devices": 20}
    # the class given: the same workload places
    (tmp_path / "nic-claim.yaml").write_text((repo / "examples" / "capacity" / "nic-claim.yaml").read_text())
    assert run("simulate", *inputs, "--mode", "beta").code == 0
