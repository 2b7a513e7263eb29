"""In-process checks of the pieces the server tests cannot reach cheaply: certificate reload
semantics, warning budgets, the 500 path, command-line errors, and `--help` staying light."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from dra_affinity.policies.core.findings import Finding, Location, Severity
from dra_affinity.policies.model.resources import ResourceSlice
from dra_affinity.policies.rules.engine import EngineOptions
from dra_affinity.webhook import certs, settings, tls
from dra_affinity.webhook.admission import PoolVerdict
from dra_affinity.webhook.app import create_app
from dra_affinity.webhook.render import MAX_WARNING_CHARS, cause_reason, fit_warnings, warning_text
from dra_affinity.webhook.settings import WebhookSettings

from tests.cli import REPO, run
from tests.helpers import entry, slice_doc
from tests.webhook.support import (
    NAMESPACE,
    SERVICE,
    clean_env,
    free_port,
    launch,
    metric_value,
    plain_gunicorn,
    review,
    stop_server,
)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _write(directory: Path) -> certs.CertSet:
    made = certs.generate(SERVICE, NAMESPACE)
    certs.write_dir(made, directory)
    return made


def test_context_is_cached_and_swapped_only_when_files_change(tmp_path: Path) -> None:
    first = _write(tmp_path)
    clock = _Clock()
    holder = tls.ReloadingContext(tls.TlsFiles(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")),
                                  check_interval=2.0, clock=clock)
    context = holder.context()
    assert holder.context() is context  # same object per connection: nothing re-read
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert holder.status().serial == first.serving.certificate.serial_number

    second = certs.rotate(first)
    certs.write_dir(second, tmp_path)
    assert holder.context() is context  # not due yet: not even a stat
    clock.now = 2.5
    swapped = holder.context()
    assert swapped is not context
    assert holder.status().serial == second.serving.certificate.serial_number
    assert holder.status().reloads == 1
    clock.now = 5.0
    assert holder.context() is swapped  # unchanged files: no reload


def test_a_torn_write_keeps_the_old_context_until_the_pair_matches(tmp_path: Path) -> None:
    first = _write(tmp_path)
    clock = _Clock()
    holder = tls.ReloadingContext(tls.TlsFiles(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")),
                                  check_interval=1.0, clock=clock)
    context = holder.context()
    second = certs.rotate(first)
    (tmp_path / "tls.key").write_bytes(second.serving.key_pem())  # key written, cert not yet
    clock.now = 1.5
    assert holder.context() is context
    status = holder.status()
    assert status.failures == 1 and status.last_error and status.loaded
    (tmp_path / "tls.crt").write_bytes(second.serving.cert_pem())
    clock.now = 3.0
    assert holder.context() is not context
    assert holder.status().serial == second.serving.certificate.serial_number
    assert holder.status().last_error is None


def test_symlinked_secret_volume_swap_is_seen(tmp_path: Path) -> None:
    """Kubernetes updates a Secret volume by re-pointing `..data`; the files are symlinks."""
    first_dir, second_dir = tmp_path / "..2024_1", tmp_path / "..2024_2"
    first_dir.mkdir()
    second_dir.mkdir()
    first = _write(first_dir)
    certs.write_dir(certs.rotate(first), second_dir)
    data = tmp_path / "..data"
    data.symlink_to(first_dir.name)
    for name in ("tls.crt", "tls.key"):
        (tmp_path / name).symlink_to(f"..data/{name}")
    clock = _Clock()
    holder = tls.ReloadingContext(tls.TlsFiles(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")),
                                  check_interval=1.0, clock=clock)
    before = holder.status().serial
    tmp_link = tmp_path / "..data_tmp"
    tmp_link.symlink_to(second_dir.name)
    os.replace(tmp_link, data)
    clock.now = 2.0
    holder.context()
    assert holder.status().serial != before


def test_cause_reasons_follow_the_field_error_type() -> None:
    assert cause_reason('Duplicate value: "a"') == "FieldValueDuplicate"
    assert cause_reason("Too many: 9: must have at most 8 items") == "FieldValueTooMany"
    assert cause_reason("Forbidden: too complex") == "FieldValueForbidden"
    assert cause_reason("Required value") == "FieldValueRequired"
    assert cause_reason("something else") == "FieldValueInvalid"


def test_long_advisories_fall_back_to_the_rule_summary() -> None:
    path = ("spec", "sharingAffinity", 0, "expression")
    finding = Finding("SA203", Severity.WARNING,
                      "spec.sharingAffinity[0].expression: output type is dyn: " + "x" * 300,
                      (Location(field=path),))
    text = warning_text(finding)
    assert len(text) <= MAX_WARNING_CHARS
    assert text.startswith("SA203 spec.sharingAffinity[0].expression: output type is dyn")


def test_warning_budget_cuts_with_a_note() -> None:
    many = [f"W{i:03d} " + "y" * 110 for i in range(60)]
    fitted = fit_warnings(many + many[:5])  # duplicates are dropped
    assert sum(len(w.encode()) for w in fitted) <= 4096
    assert fitted[:-1] == many[: len(fitted) - 1]
    assert fitted[-1].startswith(f"{60 - (len(fitted) - 1)} more warning(s) omitted")
    assert fit_warnings(many[:3]) == many[:3]


class _BrokenPools:
    """A pool checker whose cluster read raises: the 500 path must stay a clean JSON reply."""

    def check(self, new: ResourceSlice, old: ResourceSlice | None, options: EngineOptions) -> PoolVerdict:
        raise RuntimeError("cluster exploded")


def test_internal_errors_are_a_logged_500_with_json(capfd: object) -> None:
    app = create_app(WebhookSettings(pool_check=True), pools=_BrokenPools())
    client = app.test_client()
    reply = client.post("/validate", json=review(slice_doc([entry("a")]), uid="boom"))
    assert reply.status_code == 500
    assert reply.json == {"error": "internal error while reviewing the request; see the webhook log",
                          "uid": "boom", "code": 500}
    err = capfd.readouterr().err  # type: ignore[attr-defined]
    logged = [json.loads(line) for line in err.splitlines() if '"uid":"boom"' in line]
    assert logged and logged[0]["level"] == "error" and "cluster exploded" in logged[0]["err"]
    # device slices never reach the pool checker, so they are still reviewed
    devices = review(slice_doc(None, devices=[{"name": "d"}]))
    assert client.post("/validate", json=devices).status_code == 200


def test_over_limit_slices_skip_expression_rules_to_bound_cel_work() -> None:
    app = create_app(WebhookSettings())
    expressions = [f"object.?f{i}.orValue('') + 1 +" for i in range(40)]  # 40 broken ones
    doc = slice_doc([entry(f"k{i}", e) for i, e in enumerate(expressions)])
    body = app.test_client().post("/validate", json=review(doc)).get_json()
    assert isinstance(body, dict)
    response = body["response"]
    assert response["allowed"] is False
    assert response["auditAnnotations"]["error-rules"] == "SA101"


def test_serve_usage_errors(tmp_path: Path) -> None:
    missing = run("serve")
    assert missing.code == 2 and "TLS is required" in missing.err
    both = run("serve", "--cert-dir", str(tmp_path), "--cert-file", "x")
    assert both.code == 2 and "not both" in both.err
    (tmp_path / "tls.crt").write_text("not a certificate")
    (tmp_path / "tls.key").write_text("not a key")
    broken = run("serve", "--cert-dir", str(tmp_path))
    assert broken.code == 2 and "cannot load" in broken.err


def test_help_does_not_import_the_webhook_stack() -> None:
    code = ("import sys\nfrom dra_affinity.lint.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('flask', 'gunicorn', 'prometheus_client', 'cryptography', 'webhook')"
            " if m in sys.modules]\nprint('HEAVY', heavy)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          timeout=60)
    assert "HEAVY []" in proc.stdout, proc.stdout + proc.stderr
    assert "serve" in proc.stdout and "certs" in proc.stdout


def test_plain_gunicorn_with_the_shipped_config_serves_the_webhook(tmp_path: Path) -> None:
    """The documented deployment without the CLI: `gunicorn -c webhook/gunicorn_conf.py`."""
    metrics_port = free_port()
    _write(tmp_path / "certs")
    command, env, port = plain_gunicorn(tmp_path, tmp_path / "certs", f"127.0.0.1:{metrics_port}")
    server = launch(command, port, tmp_path, tmp_path / "certs", env=env, metrics_port=metrics_port)
    try:
        response = server.review(review(slice_doc([entry("a"), entry("a")])))["response"]
        assert response["allowed"] is False
        assert "dra_affinity_admission_requests_total" in server.metrics()
        assert server.request("GET", "/metrics").status == 404  # not on the admission port
        assert list((tmp_path / "metrics").glob("*.db"))  # samples went to the multiprocess dir
    finally:
        stop_server(server)


def _ipv6_loopback() -> bool:
    try:
        free_port("::1")
    except OSError:
        return False
    return True


@pytest.mark.parametrize("form", ["port", "ipv6"])
def test_every_metrics_bind_form_serves_metrics_on_that_listener(tmp_path: Path, form: str) -> None:
    """A bare port (all interfaces) and a bracketed IPv6 address: gunicorn binds, the worker
    skips TLS and the application answers `/metrics` on the same listener (it used to be
    bound with `/metrics` answering 404, or not bound at all)."""
    if form == "ipv6" and not _ipv6_loopback():
        pytest.skip("no IPv6 loopback on this machine")
    host = "::1" if form == "ipv6" else "127.0.0.1"
    metrics_port = free_port(host)
    bind = f"[::1]:{metrics_port}" if form == "ipv6" else str(metrics_port)
    _write(tmp_path / "certs")
    command, env, port = plain_gunicorn(tmp_path, tmp_path / "certs", bind)
    server = launch(command, port, tmp_path, tmp_path / "certs", env=env, metrics_port=metrics_port)
    try:
        assert server.review(review(slice_doc([entry("a")])))["response"]["allowed"] is True
        scraped = server.plain_request("GET", "/metrics", host=host)
        assert scraped.status == 200, scraped.body
        assert b"dra_affinity_admission_requests_total" in scraped.body
        assert server.plain_request("GET", "/readyz", host=host).status == 200
        assert server.plain_request("POST", "/validate", host=host).status == 404  # never admits
        assert server.request("GET", "/metrics").status == 404  # not on the admission port
    finally:
        stop_server(server)


@pytest.mark.parametrize("value", ["garbage", "::1:9100", "[::1]9100", "[nothost]:9100", "127.0.0.1:99999",
                                   "unix:/tmp/metrics.sock"])
def test_an_unreadable_metrics_bind_stops_gunicorn_with_the_variable_named(tmp_path: Path,
                                                                          value: str) -> None:
    _write(tmp_path / "certs")
    command, env, _ = plain_gunicorn(tmp_path, tmp_path / "certs", value)
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=clean_env(env), timeout=60)
    assert proc.returncode != 0
    assert f"DRA_AFFINITY_METRICS_BIND: {value!r}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


def test_metrics_bind_values_and_their_problems() -> None:
    def parsed(value: str) -> object:
        return settings.parse_listen_address(value, "0.0.0.0")

    listen = settings.ListenAddress
    assert parsed("9100") == listen("0.0.0.0", 9100)
    assert parsed(":9100") == listen("0.0.0.0", 9100)
    assert parsed("[::1]:9100") == listen("::1", 9100) and listen("::1", 9100).bind == "[::1]:9100"
    assert parsed("metrics.local:9100") == listen("metrics.local", 9100)
    assert parsed(" 127.0.0.1:9100 ") == listen("127.0.0.1", 9100)
    assert [parsed(v) for v in ("", "0", "OFF", "127.0.0.1:0")] == [None] * 4
    problem = parsed("::1:9100")
    assert isinstance(problem, settings.SettingsProblem) and "[::1]:9100" in problem.message
    loaded = settings.from_env({"DRA_AFFINITY_METRICS_BIND": "9100x"})
    assert isinstance(loaded, settings.SettingsProblem)
    assert loaded.message.startswith("DRA_AFFINITY_METRICS_BIND: '9100x'")
    default = settings.from_env({})
    assert isinstance(default, settings.WebhookSettings) and default.metrics_bind == listen("0.0.0.0", 8080)
    off = settings.WebhookSettings(metrics_bind=None)
    assert settings.from_env(off.to_env()) == off


def test_findings_cache_keys_on_what_slice_rules_read() -> None:
    from dra_affinity.policies.rules.engine import EngineOptions
    from dra_affinity.webhook.admission import FindingsCache

    from tests.helpers import entry, model, slice_doc

    cache = FindingsCache(maxsize=2)
    options = EngineOptions()
    expensive = '"prefix-" + object.x'
    new = model(slice_doc([entry("k", expensive)]))
    first = cache.entry(new, None, options).findings
    assert [f.rule for f in first if f.rule == "SA108"] == ["SA108"]
    assert cache.entry(model(slice_doc([entry("k", expensive)])), None, options).findings is first
    # ratcheting: the same slice against an old object that stored the expression
    ratcheted = cache.entry(new, model(slice_doc([entry("k", expensive)])), options).findings
    assert "SA108" not in [f.rule for f in ratcheted]
    # device contents are not part of the key, their presence is
    with_devices = model(slice_doc([entry("k", expensive)], devices=[{"name": "d"}]))
    assert "SA109" in [f.rule for f in cache.entry(with_devices, None, options).findings]


def _admitted(uid: str, doc: dict[str, object], admitter: object = None) -> object:
    from dra_affinity.webhook.admission import Admitter, parse_review

    admitter = admitter or Admitter(WebhookSettings())
    request = parse_review(review(doc, uid=uid))
    assert not isinstance(request, str)
    return admitter.admit(request)  # type: ignore[attr-defined, arg-type]


def test_memoized_replies_equal_fresh_ones_for_every_uid() -> None:
    """`review_json` splices the uid into text kept per findings-cache entry: it must give
    exactly what serializing `review()` gives, for uids that need JSON escaping too."""
    from dra_affinity.webhook.admission import Admitter, Verdict

    admitter = Admitter(WebhookSettings())
    denied = slice_doc([entry("a"), entry("a", '"x" + object.y')])
    for doc in (denied, slice_doc([entry("a")])):
        replies = []
        for uid in ("u-1", 'quo"te\\and\u00e9', "u-1"):
            verdict = _admitted(uid, doc, admitter)
            assert isinstance(verdict, Verdict) and verdict.cached is not None
            text = verdict.review_json()
            assert text == json.dumps(verdict.review(), separators=(",", ":"))
            assert json.loads(text)["response"]["uid"] == uid
            replies.append(text)
        assert replies[0] == replies[2]
        assert len(verdict.cached.replies) == 1  # one variant: same api version, decision, name


def test_replies_with_pool_findings_are_not_memoized() -> None:
    from dra_affinity.webhook.admission import Admitter, Verdict

    pool_finding = Finding("SP301", Severity.ERROR, "spec.sharingAffinity[0].name: Duplicate value: \"a\"",
                           (Location.at(None, ("spec", "sharingAffinity", 0, "name")),))

    class _Pools:
        def check(self, new: ResourceSlice, old: ResourceSlice | None,
                  options: EngineOptions) -> PoolVerdict:
            return PoolVerdict(findings=(pool_finding,))

    admitter = Admitter(WebhookSettings(pool_check=True), pools=_Pools())
    verdict = _admitted("p-1", slice_doc([entry("a")]), admitter)
    assert isinstance(verdict, Verdict)
    assert verdict.cached is None and pool_finding in verdict.findings
    reply = json.loads(verdict.review_json())["response"]
    assert reply["allowed"] is False and reply["auditAnnotations"]["error-rules"] == "SP301"


def test_event_recorder_writes_batches_samples_before_lines(capfd: object) -> None:
    """Lines of a batch come out in one write with each request's own time; counters are
    incremented once per label set; nothing is lost at flush."""
    import logging

    from dra_affinity.webhook import logs
    from dra_affinity.webhook.events import EventRecorder, ReviewEvent
    from dra_affinity.webhook.metrics import Metrics

    logger = logs.configure("INFO")
    metrics = Metrics()
    order: list[str] = []
    original = metrics.count_requests

    def counting(*args: object, **kwargs: object) -> None:
        order.append("samples")
        original(*args, **kwargs)  # type: ignore[arg-type]

    metrics.count_requests = counting  # type: ignore[method-assign]
    syncs: list[int] = []
    recorder = EventRecorder(logger, metrics, lambda: syncs.append(1), interval=3600)
    for i in range(5):
        recorder.record(ReviewEvent(1000.0 + i, {"uid": f"e-{i}"}, "denied" if i % 2 else "allowed",
                                    "CREATE", False, 0.002, (("SA102", "error"),) if i % 2 else (),
                                    None))
    assert capfd.readouterr().err == ""  # type: ignore[attr-defined]  # nothing before the flush
    recorder.flush()
    lines = [json.loads(x) for x in capfd.readouterr().err.splitlines()]  # type: ignore[attr-defined]
    assert [x["uid"] for x in lines] == [f"e-{i}" for i in range(5)]
    assert [x["ts"] for x in lines] == [1000.0 + i for i in range(5)]
    assert all(x["msg"] == "admission review" and x["level"] == "info" for x in lines)
    assert order == ["samples", "samples"]  # allowed and denied: one increment each
    text = metrics.exposition()[0].decode()
    assert metric_value(text, "dra_affinity_admission_requests_total",
                        {"decision": "allowed", "dry_run": "false", "operation": "CREATE"}) == 3
    assert metric_value(text, "dra_affinity_admission_rule_requests_total",
                        {"decision": "denied", "rule": "SA102", "severity": "error"}) == 2
    assert metric_value(text, "dra_affinity_admission_duration_seconds_count", {"decision": "denied"}) == 2
    assert syncs == [1]
    logger.setLevel(logging.WARNING)
    recorder.record(ReviewEvent(0.0, {"uid": "quiet"}, "allowed", "CREATE", False, 0.001, (), None))
    recorder.flush()
    assert "quiet" not in capfd.readouterr().err  # type: ignore[attr-defined]


def test_event_lines_go_through_other_handlers_as_records() -> None:
    """An operator's own handler on the webhook logger gets ordinary records, dated by request."""
    import logging

    from dra_affinity.webhook import logs

    logger = logging.getLogger("dra_affinity.test-events")
    logger.setLevel(logging.INFO)
    records: list[logging.LogRecord] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger.addHandler(_Keep())
    logs.events(logger, logging.INFO, "admission review", [(12.5, {"uid": "a"}), (13.5, {"uid": "b"})])
    assert [(r.created, r.getMessage(), r.fields["uid"]) for r in records] == [  # type: ignore[attr-defined]
        (12.5, "admission review", "a"), (13.5, "admission review", "b")]


