"""gunicorn's error log in the webhook's JSON format from its very first line.

`on_starting` runs after gunicorn has already logged "Starting gunicorn", so swapping
formatters there left one plain-text line in front of the JSON ones, which log
pipelines parsing every line as JSON choke on. A `logger_class` is set up before the
arbiter logs anything.

gunicorn names every listener `https://` once a certificate is configured, but the worker
serves the metrics listener without TLS (`dra_affinity.webhook.worker`): its "Listening at"
line is corrected here, so the address it prints is one that answers.
"""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

from .logs import use_json_for_gunicorn
from .settings import from_env

_LISTENING = "Listening at: %s (%s)"
"""gunicorn's arbiter line naming the listeners."""


def plain_listeners(listeners: str, plain_ports: frozenset[int]) -> str:
    """gunicorn's comma-separated listener URLs with `https://` → `http://` on `plain_ports`."""
    named = []
    for url in listeners.split(","):
        port = url.rsplit(":", 1)[-1]
        if url.startswith("https://") and port.isdigit() and int(port) in plain_ports:
            url = "http://" + url.removeprefix("https://")
        named.append(url)
    return ",".join(named)


class JsonLogger(Logger):  # gunicorn ships no type hints: a subclass of Any
    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        use_json_for_gunicorn(self)

    def info(self, msg: str, *args: Any, **kwargs: Any) -> None:
        if msg == _LISTENING and args and isinstance(args[0], str):
            settings = from_env()
            bind = getattr(settings, "metrics_bind", None)
            if bind is not None:
                args = (plain_listeners(args[0], frozenset({bind.port})), *args[1:])
        super().info(msg, *args, **kwargs)
