"""One CA and one running webhook shared by the tests that only talk to it; tests that need a
differently configured server start their own (and stop it in a finalizer)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.webhook.support import Server, generate_certs, start_server, stop_server


@pytest.fixture(scope="session")
def cert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory, cert_dir: Path) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("serve"), cert_dir)
    try:
        yield running
    finally:
        stop_server(running)
