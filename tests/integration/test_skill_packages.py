"""Skill packages end to end: install over the API, run through a real worker, update while a
run is in flight, one-off runs, and runtime dependencies through uv (no network). On SQLite: an
install is files and one row, and a run pinned to a version reads that row."""

from __future__ import annotations

import importlib.util
import time

import pytest

from tests.helpers import upload_body
from tests.integration.services import SQLITE_ONLY
from tests.packages import build_wheel, echo_skill, package_upload

pytestmark = [pytest.mark.integration, SQLITE_ONLY]

PROBE_MODULE = "skill_runner_probe_dep"


@pytest.fixture
def stack(module_stack):
    """One worker for the module: the test that needs other worker settings starts its own
    (`bare_stack`), and each test installs skills of its own ids."""
    return module_stack


def install(stack, files):
    resp = stack.client.post("/v1/skill-packages", data=package_upload(files))
    assert resp.status_code == 200, resp.json
    return resp.json


def wait_temp(stack, rid, timeout=60.0, until=("succeeded", "failed", "canceled")):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        status = stack.client.get(f"/v1/temp-skill-runs/{rid}").json
        if status["status"] in until:
            return status
        time.sleep(0.05)
    raise AssertionError(f"temp run {rid} still {status['status']} after {timeout}s")


def test_installed_package_runs_through_the_worker(stack):
    install(stack, echo_skill("pkg-echo-installed", version="1.0.0", message="installed"))
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "pkg-echo-installed", "input": {"text": "hi"}}
    ).json["request_id"]
    status = stack.wait(rid)
    assert status["status"] == "succeeded", status
    assert status["skill_version"] == "1.0.0"
    result = stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["data"] == {"message": "installed", "text": "hi"}


