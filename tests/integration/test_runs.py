"""A run goes REST -> Redis -> Celery worker -> SQL. The run's claim, finish, redelivery and the
cache lookup run on SQLite and Postgres; what the worker makes of a run's output, artifacts and
logs does not depend on the database and runs on SQLite."""

from __future__ import annotations

import hashlib
import io
import json
import time

import pytest

from tests.helpers import upload_body
from tests.integration.services import SQLITE_ONLY

pytestmark = pytest.mark.integration


@pytest.fixture
def stack(module_stack):
    """One worker for the module (per database): the tests that stop it or edit a skill start
    their own (`bare_stack`); each test reads only the jobs it created, none sends a body
    another test sends (the result cache would answer it)."""
    return module_stack


def upload(client, rid, files):
    return client.post(f"/v1/jobs/{rid}/upload", data=upload_body(files))


def test_demo_prime_number_succeeds(stack):
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "demo-prime-number", "parameter": {"divisor": 2}}
    ).json["request_id"]
    assert upload(stack.client, rid, {"input_file.txt": "100\n"}).status_code == 200
    status = stack.wait(rid)
    assert status["status"] == "succeeded", status
    assert status["worker"] and status["attempt"] == 1 and status["finished_at"]
    result = stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["data"]["bound"] == 50 and result["data"]["count"] == 15
    assert result["artifacts"] == ["artifacts/primes.md"]
    run_dir = stack.settings.runs_dir / status["run_id"]
    for sub in ("uploads", "artifacts", "result", "logs", "bundle"):
        assert (run_dir / sub).is_dir()
    assert json.loads((run_dir / "input.json").read_text()) == {  # the body as the client sent it
        "skill_id": "demo-prime-number",
        "engine": None,
        "parameter": {"divisor": 2},
        "input": {},
        "model": None,
        "runtime_options": {},
    }
    manifest = json.loads((run_dir / "manifest.json").read_text())
    entry = manifest["artifacts"][0]
    assert entry["sha256"] == hashlib.sha256((run_dir / entry["path"]).read_bytes()).hexdigest()
    logs = stack.client.get(f"/v1/jobs/{rid}/logs").json
    assert "bound=50" in logs["stdout"]


@SQLITE_ONLY
def test_missing_upload_file_fails_with_clear_code(stack):
    rid = stack.client.post("/v1/jobs", json={"skill_id": "demo-prime-number"}).json["request_id"]
    assert upload(stack.client, rid, {"something_else.txt": "1"}).status_code == 200
    status = stack.wait(rid)
    assert status["status"] == "failed"
    assert status["error"]["code"] == "INPUT_FILE_MISSING"
    result = stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["status"] == "failed" and "input_file" in result["error"]["message"]
    assert "the upload holds something_else.txt" in result["error"]["message"]


def run_dirs(stack) -> set[str]:
    runs = stack.settings.runs_dir
    return {p.name for p in runs.iterdir()} if runs.exists() else set()


@SQLITE_ONLY
def test_parameter_violation_is_400_before_any_run(stack):
    before = run_dirs(stack)
    resp = stack.client.post(
        "/v1/jobs", json={"skill_id": "demo-prime-number", "parameter": {"divisor": "two"}}
    )
    assert resp.status_code == 400
    assert resp.json["error"]["code"] == "SCHEMA_VALIDATION_FAILED"
    assert run_dirs(stack) == before


@SQLITE_ONLY
def test_fenced_stdout_succeeds_with_n0_warning(stack):
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "fenced-json", "input": {"text": "hello"}}
    ).json["request_id"]
    status = stack.wait(rid)
    assert status["status"] == "succeeded", status
    result = stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["data"] == {"text": "hello", "length": 5}
    assert [w["code"] for w in result["validation_warnings"]] == ["OUTPUT_NORMALIZED_N0"]


def test_redelivered_task_does_not_run_the_skill_twice(stack):
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "slow-counter", "parameter": {"sleep": 1.5}}
    ).json["request_id"]
    status = stack.wait(rid, until=("running",))
    queue = stack.app.extensions["queue"]
    for _ in range(2):  # the same message again, as a broker redelivery would
        queue.enqueue(status["run_id"], "runs.script")
    status = stack.wait(rid)
    assert status["status"] == "succeeded" and status["attempt"] == 1
    calls = (stack.settings.runs_dir / status["run_id"] / "artifacts" / "calls.txt").read_text()
    assert len(calls.split()) == 1


