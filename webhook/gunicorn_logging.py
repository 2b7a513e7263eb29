"""gunicorn's error log in the webhook's JSON format from its very first line.

`on_starting` runs after gunicorn has already logged "Starting gunicorn", so swapping
formatters there left one plain-text line in front of the JSON ones, which log
pipelines parsing every line as JSON choke on. A `logger_class` is set up before the
arbiter logs anything.
"""

from __future__ import annotations

from typing import Any

from dra_affinity.webhook.logs import use_json_for_gunicorn
from gunicorn.glogging import Logger


class JsonLogger(Logger):  # gunicorn ships no type hints: a subclass of Any
    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        use_json_for_gunicorn(self)
