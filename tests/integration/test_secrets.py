"""Secrets never leave: a real worker holds fake provider keys, an API token, a webhook secret
and a database password; the `secret-hunter` script skill reads everything it can (its env,
the run directory with the engine home, /proc/<pid>/environ of its parents and of every
process, the service logs) and prints and stores it. None of the secrets is in what it found,
nor in the run's logs, events, bundles, file previews or the service's logs."""

from __future__ import annotations

import io
import zipfile

import pytest

from api import create_app
from api.queue import CeleryQueue
from runner_core.bundles import stream_bundle
from tests.databases import create_postgres_db
from tests.helpers import copy_skills, migrated_settings, wait_for, wait_for_job
from tests.integration.services import WorkerProcess

pytestmark = pytest.mark.integration
DB_PASSWORD = "pg-pass-5f1e0c2a9d"
SECRETS = {
    "OPENAI_API_KEY": "sk-fake-openai-8c1f4e9a2b7d",
    "ANTHROPIC_API_KEY": "sk-ant-fake-3d9b1c7e5a",
    "GEMINI_API_KEY": "AIza-fake-gemini-6e2f8a1c",
    "IFLOW_API_KEY": "iflow-fake-0b4d7e2a9c",
    "SKILL_RUNNER_API_TOKEN": "api-token-fake-7a3c9e1f5b2d",
    "SKILL_RUNNER_WEBHOOK_SECRET": "whsec-fake-2e8b4d6a1c",
}
MARKER = ("SKILL_RUNNER_HUNT_MARKER", "visible-marker-4f2a")  # not a secret: must be found


@pytest.fixture
def hunted(tmp_path, redis_url):
    """(client, settings, request id, worker) of a finished secret-hunter run (debug bundle)."""
    copy_skills(tmp_path / "skills")
    url, drop = create_postgres_db()
    # trust authentication ignores the password, which is in the URL all the same
    url = url.replace("postgresql://postgres@", f"postgresql://postgres:{DB_PASSWORD}@")
    settings = migrated_settings(tmp_path, DATABASE_URL=url, CELERY_BROKER_URL=redis_url)
    app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
    worker = WorkerProcess(
        settings,
        "secrets",
        settings.data_dir / "worker-secrets.log",
        concurrency=1,
        # unboxed: the run box's own pid namespace would hide the worker's processes from the
        # hunt altogether; what is tested is that they hold no secret even when visible
        extra_env={**SECRETS, MARKER[0]: MARKER[1], "SKILL_RUNNER_SANDBOX": "off"},
    )
    client = app.test_client()
    try:
        rid = client.post(
            "/v1/jobs", json={"skill_id": "secret-hunter", "runtime_options": {"debug": True}}
        ).json["request_id"]

        status = wait_for_job(client, rid, 60)
        assert status["status"] == "succeeded", status
        yield client, settings, rid, worker
    finally:
        worker.stop()
        app.extensions["db"].kw["bind"].dispose()
        drop()


def leaked(text: str) -> list[str]:
    return [name for name, value in {**SECRETS, "db": DB_PASSWORD}.items() if value in text]


def test_a_script_reads_no_secret_of_the_service(hunted):
    client, _settings, rid, worker = hunted
    found = client.get(f"/v1/jobs/{rid}/artifacts/found.txt").get_data(as_text=True)
    assert leaked(found) == []
    # the hunt did look: its parents' environments were readable (the marker is in them),
    # the worker's main process among them, and the run's engine home was walked
    assert MARKER[1] in found
    assert f"[parent {worker.proc.pid} environ]" in found
    assert f"[parent {worker.proc.pid} environ] unreadable" not in found
    assert "[own env] SKILL_RUNNER_RUN_ID=" in found
    assert "service log skill_runner.log" in found


def test_no_secret_in_the_runs_logs_events_bundles_or_previews(hunted):
    client, settings, rid, _worker = hunted
    texts = {
        "logs": client.get(f"/v1/jobs/{rid}/logs").get_data(as_text=True),
        "range": client.get(f"/v1/jobs/{rid}/logs/range?stream=stdout&byte_from=0").get_data(
            as_text=True
        ),
        "events": client.get(f"/v1/jobs/{rid}/events/history").get_data(as_text=True),
    }
    bundle = client.get(f"/v1/jobs/{rid}/bundle")
    assert bundle.status_code == 200
    with zipfile.ZipFile(io.BytesIO(bundle.data)) as debug_zip:
        names = debug_zip.namelist()
        texts["debug bundle"] = "\n".join(
            debug_zip.read(n).decode("utf-8", "replace") for n in names
        )
    assert any(n.startswith("logs/") for n in names) and not any(".home" in n for n in names)
    run_id = client.get(f"/v1/jobs/{rid}").json["run_id"]
    run_dir = settings.runs_dir / run_id
    normal = b"".join(stream_bundle(run_dir, False))
    with zipfile.ZipFile(io.BytesIO(normal)) as normal_zip:
        texts["bundle"] = "\n".join(
            normal_zip.read(n).decode("utf-8", "replace") for n in normal_zip.namelist()
        )
    tree = client.get(f"/v1/management/runs/{rid}/files").json
    for entry in tree["entries"]:
        if entry["type"] == "file":
            preview = client.get(
                f"/v1/management/runs/{rid}/file", query_string={"path": entry["path"]}
            )
            texts[f"preview {entry['path']}"] = preview.get_data(as_text=True)
    for rel in (".home/tmp/.keep", "logs/../.home/tmp/.keep"):
        refused = client.get(f"/v1/management/runs/{rid}/file", query_string={"path": rel})
        assert refused.status_code in (400, 403, 404)
    assert "logs/stdout.txt" in {e["path"] for e in tree["entries"]}
    assert "[REDACTED]" not in texts["logs"]  # masked in place: same length, offsets true
    assert {name: leaked(text) for name, text in texts.items() if leaked(text)} == {}


def test_no_secret_in_the_service_logs(hunted):
    _client, settings, rid, worker = hunted

    def logs() -> tuple[str, str] | None:
        # the run's own lines (they carry its request id), which the worker process may write
        # a moment after the run's end is recorded
        service_log = (settings.data_dir / "logs" / "skill_runner.log").read_text()
        console = worker.log_path.read_text()
        return (service_log, console) if rid in service_log and rid in console else None

    service_log, console = wait_for(logs, 30, 0.1, "the run's lines in both logs")
    assert leaked(service_log) == [] and leaked(console) == []
