"""The multiprocess `/metrics` merge survives a value file that holds no header yet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dra_affinity.webhook.metrics import _WrittenFiles
from prometheus_client import CollectorRegistry, generate_latest, multiprocess
from prometheus_client.mmap_dict import MmapedDict


def test_an_empty_value_file_is_left_out_of_the_merge(tmp_path: Path) -> None:
    """prometheus_client creates a worker's file before sizing it: a scrape in between (a
    worker booting, or killed then) met an empty file and answered 500 for all of `/metrics`."""
    written = MmapedDict(str(tmp_path / "counter_100.db"))
    written.write_value(json.dumps(["t", "t_total", {}, "a counter"]), 3.0, 0.0)
    written.close()
    (tmp_path / "counter_101.db").write_bytes(b"")

    plain = CollectorRegistry()
    multiprocess.MultiProcessCollector(plain, path=str(tmp_path))
    with pytest.raises(Exception):  # noqa: B017 - what the library's own collector does
        generate_latest(plain)

    merged = CollectorRegistry()
    _WrittenFiles(merged, path=str(tmp_path))
    assert b"t_total 3.0" in generate_latest(merged)