def test_event_thread_flushes_on_its_own() -> None:
    import time

    from dra_affinity.webhook import logs
    from dra_affinity.webhook.events import EventRecorder, ReviewEvent
    from dra_affinity.webhook.metrics import Metrics

    flushed: list[int] = []
    metrics = Metrics()
    recorder = EventRecorder(logs.configure("WARNING"), metrics, lambda: flushed.append(1), interval=0.01)
    recorder.record(ReviewEvent(0.0, {"uid": "t"}, "allowed", "CREATE", True, 0.001, (), "ok"))
    deadline = time.monotonic() + 5
    sample = 'dra_affinity_pool_checks_total{result="ok"} 1.0'
    while sample not in metrics.exposition()[0].decode() and time.monotonic() < deadline:
        time.sleep(0.01)
    text = metrics.exposition()[0].decode()
    assert sample in text and flushed == [1]
    assert 'dry_run="true"' in text


def test_batched_lines_are_the_lines_the_formatter_writes(capfd: object) -> None:
    """The batch path encodes shared keys once; its lines must equal `JsonFormatter`'s,
    escaping included, and a field named like a shared key still replaces it."""
    import logging

    from dra_affinity.webhook import logs

    logger = logs.configure("INFO")
    events = [(1795955339.0429, {"uid": 'q"u\u00e9', "rules": ["SA203"], "dry_run": False,
                                 "duration_s": 1.5e-05}),
              (1.0, {}),
              (2.5, {"msg": "replaced", "uid": "o"})]
    logs.events(logger, logging.INFO, "admission review", events)
    written = capfd.readouterr().err.splitlines()  # type: ignore[attr-defined]
    formatter = logs.JsonFormatter()
    expected = []
    for created, fields in events:
        record = logger.makeRecord(logger.name, logging.INFO, "", 0, "admission review", (), None,
                                   extra={"fields": fields})
        record.created = created
        expected.append(formatter.format(record))
    assert written == expected
    assert json.loads(written[2])["msg"] == "replaced"