def test_update_while_a_run_is_in_flight_does_not_change_that_run(stack):
    install(stack, echo_skill(version="1.0.0", message="first"))
    rid = stack.client.post(
        "/v1/jobs",
        json={"skill_id": "pkg-echo", "input": {"text": "a"}, "parameter": {"wait_for_go": True}},
    ).json["request_id"]
    running = stack.wait(rid, until=("running", "failed"))
    assert running["status"] == "running", running
    run_dir = stack.settings.runs_dir / running["run_id"]
    deadline = time.monotonic() + 10  # the snapshot is taken before the script starts
    while not (run_dir / "logs" / "stdout.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    updated = install(stack, echo_skill(version="2.0.0", message="second"))
    assert updated["action"] == "updated" and updated["previous_version"] == "1.0.0"
    (run_dir / "go").touch()
    done = stack.wait(rid)
    assert done["status"] == "succeeded", done
    assert done["skill_version"] == "1.0.0"
    data = stack.client.get(f"/v1/jobs/{rid}/result").json["result"]["data"]
    assert data["message"] == "first"
    after = stack.client.post(
        "/v1/jobs",
        json={
            "skill_id": "pkg-echo",
            "input": {"text": "b"},
            "runtime_options": {"no_cache": True},
        },
    ).json
    assert stack.wait(after["request_id"])["skill_version"] == "2.0.0"
    result = stack.client.get(f"/v1/jobs/{after['request_id']}/result").json["result"]
    assert result["data"]["message"] == "second"


def test_temp_run_with_upload_runs_through_the_worker(stack):
    resp = stack.client.post(
        "/v1/temp-skill-runs",
        data={
            **package_upload(echo_skill("pkg-echo-temp", message="one-off", file_input=True)),
            "request": '{"input": {"text": "t"}}',
        },
    )
    assert resp.status_code == 200, resp.json
    rid = resp.json["request_id"]
    upload = stack.client.post(
        f"/v1/temp-skill-runs/{rid}/upload", data=upload_body({"notes.txt": "N"})
    )
    assert upload.status_code == 200, upload.json
    status = wait_temp(stack, rid)
    assert status["status"] == "succeeded", status
    result = stack.client.get(f"/v1/temp-skill-runs/{rid}/result").json["result"]
    assert result["data"] == {"message": "one-off", "text": "t", "notes": "N"}
    assert "stdout" in stack.client.get(f"/v1/temp-skill-runs/{rid}/logs").json
    assert stack.client.get("/v1/skills/pkg-echo-temp").status_code == 404  # never installed


def test_runtime_dependencies_come_from_uv_not_the_service_venv(bare_stack, tmp_path):
    assert importlib.util.find_spec(PROBE_MODULE) is None  # the service's own venv lacks it
    wheels = tmp_path / "wheels"
    build_wheel(wheels, PROBE_MODULE, value="from-the-wheel")
    bare_stack.start_worker(
        extra_env={"UV_FIND_LINKS": str(wheels), "UV_NO_INDEX": "1", "UV_OFFLINE": "1"}
    )
    files = echo_skill("pkg-deps", dependencies=[f"{PROBE_MODULE}==0.1.0"])
    install(bare_stack, files)
    rid = bare_stack.client.post(
        "/v1/jobs", json={"skill_id": "pkg-deps", "parameter": {"import_module": PROBE_MODULE}}
    ).json["request_id"]
    status = bare_stack.wait(rid, timeout=120)
    assert status["status"] == "succeeded", (
        status,
        bare_stack.client.get(f"/v1/jobs/{rid}/logs").json,
    )
    result = bare_stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["data"]["imported"] == "from-the-wheel"
    cache = bare_stack.settings.data_dir / "uv-cache"
    assert cache.is_dir() and any(cache.iterdir())  # shared by runs, not under the run's HOME
    assert not (bare_stack.settings.runs_dir / status["run_id"] / ".home" / ".cache").exists()


def test_a_queued_job_records_and_caches_the_version_it_ran(stack):
    """A job queued while its skill is updated runs the version installed when it starts:
    its status names that version and its result is cached under that version's key, so
    version 1.0.0 installed again (or sent as a one-off package) is never served 2.0.0's."""
    install(stack, echo_skill("pkg-block", version="1.0.0"))
    blockers = [
        stack.client.post(
            "/v1/jobs",
            json={
                "skill_id": "pkg-block",
                "input": {"text": str(n)},
                "parameter": {"wait_for_go": True},
                "runtime_options": {"no_cache": True},
            },
        ).json["request_id"]
        for n in range(2)  # the worker's two slots
    ]
    running = [stack.wait(rid, until=("running", "failed")) for rid in blockers]
    assert all(r["status"] == "running" for r in running), running
    install(stack, echo_skill("pkg-queued", version="1.0.0", message="one"))
    job = {"skill_id": "pkg-queued", "input": {"text": "q"}}
    queued = stack.client.post("/v1/jobs", json=job).json["request_id"]
    assert stack.client.get(f"/v1/jobs/{queued}").json["status"] == "queued"
    install(stack, echo_skill("pkg-queued", version="2.0.0", message="two"))
    for r in running:
        (stack.settings.runs_dir / r["run_id"] / "go").touch()
    done = stack.wait(queued)
    assert done["status"] == "succeeded", done
    data = stack.client.get(f"/v1/jobs/{queued}/result").json["result"]["data"]
    assert data["message"] == "two" and done["skill_version"] == "2.0.0"
    assert all(stack.wait(rid)["status"] == "succeeded" for rid in blockers)

    assert stack.client.delete("/v1/skills/pkg-queued").status_code == 200
    install(stack, echo_skill("pkg-queued", version="1.0.0", message="one"))
    again = stack.client.post("/v1/jobs", json=job).json
    assert again["cache_hit"] is False, again
    status = stack.wait(again["request_id"])
    assert status["status"] == "succeeded" and status["skill_version"] == "1.0.0", status
    result = stack.client.get(f"/v1/jobs/{again['request_id']}/result").json["result"]
    assert result["data"]["message"] == "one"

    resp = stack.client.post(
        "/v1/temp-skill-runs",
        data={
            **package_upload(echo_skill("pkg-queued", version="1.0.0", message="one")),
            "request": '{"input": {"text": "q"}}',
        },
    )
    assert resp.status_code == 200, resp.json
    temp = wait_temp(stack, resp.json["request_id"])
    assert temp["status"] == "succeeded", temp
    temp_result = stack.client.get(f"/v1/temp-skill-runs/{resp.json['request_id']}/result")
    assert temp_result.json["result"]["data"]["message"] == "one"