@SQLITE_ONLY
def test_artifacts_listing_download_and_bundle(stack):
    import zipfile

    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "demo-prime-number", "runtime_options": {"debug": True}}
    ).json["request_id"]
    upload(stack.client, rid, {"input_file.txt": "20"})
    assert stack.wait(rid)["status"] == "succeeded"
    listing = stack.client.get(f"/v1/jobs/{rid}/artifacts").json
    entry = listing["artifacts"][0]
    assert entry["role"] == "report" and entry["mime"] == "text/markdown"
    body = stack.client.get(f"/v1/jobs/{rid}/artifacts/primes.md").data
    assert hashlib.sha256(body).hexdigest() == entry["sha256"]
    # each entry's download url (seed 003 R5), in the listing and beside the result
    assert entry["url"] == f"/v1/jobs/{rid}/artifacts/artifacts/primes.md"
    assert stack.client.get(entry["url"]).data == body
    result = stack.client.get(f"/v1/jobs/{rid}/result").json
    assert [a["url"] for a in result["artifacts"]] == [entry["url"]]
    assert result["result"]["artifacts"] == ["artifacts/primes.md"]  # the document keeps paths
    assert stack.client.get(f"/v1/jobs/{rid}/artifacts/../input.json").status_code in (400, 404)
    assert stack.client.get(f"/v1/jobs/{rid}/artifacts/..%2F..%2Fruns.db").status_code in (400, 404)
    bundle_dir = (
        stack.settings.runs_dir / stack.client.get(f"/v1/jobs/{rid}").json["run_id"] / "bundle"
    )
    assert list(bundle_dir.iterdir()) == []  # built on the first download, not by the run
    resp = stack.client.get(f"/v1/jobs/{rid}/bundle")
    assert resp.status_code == 200 and "run_bundle_debug.zip" in resp.headers["Content-Disposition"]
    names = zipfile.ZipFile(io.BytesIO(resp.data)).namelist()
    assert "result/result.json" in names and "artifacts/primes.md" in names
    assert "logs/stdout.txt" in names  # debug bundle holds the logs
    assert (bundle_dir / "run_bundle_debug.zip").read_bytes() == resp.data
    assert "logs/stdout.txt" in [
        f["path"] for f in json.loads((bundle_dir / "manifest_debug.json").read_text())["files"]
    ]
    again = stack.client.get(f"/v1/jobs/{rid}/bundle")  # now the stored file
    assert again.status_code == 200 and again.data == resp.data
    assert "run_bundle_debug.zip" in again.headers["Content-Disposition"]


def test_identical_request_is_served_from_cache_with_no_worker(bare_stack):
    bare_stack.start_worker()
    body = {"skill_id": "fenced-json", "input": {"text": "cached"}}
    rid = bare_stack.client.post("/v1/jobs", json=body).json["request_id"]
    first = bare_stack.wait(rid)
    assert first["status"] == "succeeded"
    bare_stack.worker.stop()
    again = bare_stack.client.post("/v1/jobs", json=body).json
    assert again["cache_hit"] is True and again["status"] == "succeeded"
    result = bare_stack.client.get(f"/v1/jobs/{again['request_id']}/result").json["result"]
    assert result["data"] == {"text": "cached", "length": 6}


def run_normalizer_skill(stack, mode):
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "needs-normalizer", "parameter": {"mode": mode}}
    ).json["request_id"]
    return rid, stack.wait(rid)


@SQLITE_ONLY
def test_skill_normalizer_makes_output_valid_at_n1(stack):
    rid, status = run_normalizer_skill(stack, "ok")
    assert status["status"] == "succeeded", status
    result = stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["data"] == {"count": 3, "mode": "ok"}
    assert [w["code"] for w in result["validation_warnings"]] == ["OUTPUT_NORMALIZED_N1"]
    run_dir = stack.settings.runs_dir / status["run_id"]
    steps = json.loads((run_dir / "result" / "validation.json").read_text())["steps"]
    assert any(s["level"] == "N1" and s["ok"] for s in steps)
    assert json.loads((run_dir / "raw" / "skill_result.json").read_text())["count"] == "3"


@SQLITE_ONLY
def test_output_that_nothing_can_fix_fails_with_validation_errors(stack):
    _rid, status = run_normalizer_skill(stack, "broken")
    assert status["status"] == "failed"
    assert status["error"]["code"] == "OUTPUT_VALIDATION_FAILED"
    error = status["error"]
    assert error["validation_errors"][0]["path"] == "$.count"
    # hints an author can act on: which field, what the schema wanted, what came, where to look
    assert error["message"].endswith(': $.count: should be integer, got a string "three"')
    assert error["validation_errors"][0]["expected"] == "integer"
    assert error["validation_errors"][0]["got"] == "three"
    assert error["hints"] == ['$.count: should be integer, got a string "three"']
    assert "raw/skill_result.json" in error["likely_cause"]  # what the script wrote
    assert error["validation_record"] == "result/validation.json"


@SQLITE_ONLY
def test_missing_required_artifact_fails_the_run(stack):
    _rid, status = run_normalizer_skill(stack, "no_report")
    assert status["status"] == "failed"
    assert status["error"]["code"] == "ARTIFACT_MISSING"
    assert status["error"]["missing"] == ["report.txt"]


