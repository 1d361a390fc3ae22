"""Job callbacks with a real worker and Redis: the status document POSTed when the run ends,
signed, retried after the receiver's 500s, every attempt readable on the job."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from api import create_app
from api.queue import CeleryQueue
from tests.helpers import wait_for
from tests.integration.services import WorkerProcess, broker_settings

pytestmark = pytest.mark.integration
SECRET = "test-secret"


class Receiver:
    """A local HTTP endpoint answering with `codes` in turn (then 200), keeping each call."""

    def __init__(self, codes: list[int]) -> None:
        self.codes, self.calls = list(codes), []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.calls.append((dict(self.headers.items()), body))
                code = receiver.codes.pop(0) if receiver.codes else 200
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def service(tmp_path):
    env = {
        "SKILL_RUNNER_WEBHOOK_HOSTS": "127.0.0.1",
        "SKILL_RUNNER_WEBHOOK_SECRET": SECRET,
        "SKILL_RUNNER_WEBHOOK_BACKOFF_SEC": "0.2",
    }
    with broker_settings(tmp_path, **env) as settings:
        worker = WorkerProcess(settings, "hooks", settings.data_dir / "worker.log", extra_env=env)
        app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
        try:
            yield app.test_client()
        finally:
            worker.stop()


def test_the_callback_is_signed_retried_after_500s_and_recorded(service):
    receiver = Receiver([500, 500])
    body = {"skill_id": "fenced-json", "input": {"text": "x"}, "callback_url": receiver.url}
    rid = service.post("/v1/jobs", json=body).json["request_id"]
    log = wait_for(
        lambda: (lambda w: w if w["state"] == "delivered" else None)(
            service.get(f"/v1/jobs/{rid}/webhooks").json
        ),
        60,
        0.2,
        "the callback delivered",
    )
    assert [(a["attempt"], a["status_code"], a["delivered"]) for a in log["attempts"]] == [
        (1, 500, False),
        (2, 500, False),
        (3, 200, True),
    ]
    assert len(receiver.calls) == 3
    headers, raw = receiver.calls[-1]
    parts = dict(p.split("=", 1) for p in headers["X-Skill-Runner-Signature"].split(","))
    stamp, mac = parts["t"], parts["v1"]
    expected = hmac.new(SECRET.encode(), f"{stamp}.".encode() + raw, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(mac, expected)
    document = json.loads(raw)
    status = service.get(f"/v1/jobs/{rid}").json
    assert document["request_id"] == rid and document["status"] == status["status"]
    assert document["event"] == "terminal" and headers["X-Skill-Runner-Event"] == "terminal"


def test_a_receiver_that_does_not_answer_holds_a_webhooks_slot_never_a_run_or_the_sweep(tmp_path):
    """Workers with queue lists of their own, as deploy/compose.yaml runs them: a callback
    whose receiver holds the request open waits in the `webhooks` worker, while the one slot
    that takes runs and the sweep (`maintenance`) goes on running jobs."""
    release = threading.Event()
    called = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            self.rfile.read(int(self.headers["Content-Length"]))
            called.set()
            release.wait(60)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    env = {"SKILL_RUNNER_WEBHOOK_HOSTS": "127.0.0.1"}
    with broker_settings(tmp_path, **env) as settings:
        log = settings.data_dir / "worker.log"
        runs = WorkerProcess(
            settings, "runs", log, 1, extra_env=env, queues="runs.script,maintenance"
        )
        hooks = WorkerProcess(settings, "hooks", log, 1, extra_env=env, queues="webhooks")
        client = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
        client = client.test_client()
        try:
            body = {"skill_id": "fenced-json", "input": {"text": "a"}, "callback_url": url}
            first = client.post("/v1/jobs", json=body).json["request_id"]
            assert called.wait(60), "the callback was never sent"
            second = client.post(
                "/v1/jobs", json={"skill_id": "fenced-json", "input": {"text": "b"}}
            )
            status = client.get(f"/v1/jobs/{second.json['request_id']}?wait_sec=30").json
            assert status["status"] == "succeeded", status
            # ...while the callback's first attempt is still open (it ends at the 10 s read
            # timeout at most: in one shared slot, the run would have waited for that)
            assert client.get(f"/v1/jobs/{first}/webhooks").json["attempts"] == []
            release.set()
            hooks_log = wait_for(
                lambda: (lambda w: w if w["state"] == "delivered" else None)(
                    client.get(f"/v1/jobs/{first}/webhooks").json
                ),
                60,
                0.2,
                "the held callback delivered once released",
            )
            assert hooks_log["attempts"][0]["status_code"] == 200
        finally:
            release.set()
            runs.stop()
            hooks.stop()
            server.shutdown()