def test_queued_events_are_written_when_the_process_exits() -> None:
    """A worker that exits normally (gunicorn workers leave through sys.exit) writes what is
    still queued: nothing waits for the next batch."""
    code = ("from webhook import logs\nfrom dra_affinity.webhook.events import EventRecorder, ReviewEvent\n"
            "from dra_affinity.webhook.metrics import Metrics\n"
            "r = EventRecorder(logs.configure('INFO'), Metrics(), lambda: None, interval=3600)\n"
            "r.record(ReviewEvent(1.0, {'uid': 'at-exit'}, 'allowed', 'CREATE', False, 0.001, (), None))\n"
            "raise SystemExit(0)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stderr.splitlines() if x.startswith("{")]
    assert [x["uid"] for x in lines] == ["at-exit"]


def test_event_writer_survives_failures_and_bounds_its_queue(capfd: object, monkeypatch: object) -> None:
    """A failure to count costs no lines; past the bound, events are dropped and the count is
    logged once writing resumes; the background writer keeps going after an error."""
    import time

    from dra_affinity.webhook import events, logs
    from dra_affinity.webhook.events import EventRecorder, ReviewEvent
    from dra_affinity.webhook.metrics import Metrics

    metrics = Metrics()

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("metrics directory vanished")

    metrics.observe_duration = broken  # type: ignore[method-assign]
    recorder = EventRecorder(logs.configure("INFO"), metrics, lambda: None, interval=3600)
    monkeypatch.setattr(events, "MAX_QUEUED", 3)  # type: ignore[attr-defined]
    for i in range(5):
        recorder.record(ReviewEvent(float(i), {"uid": f"b-{i}"}, "allowed", "CREATE", False, 0.001,
                                    (), None))
    recorder.flush()
    lines = [json.loads(x) for x in capfd.readouterr().err.splitlines()]  # type: ignore[attr-defined]
    assert [x["uid"] for x in lines if "uid" in x] == ["b-0", "b-1", "b-2"]
    assert any(x["msg"] == "counting review events failed" and x["events"] == 3 for x in lines)
    assert any(x["msg"].startswith("review events dropped") and x["dropped"] == 2 for x in lines)

    # the thread: a batch that raises is logged, and the next batch is still written
    calls = {"n": 0}
    threaded = EventRecorder(logs.configure("INFO"), Metrics(), lambda: None, interval=0.01)
    original = threaded._write

    def flaky(batch: list[ReviewEvent]) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("first batch fails")
        original(batch)

    threaded._write = flaky  # type: ignore[method-assign]
    threaded.record(ReviewEvent(0.0, {"uid": "t-1"}, "allowed", "CREATE", False, 0.001, (), None))
    deadline = time.monotonic() + 30
    while calls["n"] < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    threaded.record(ReviewEvent(0.0, {"uid": "t-2"}, "allowed", "CREATE", False, 0.001, (), None))
    text = ""
    deadline = time.monotonic() + 30  # a bound on a loaded machine, not a speed target
    while '"t-2"' not in text and time.monotonic() < deadline:
        time.sleep(0.01)
        text += capfd.readouterr().err  # type: ignore[attr-defined]
    assert "writing review events failed" in text and '"uid":"t-2"' in text


class _NoEnvironment(dict[str, str]):
    """An `os.environ` stand-in that fails any read: nothing may consult the environment."""

    def get(self, key: str, default: object = None) -> str:  # type: ignore[override]
        raise AssertionError(f"environment read per connection: {key}")

    __getitem__ = get  # type: ignore[assignment]


def test_worker_tls_reads_its_settings_once_and_retries_a_failed_first_load(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Conf:
        certfile, keyfile, ca_certs = str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"), None

    monkeypatch.setenv("DRA_AFFINITY_TLS_MIN_VERSION", "1.3")
    monkeypatch.setenv("DRA_AFFINITY_CERT_CHECK_INTERVAL", "60")
    serving = tls.WorkerTls.from_gunicorn(Conf())
    monkeypatch.setattr(os, "environ", _NoEnvironment())
    with pytest.raises(tls.TlsLoadError):  # no certificate yet
        serving.context()
    _write(tmp_path)
    context = serving.context()  # the next connection finds the files
    assert context.minimum_version == ssl.TLSVersion.TLSv1_3
    assert all(serving.context() is context for _ in range(3))


def test_findings_cache_is_bounded_by_bytes_as_well_as_by_count() -> None:
    """A slice's texts are the findings key: by count alone, 1,024 entries of 7 MiB requests
    (28 MiB each as strings with an astral character) were unbounded in practice."""
    from dra_affinity.policies.rules.engine import EngineOptions
    from dra_affinity.webhook.admission import FindingsCache

    from tests.helpers import model

    small = FindingsCache(maxsize=1024, max_bytes=2 * 1024 * 1024)
    options = EngineOptions(disabled_rules=frozenset({"SA105", "SA106", "SA107", "SA108"}))
    for i in range(8):  # each ~1 MB of text in its key (250,000 characters x 4 bytes)
        text = f'"\U0001F600{i}" == "' + "x" * 250_000 + '"'
        small.entry(model(slice_doc([entry("k", text)])), None, options)
    assert 1 <= len(small.cache) <= 2
    assert small.cache.weight <= 2 * 1024 * 1024
    ordinary = FindingsCache()  # the default budget still holds the default count of ordinary slices
    weight = FindingsCache.weigh(ordinary.key(model(slice_doc([entry("a")])), None, options),
                                 ordinary.entry(model(slice_doc([entry("a")])), None, options))
    assert weight * 1024 <= FindingsCache.MAX_BYTES


def test_body_framing_reads_length_chunked_and_refuses_ambiguity() -> None:
    from dra_affinity.webhook.worker import body_framing

    def framing(*headers: bytes) -> tuple[str, int]:
        head = b"POST / HTTP/1.1\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n"
        found = body_framing(head, len(head))
        return found.kind, found.length

    assert framing(b"Content-Length: 12") == ("length", 12)
    assert framing(b"content-length:  7 ") == ("length", 7)
    assert framing(b"Transfer-Encoding: chunked") == ("chunked", 0)
    assert framing() == ("none", 0)
    assert framing(b"Content-Length: 1", b"Content-Length: 1")[0] == "other"
    assert framing(b"Content-Length: 1", b"Transfer-Encoding: chunked")[0] == "other"
    assert framing(b"Transfer-Encoding: gzip")[0] == "other"
    assert framing(b"Content-Length: -1")[0] == "other"


def test_scan_chunks_waits_finishes_bounds_and_refuses() -> None:
    from dra_affinity.webhook.worker import ChunkScan, scan_chunks

    body = b"5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\n\r\n"
    for cut in range(len(body) - 1):
        assert scan_chunks(body[:cut], ChunkScan(0), 100) == "more", cut
    scan = ChunkScan(0)
    assert scan_chunks(body, scan, 100) == "done" and scan.decoded == 8
    assert scan_chunks(b"0\r\nTrailer: x\r\n\r\n", ChunkScan(0), 100) == "done"
    assert scan_chunks(body, ChunkScan(0), 6) == "over"
    assert scan_chunks(b"zz\r\n{}\r\n0\r\n\r\n", ChunkScan(0), 100) == "bad"
    assert scan_chunks(b"ffffffffffffffffff\r\n", ChunkScan(0), 100) == "bad"


def test_nesting_is_measured_outside_strings_and_refused_past_go_bound() -> None:
    from dra_affinity.webhook.body import GO_MAX_DEPTH, DepthError, decode, nesting

    assert nesting(b'[{"a": "[[[{{{\\"[["}, [[]]]') == (3, None)
    assert nesting(b"[" * GO_MAX_DEPTH + b"]" * GO_MAX_DEPTH) == (GO_MAX_DEPTH, None)
    assert nesting(b"[" * (GO_MAX_DEPTH + 5)) == (GO_MAX_DEPTH + 1, ord("["))
    value = decode(b"[" * GO_MAX_DEPTH + b"]" * GO_MAX_DEPTH)
    for _ in range(GO_MAX_DEPTH - 1):
        assert isinstance(value, list)
        value = value[0]
    assert value == []
    with pytest.raises(DepthError, match=r"^invalid character '\{' exceeded max depth$"):
        decode(b'{"a":' * (GO_MAX_DEPTH + 1) + b"1" + b"}" * (GO_MAX_DEPTH + 1))
    assert sys.getrecursionlimit() < GO_MAX_DEPTH  # raised for the deep decode only


def test_throttled_log_counts_every_event_and_writes_one_line_per_interval() -> None:
    from dra_affinity.webhook.throttle import ThrottledLog

    clock = _Clock()
    counted: list[str] = []
    lines: list[dict[str, object]] = []

    class _Counter:
        def count(self, kind: str) -> None:
            counted.append(kind)

    class _Log:
        def warning(self, message: str, extra: dict[str, dict[str, object]]) -> None:
            lines.append({"msg": message, **extra["fields"]})

    throttled = ThrottledLog(_Log(), _Counter(), 10.0, clock=lambda: clock.now)
    for _ in range(500):
        throttled.record("timeout:body")
        clock.now += 0.01
    throttled.record("rejected:plain-http")
    assert len(counted) == 501
    assert [(x["kind"], x["count"]) for x in lines] == [("timeout:body", 1), ("rejected:plain-http", 1)]
    throttled.flush()
    assert len(lines) == 2  # the interval has not passed
    clock.now += 10
    throttled.flush()
    assert [(x["kind"], x["count"]) for x in lines[2:]] == [("timeout:body", 499)]


def test_listening_line_names_plain_listeners_http() -> None:
    from dra_affinity.webhook.gunicorn_logging import plain_listeners

    assert plain_listeners("https://0.0.0.0:8443,https://0.0.0.0:8080", frozenset({8080})) == \
        "https://0.0.0.0:8443,http://0.0.0.0:8080"
    assert plain_listeners("https://[::]:8443,https://[::]:8080", frozenset({8080})) == \
        "https://[::]:8443,http://[::]:8080"
    assert plain_listeners("http://127.0.0.1:9", frozenset({9})) == "http://127.0.0.1:9"


def test_throttled_lines_carry_the_fields_of_the_occurrence_that_opens_the_interval() -> None:
    from dra_affinity.webhook.throttle import ThrottledLog

    clock = _Clock()
    lines: list[dict[str, object]] = []

    class _Log:
        def warning(self, message: str, extra: dict[str, dict[str, object]]) -> None:
            lines.append({"msg": message, **extra["fields"]})

    throttled = ThrottledLog(_Log(), None, 2.0, clock=lambda: clock.now)
    for error in ("first", "second", "third"):
        throttled.record("rejected-request:400", "request rejected", {"code": 400, "error": error})
    clock.now = 2.5
    throttled.record("rejected-request:400", "request rejected", {"code": 400, "error": "fourth"})
    throttled.record("rejected-request:413", "request rejected", {"code": 413, "error": "big"})
    assert [(x["msg"], x["error"], x["count"]) for x in lines] == [
        ("request rejected", "first", 1), ("request rejected", "fourth", 3), ("request rejected", "big", 1)]