def _pool_keys(settings, skill_id: str) -> dict[str, int]:
    root = settings.run_pool_dir
    if not root.is_dir():
        return {}
    return {
        p.name: sum(not c.name.startswith(".") for c in p.iterdir())
        for p in root.iterdir()
        if p.name.startswith(skill_id + ".")
    }


def _wait_pool(
    settings, skill_id: str, ready: int, timeout: float = 10.0, other_than: dict | None = None
) -> dict[str, int]:
    """The refill happens after the run is announced: wait for it (for a key other than those
    of `other_than`: right after a run of an edited skill the old key is still full)."""
    end = time.monotonic() + timeout
    while True:
        keys = _pool_keys(settings, skill_id)
        done = len(keys) == 1 and list(keys.values()) == [ready]
        if (done and not set(keys) & set(other_than or {})) or time.monotonic() > end:
            return keys
        time.sleep(0.05)


def _run_fenced(stack, text: str) -> tuple[dict, dict]:
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "fenced-json", "input": {"text": text}}
    ).json["request_id"]
    status = stack.wait(rid)
    assert status["status"] == "succeeded", status
    return status, stack.client.get(f"/v1/jobs/{rid}/result").json["result"]


@SQLITE_ONLY
def test_run_directories_come_ready_from_the_pool_and_never_from_an_older_skill(bare_stack):
    stack = bare_stack  # a worker of its own: the test edits an installed skill
    stack.start_worker()
    size = stack.settings.run_pool
    assert size >= 1
    _run_fenced(stack, "first")
    first_keys = _wait_pool(stack.settings, "fenced-json", size)
    assert list(first_keys.values()) == [size], first_keys
    pooled = next(iter((stack.settings.run_pool_dir / next(iter(first_keys))).iterdir()))
    assert (pooled / ".skill" / "fenced-json" / "scripts" / "run.py").is_file()
    status, result = _run_fenced(stack, "second")
    assert result["data"] == {"text": "second", "length": 6}
    run_dir = stack.settings.runs_dir / status["run_id"]
    assert (run_dir / ".skill" / "fenced-json" / "SKILL.md").is_file()
    # the snapshot links the service's read-only copy of this version, not skills/
    snap = (run_dir / ".skill" / "fenced-json" / "scripts" / "run.py").stat()
    installed = (stack.settings.skills_dir / "fenced-json" / "scripts" / "run.py").stat()
    assert snap.st_nlink >= 2 and snap.st_mode & 0o222 == 0 and snap.st_ino != installed.st_ino
    assert {"uploads", "artifacts", "result", "logs", "bundle", "raw"} <= {
        p.name for p in run_dir.iterdir()
    }
    # a script's stdout is its raw output: one file under two names
    raw, stdout = run_dir / "raw" / "engine_output.txt", run_dir / "logs" / "stdout.txt"
    assert raw.read_text() == stdout.read_text() and "second" in raw.read_text()
    assert raw.stat().st_ino == stdout.stat().st_ino
    assert _wait_pool(stack.settings, "fenced-json", size) == first_keys  # topped up again

    script = stack.settings.skills_dir / "fenced-json" / "scripts" / "run.py"
    script.write_text(script.read_text().replace('{"text": text,', '{"text": text.upper(),'))
    status, result = _run_fenced(stack, "third")
    assert result["data"] == {"text": "THIRD", "length": 5}  # the edited skill, not a pooled copy
    third = stack.settings.runs_dir / status["run_id"] / ".skill" / "fenced-json" / "scripts"
    assert "text.upper()" in (third / "run.py").read_text()
    assert (
        "text.upper()"
        not in (run_dir / ".skill" / "fenced-json" / "scripts" / "run.py").read_text()
    )
    new_keys = _wait_pool(stack.settings, "fenced-json", size, other_than=first_keys)
    assert len(new_keys) == 1 and set(new_keys) != set(first_keys)  # the old version is gone


@SQLITE_ONLY
def test_logs_range_follows_a_running_script(stack):
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "slow-counter", "parameter": {"sleep": 1.5, "ticks": 5}}
    ).json["request_id"]
    seen, offset, while_running = [], 0, False
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        part = stack.client.get(f"/v1/jobs/{rid}/logs/range?byte_from={offset}").json
        assert part["byte_from"] == offset and part["byte_to"] <= part["size"]
        seen.append(part["text"])
        offset = part["byte_to"]
        while_running |= part["status"] == "running" and "tick 0" in "".join(seen)
        if part["status"] in ("succeeded", "failed", "canceled") and offset == part["size"]:
            break
        time.sleep(0.1)
    assert part["status"] == "succeeded" and while_running  # read before the run ended
    text = "".join(seen)
    assert text == stack.client.get(f"/v1/jobs/{rid}/logs").json["stdout"]
    assert text.count("\u2713 étape") == 5
