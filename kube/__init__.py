"""Reading the Kubernetes API as a controller does: the one list-watch loop.

A package of its own because two front ends need it and may not import each other: the lock
exporter (`lint`) and the webhook's pool cache (`webhook`). It is I/O (HTTP, threads, clocks),
so it is not a stage of `policies`, which decides without doing I/O; it imports only
`policies.core`, and `lint` and `webhook` import it.
"""
