"""A full disk under the data directory: runs end with STORAGE_FULL instead of hanging in
`running`, requests get 507 and leave nothing half-written, and the service goes on once
there is space again. The data directory is a small tmpfs (the database lives elsewhere)."""

from __future__ import annotations

import io
import subprocess
import zipfile

import pytest

from api import create_app
from api.queue import CeleryQueue
from tests.helpers import fill_disk, upload_body, wait_for, wait_for_job
from tests.integration.services import WorkerProcess, broker_settings

pytestmark = pytest.mark.integration


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "data"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(
            f"a small disk is made by mounting a tmpfs, which needs root: {done.stderr.strip()}"
        )
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def service(tmp_path, small_disk):
    database = f"sqlite:///{tmp_path / 'runs.db'}"  # off the small disk
    with broker_settings(tmp_path, DATABASE_URL=database) as settings:
        app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
        worker = WorkerProcess(settings, "disk", tmp_path / "worker.log")
        yield settings, app.test_client()
        worker.stop()
        app.extensions["db"].kw["bind"].dispose()


def post(client, body: dict):
    return client.post("/v1/jobs", json=body)


def upload(client, rid: str, files: dict):
    return client.post(f"/v1/jobs/{rid}/upload", data=upload_body(files))


def leftovers(root) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.name.endswith((".tmp", ".part"))
    )


def test_a_full_disk_fails_runs_and_requests_cleanly_and_the_service_recovers(service, small_disk):
    settings, client = service
    body = {
        "skill_id": "fenced-json",
        "input": {"text": "before"},
        "runtime_options": {"no_cache": True},
    }
    first = post(client, body).json["request_id"]
    first_run = wait_for_job(client, first)
    assert first_run["status"] == "succeeded"

    # a run on a full disk ends at once with a code that says why (not left `running`)
    fill_disk(small_disk / "fill")
    health = client.get("/healthz")
    assert health.status_code == 503 and health.json["disk"] == "low: 0 MiB free"
    rid = post(client, {**body, "input": {"text": "full"}}).json["request_id"]
    status = wait_for_job(client, rid)
    assert status["status"] == "failed", status
    assert status["error"]["code"] == "STORAGE_FULL", status["error"]
    assert "No space left on device" in status["error"]["message"]
    result = client.get(f"/v1/jobs/{rid}/result")
    assert result.status_code == 200
    assert result.json["result"]["status"] == "failed"
    assert result.json["result"]["error"]["code"] == "STORAGE_FULL"

    # the first download of a bundle stores it on the way: on a full disk it is still sent whole
    bundle = client.get(f"/v1/jobs/{first}/bundle")
    assert bundle.status_code == 200
    with zipfile.ZipFile(io.BytesIO(bundle.data)) as zf:
        assert zf.testzip() is None and "result/result.json" in zf.namelist()
    assert list((settings.runs_dir / first_run["run_id"] / "bundle").iterdir()) == []

    # an upload that does not fit: 507 with Retry-After, and nothing of it is kept
    rid = post(client, {"skill_id": "demo-prime-number"}).json["request_id"]
    big = upload(client, rid, {"input_file.txt": "100\n" + "7" * 2_000_000})
    assert big.status_code == 507, big.json
    assert big.json["error"]["code"] == "STORAGE_FULL"
    assert big.headers["Retry-After"] == "60"
    uploads = settings.requests_dir / rid / "uploads"
    assert uploads.is_dir() and not any(uploads.iterdir())
    assert leftovers(small_disk) == []
    assert client.get(f"/v1/jobs/{rid}").json["waiting_for_upload"] is True

    # space again: the same job takes its upload and runs; new jobs run
    (small_disk / "fill").unlink(missing_ok=True)
    assert client.get("/healthz").json["disk"] == "low: 3 MiB free"  # under the 256 MiB floor
    assert upload(client, rid, {"input_file.txt": "100\n"}).status_code == 200
    assert wait_for_job(client, rid)["status"] == "succeeded"
    after = post(client, {**body, "input": {"text": "after"}}).json["request_id"]
    assert wait_for_job(client, after)["status"] == "succeeded"
    assert leftovers(small_disk) == []


def test_a_script_that_fails_on_the_full_disk_ends_storage_full(service, small_disk):
    """Found by the chaos test: the disk fills while a script runs, the script cannot write
    its output and exits 1, and the runner cannot write the result either. That run failed
    for want of space (STORAGE_FULL, worth retrying later), not SKILL_SCRIPT_FAILED."""
    settings, client = service
    body = {"skill_id": "slow-counter", "parameter": {"sleep": 1.5}}
    rid = post(client, body).json["request_id"]
    running = wait_for_job(client, rid, until=("running",))
    calls = settings.runs_dir / running["run_id"] / "artifacts" / "calls.txt"
    assert wait_for(calls.is_file, 10)  # the script is past its first write
    fill_disk(small_disk / "fill")
    status = wait_for_job(client, rid)
    assert status["status"] == "failed", status
    assert status["error"]["code"] == "STORAGE_FULL", status["error"]
    assert status["error"]["run_error"]["code"] == "SKILL_SCRIPT_FAILED"
    (small_disk / "fill").unlink(missing_ok=True)
