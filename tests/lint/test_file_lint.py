"""`lint` file by file: the pool entry keeps what the pool rules point at, and the merged
findings of several files come out in the order one batch gives."""

from __future__ import annotations

from pathlib import Path

import yaml
from dra_affinity.lint.commands.lint_cmd import check_input
from dra_affinity.lint.file_lint import POOL_PATHS, LintJob, lint_plan, merge, pool_entry
from dra_affinity.lint.inputs import Input, model_objects
from dra_affinity.policies.rules.engine import EngineOptions
from dra_affinity.sources.loader import load_paths, plan_paths

from tests.cli import REPO
from tests.helpers import entry, slice_doc


def test_a_pool_entry_locates_what_the_pool_rules_point_at_like_the_whole_slice() -> None:
    loaded = load_paths([str(REPO / "examples" / "networking-node-a.yaml")])
    slices = model_objects(Input(documents=loaded.documents)).slices
    assert slices
    for full in slices:
        entry_ = pool_entry(full)
        assert entry_.raw == {} and all(not d.attributes for d in entry_.devices)
        assert len(entry_.devices) == len(full.devices)
        names = [("spec", "sharingAffinity", e.index, "name") for e in full.sharing_affinity]
        for path in [*POOL_PATHS, *names, ()]:
            assert entry_.source.locate(path) == full.source.locate(path), path
        assert len(entry_.source.positions) < len(full.source.positions)


def test_files_merged_in_order_give_the_findings_of_one_batch(tmp_path: Path) -> None:
    for i, name in enumerate(("a.yaml", "b.yaml", "c.yaml")):
        doc = slice_doc([entry("subnet", "object.subnet")], name=f"s{i}", pool="p", count=4)
        (tmp_path / name).write_text(yaml.safe_dump(doc) + ("---\nbad: [\n" if i == 1 else ""))
    (tmp_path / "d.yaml").write_text((REPO / "examples" / "broken-slice.yaml").read_text())
    job = LintJob(EngineOptions())
    merged = merge(lint_plan(plan_paths([str(tmp_path)]), job, 1), job, complete_pools=False)
    inputs = load_paths([str(tmp_path)])
    batch, summary = check_input(Input(documents=inputs.documents, findings=inputs.findings,
                                       files=inputs.files, texts=inputs.texts), EngineOptions())
    assert merged.findings == batch and merged.summary == summary
    assert {f.rule for f in batch} >= {"SA000", "SP303"}
