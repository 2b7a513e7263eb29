"""Serve a cluster dump through the test suite's API server stand-in, for `locks_bench.py --live`.

`python bench/serve_cluster.py DUMP.json KUBECONFIG` loads the dump's items into
`tests.webhook.fake_apiserver.FakeApiServer` (paged lists and watches, as the real API server
answers the `kubernetes` client), writes a kubeconfig for it, prints `ready` and serves until
killed. A separate process, so the stand-in's own CPU is not counted in the measured command.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.webhook.fake_apiserver import FakeApiServer


def main() -> None:
    dump, kubeconfig = Path(sys.argv[1]), Path(sys.argv[2])
    server = FakeApiServer()
    for item in json.loads(dump.read_text())["items"]:
        server.put(item)
    server.start()
    server.kubeconfig(kubeconfig)
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
