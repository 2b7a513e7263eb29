"""The one way to the Kubernetes API server: credentials, raw reads, and the list-watch loop.

`client.connect` finds credentials as kubectl does; `listwatch` lists (every page, checked to be
a list) and then watches, with client-go's discipline. A package of its own because three
packages reach the API server and may not import each other: `sources` (a cluster's lists, for
`--cluster`), the lock `exporter` and the webhook's pool cache. It is I/O (HTTP, threads,
clocks), so it is not a stage of `policies`, which decides without doing I/O; it imports only
`policies.core`.
"""
