"""The lock exporter: a long-running server beside the webhook, serving a cluster's affinity
locks on /metrics.

`lock_exporter` keeps a `LockBook` current from one `kube.listwatch` loop per resource and
serves it over HTTP; `lock_metrics` turns a lock report into Prometheus families, the same
series `locks --format prometheus` prints. It imports `policies` and `kube`, never `lint`
(whose `exporter` command starts it) or `webhook`.
"""
