"""The Python SDK (client/skill_runner_client) against the real service: gunicorn, a Celery
worker on Redis, SQLite. Every method is called at least once."""

from __future__ import annotations

import os
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from skill_runner_client import Client, SkillRunnerError
from tests.helpers import wait_for, zip_bytes
from tests.integration.served import served_stack
from tests.integration.services import broker_settings
from tests.packages import echo_skill

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("sdk")
    with broker_settings(root) as settings, served_stack(settings) as stack:
        yield stack


@pytest.fixture
def client(served):
    with Client(served.base_url) as client:
        yield client


def prime_job(client: Client, bound: int = 100, **kwargs):
    return client.jobs.create(
        "demo-prime-number",
        parameter={"divisor": 2},
        files={"input_file": f"{bound}\n".encode()},
        **kwargs,
    )


def test_service_skills_and_engines(client):
    assert client.health()["database"] == "ok"
    ids = {s["id"] for s in client.skills()}
    assert {"demo-prime-number", "slow-counter"} <= ids
    detail = client.skill("demo-prime-number")
    assert detail["schemas"]["input"]["properties"]["input_file"]["x-input-source"] == "file"
    engines = {e["engine"] for e in client.engines()}
    assert "codex" in engines
    assert client.engine("codex")["engine"] == "codex"
    assert client.engine_models("codex")["engine"] == "codex"
    assert "/v1/jobs" in client.openapi()["paths"]


def test_a_job_with_files_from_create_to_bundle(client, tmp_path):
    created = prime_job(client, 100)
    rid = created["request_id"]
    assert created["status"] == "queued"
    status = client.jobs.wait(rid, timeout=60)
    assert status["status"] == "succeeded", status
    body = client.jobs.result(rid)
    assert body["result"]["data"]["count"] == 15  # primes up to 50
    assert client.jobs.get(rid)["skill_id"] == "demo-prime-number"
    manifest = client.jobs.artifacts(rid)
    assert [a["filename"] for a in manifest] == ["primes.md"]
    report = client.jobs.download_artifact(rid, manifest[0]["path"], tmp_path / "primes.md")
    assert report.read_text().startswith("# Primes up to 50")
    bundle = client.jobs.download_bundle(rid, tmp_path / "out" / "bundle.zip")
    with zipfile.ZipFile(bundle) as zf:
        assert any(name.endswith("primes.md") for name in zf.namelist())
    assert not list((tmp_path / "out").glob("*.part"))
    logs = client.jobs.logs(rid)
    assert "bound=50" in logs["stdout"]
    part = client.jobs.log_range(rid, "stdout", 0, 8)
    assert part["byte_to"] <= 8 and logs["stdout"].startswith(part["text"])
    assert "bound=50" in "".join(client.jobs.follow_log(rid))


def test_result_waits_and_lists_find_the_job(client):
    rid = prime_job(client, 30)["request_id"]
    body = client.jobs.result(rid, wait_sec=30)
    assert body["result"]["status"] == "succeeded"
    page = client.jobs.list(skill_id="demo-prime-number", limit=1)
    assert len(page["items"]) == 1 and page["next_cursor"]
    every = [j["request_id"] for j in client.jobs.iter(skill_id="demo-prime-number", page_size=1)]
    assert rid in every and len(every) == len(set(every)) >= 2


def test_cancel_a_running_job(client):
    rid = client.jobs.create("slow-counter", parameter={"sleep": 30, "ticks": 30})["request_id"]
    client.jobs.wait(rid, timeout=30, until=("running",))
    assert client.jobs.cancel(rid)["accepted"] is True
    status = client.jobs.wait(rid, timeout=30)
    assert status["status"] == "canceled"
    assert status["error"]["code"] == "CANCELED_BY_USER"
    assert client.jobs.cancel(rid)["accepted"] is False


def test_errors_carry_the_service_error_body(client):
    with pytest.raises(SkillRunnerError) as missing:
        client.jobs.get("no-such-request")
    assert missing.value.status == 404
    assert missing.value.code == "REQUEST_NOT_FOUND"
    assert missing.value.request_id  # the X-Request-ID the service gave the call
    with pytest.raises(SkillRunnerError) as invalid:
        client.jobs.create("demo-prime-number", parameter={"divisor": 0})
    assert invalid.value.status == 400
    assert invalid.value.code == "SCHEMA_VALIDATION_FAILED"
    assert invalid.value.body["error"]["details"]
    rid = client.jobs.create("slow-counter", parameter={"sleep": 5})["request_id"]
    with pytest.raises(SkillRunnerError) as running:
        client.jobs.result(rid)
    assert running.value.code == "RUN_NOT_FINISHED"
    client.jobs.cancel(rid)


def test_interactive_routes_refuse_a_run_that_is_not_interactive(client):
    rid = prime_job(client, 10)["request_id"]
    client.jobs.wait(rid, timeout=60)
    # 400 from the interaction routes (by mode); 404 where the service has none yet
    with pytest.raises(SkillRunnerError) as pending:
        client.jobs.pending(rid)
    assert pending.value.status in (400, 404)
    with pytest.raises(SkillRunnerError) as reply:
        client.jobs.reply(rid, 1, "yes", idempotency_key="r-1")
    assert reply.value.status in (400, 404)


