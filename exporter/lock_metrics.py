"""The lock series in Prometheus form: `locks --format prometheus` and the exporter's /metrics.

One collector over a `LockReport`, so the textfile written by `locks` and the series
scraped from the exporter are the same. The KEP's gauges
(`sharing_affinity_locked_devices`, `sharing_affinity_unreconstructable_devices`) are
cluster totals without labels, as the scheduler would export them; the per-state and
per-pool series carry `driver`, `pool`, `node` (and `state`, `lock`, `capacity`) labels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from ..policies.scheduler.capacity import amount
from ..policies.scheduler.lock_report import LockReport

LOCKED = "sharing_affinity_locked_devices"
UNRECONSTRUCTABLE = "sharing_affinity_unreconstructable_devices"
_POOL_LABELS = ["driver", "pool", "node"]


class LockCollector(Collector):
    """Yields the lock series of the report `source()` returns at collection time."""

    def __init__(self, source: Callable[[], LockReport]) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        report = self._source()
        totals = report.totals
        yield GaugeMetricFamily(LOCKED, "Devices of sharingAffinity pools locked to affinity values "
                                        "(reconstructed from ResourceClaim status.allocation).",
                                value=totals.locked_devices)
        yield GaugeMetricFamily(UNRECONSTRUCTABLE, "Devices whose lock cannot be reconstructed from "
                                                   "their bound claims (unknown lock state).",
                                value=totals.unreconstructable_devices)
        by_state = GaugeMetricFamily("sharing_affinity_devices", "Devices by lock state, cluster-wide.",
                                     labels=["state"])
        for state, count in totals.states.items():
            by_state.add_metric([state], count)
        yield by_state
        pool_devices = GaugeMetricFamily("sharing_affinity_pool_devices", "Devices of a pool by lock state.",
                                         labels=[*_POOL_LABELS, "state"])
        lock_values = GaugeMetricFamily("sharing_affinity_pool_lock_values",
                                        "Distinct lock values held by the devices of a pool.",
                                        labels=_POOL_LABELS)
        lock_devices = GaugeMetricFamily("sharing_affinity_pool_lock_devices",
                                         "Devices of a pool locked to one value.",
                                         labels=[*_POOL_LABELS, "lock"])
        locked_free = GaugeMetricFamily("sharing_affinity_pool_locked_free_capacity",
                                        "Capacity free on the locked devices of a pool: usable only by "
                                        "claims that extract the same values.",
                                        labels=[*_POOL_LABELS, "capacity"])
        locked_free_devices = GaugeMetricFamily("sharing_affinity_pool_locked_free_devices",
                                                "Locked devices of a pool that still have room.",
                                                labels=_POOL_LABELS)
        for pool in report.pools:
            labels = [pool.ref.driver, pool.ref.name, pool.node]
            for state, count in pool.states.items():
                pool_devices.add_metric([*labels, state], count)
            if pool.untracked:
                continue
            lock_values.add_metric(labels, len(pool.locks))
            for value in pool.locks:
                lock_devices.add_metric([*labels, value.text], value.devices)
            for name, free in pool.locked_free.items():
                locked_free.add_metric([*labels, name], float(amount(free) or Fraction(0)))
            locked_free_devices.add_metric(labels, pool.locked_free_devices)
        yield from (pool_devices, lock_values, lock_devices, locked_free, locked_free_devices)


def exposition(report: LockReport) -> str:
    """The text exposition format (what a node-exporter textfile collector reads)."""
    from prometheus_client.exposition import generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(LockCollector(lambda: report))
    return generate_latest(registry).decode()
