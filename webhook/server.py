"""`dra-affinity serve`'s gunicorn application: `dra_affinity.webhook.gunicorn_conf`, then the CLI's options.

Starting from the same configuration module as a plain `gunicorn -c webhook/gunicorn_conf.py`
keeps the two ways of running the webhook identical; the command only overrides settings.
The Flask app is loaded in each worker after the fork (no preload), so nothing heavy —
prometheus_client above all, see `dra_affinity.webhook.multiproc` — is imported in the master.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gunicorn.app.base import BaseApplication


class WebhookServer(BaseApplication):  # gunicorn ships no type hints: a subclass of Any
    def __init__(self, overrides: Mapping[str, Any]) -> None:
        self.overrides = dict(overrides)
        super().__init__()

    def load_config(self) -> None:
        from . import gunicorn_conf

        for key, value in vars(gunicorn_conf).items():
            if key in self.cfg.settings and value is not None:
                self.cfg.set(key, value)
        for key, value in self.overrides.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from .app import create_app

        return create_app()