def test_the_same_idempotency_key_from_many_threads_makes_one_job(client):
    with ThreadPoolExecutor(20) as pool:
        answers = list(
            pool.map(lambda _i: prime_job(client, 70, idempotency_key="sdk-race"), range(20))
        )
    assert len({a["request_id"] for a in answers}) == 1
    with pytest.raises(SkillRunnerError) as reused:  # the key covers the create's body
        client.jobs.create(
            "demo-prime-number", parameter={"divisor": 3}, idempotency_key="sdk-race"
        )
    assert reused.value.code == "IDEMPOTENCY_KEY_REUSED"


def test_one_off_runs_and_packages(client, tmp_path):
    package = tmp_path / "echo.zip"
    package.write_bytes(zip_bytes(echo_skill("sdk-temp", message="from the package")))
    created = client.temp_runs.create(package, input={"text": "hi"}, idempotency_key="t-1")
    rid = created["request_id"]
    assert created["skill_id"] == "sdk-temp"
    assert client.temp_runs.create(package, input={"text": "hi"}, idempotency_key="t-1") == created
    assert client.temp_runs.wait(rid, timeout=60)["status"] == "succeeded"
    data = client.temp_runs.result(rid)["result"]["data"]
    assert data == {"message": "from the package", "text": "hi"}
    assert client.temp_runs.logs(rid)["request_id"] == rid
    assert client.temp_runs.log_range(rid)["status"] == "succeeded"
    client.temp_runs.download_bundle(rid, tmp_path / "temp.zip")
    assert zipfile.is_zipfile(tmp_path / "temp.zip")
    assert client.temp_runs.cancel(rid)["accepted"] is False
    with pytest.raises(SkillRunnerError):
        client.jobs.get(rid)  # a one-off run is not a job

    files_package = tmp_path / "files.zip"
    files_package.write_bytes(zip_bytes(echo_skill("sdk-temp-files", file_input=True)))
    with_file = client.temp_runs.create(files_package, files={"notes": b"n"})
    assert with_file["status"] == "queued"
    result = client.temp_runs.result(with_file["request_id"], wait_sec=30)["result"]
    assert result["data"]["notes"] == "n"

    installed = client.install(package)
    assert installed["status"] == "succeeded" and installed["skill_id"] == "sdk-temp"
    assert client.install_status(installed["install_id"])["action"] == "installed"
    rid = client.jobs.create("sdk-temp", input={"text": "x"})["request_id"]
    assert client.jobs.wait(rid, timeout=60)["status"] == "succeeded"
    assert client.cleanup(older_than_sec=10**6)["runs_deleted"] == 0


def test_429_is_retried_after_its_retry_after(tmp_path):
    """With one queued run allowed and no worker, a second create is 429 with Retry-After 5;
    the SDK waits and sends it again, and it goes through once the first run is canceled."""
    with (
        broker_settings(tmp_path) as settings,
        served_stack(settings, worker=False, SKILL_RUNNER_QUEUE_MAX="1") as stack,
        Client(stack.base_url) as client,
    ):
        first = client.jobs.create("slow-counter")["request_id"]
        no_retry = Client(stack.base_url, max_retries=0)
        with pytest.raises(SkillRunnerError) as full:
            no_retry.jobs.create("slow-counter")
        no_retry.close()
        assert full.value.status == 429 and full.value.code == "QUEUE_FULL"
        timer = threading.Timer(1.0, client.jobs.cancel, [first])
        timer.start()
        started = time.monotonic()
        second = client.jobs.create("slow-counter")
        waited = time.monotonic() - started
        timer.join()
        assert second["status"] == "queued"
        assert 4.0 <= waited < 15.0  # one Retry-After (5 s), not a fast spin
        assert wait_for(lambda: client.jobs.get(first)["status"] == "canceled", 5)


def test_an_unreachable_service_is_one_error_type():
    with Client("http://127.0.0.1:9", max_retries=0) as client:
        with pytest.raises(SkillRunnerError) as refused:
            client.skills()
    assert refused.value.status is None and refused.value.code == "CONNECTION_FAILED"


def test_events_follow_a_run_to_its_terminal_event_and_resume_after_a_cursor(client):
    rid = prime_job(client)["request_id"]
    events = list(client.jobs.events(rid))
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    last = events[-1]
    assert last["type"] == "conversation.state.changed"
    assert last["data"]["terminal"]["status"] == "succeeded"
    assert any(e["type"] == "raw.stdout" for e in events)
    assert list(client.jobs.events(rid, cursor=2)) == events[2:]


def test_files_the_service_refuses_cancel_the_job_they_were_for(tmp_path):
    limited = {"SKILL_RUNNER_UPLOAD_MAX_BYTES": "1000"}
    with (
        broker_settings(tmp_path, **limited) as settings,
        served_stack(settings, worker=False, **limited) as stack,
        Client(stack.base_url) as client,
    ):
        with pytest.raises(SkillRunnerError) as refused:
            client.jobs.create("demo-prime-number", files={"input_file": os.urandom(5000)})
        assert refused.value.code == "UPLOAD_TOO_LARGE"
        (left,) = client.jobs.iter(skill_id="demo-prime-number")
        assert left["status"] == "canceled"  # not queued for a day, waiting for an upload


def test_an_input_file_that_compresses_very_well_is_still_taken(client):
    padded = b"100\n" + b" " * 5_000_000  # deflated, past the service's zip bomb ratio
    created = client.jobs.create("demo-prime-number", files={"input_file": padded})
    assert client.jobs.wait(created["request_id"], timeout=120)["status"] == "succeeded"
    assert client.jobs.result(created["request_id"])["result"]["data"]["bound"] == 100
