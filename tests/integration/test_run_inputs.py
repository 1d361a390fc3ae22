"""A run's input files are its own: a skill that writes its upload, a bound file or a file
taken over from an earlier run's workspace in place (open "r+", no new file) changes its run's
copy only, never the request's stored upload (which a retry of the run reads again) nor the
earlier run's artifact (whose manifest sha256 must stay true)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import textwrap
from pathlib import Path

import pytest

from tests.helpers import upload_body, wait_for
from tests.integration.services import STACK_ENV, api_stack, broker_settings

pytestmark = pytest.mark.integration

# the test kills the pool process by the pid the run records; a boxed run's pids differ
FAST = {
    "SKILL_RUNNER_SANDBOX": "off",
    "SKILL_RUNNER_KILL_GRACE_SEC": "1",
    "SKILL_RUNNER_SWEEP_INTERVAL_SEC": "1",
}
SENT = "10 is the bound\n"

# Reads its file input, records what it read (artifacts/seen.txt, one line per attempt), then
# writes over it in place, and over the workspace's artifacts/note.txt when there is one.
# With `hold`, its first attempt then waits to be killed with its worker.
REWRITER = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    ctx = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())
    path = ctx["input"]["input_file"]
    seen = Path(path).read_text()
    artifacts = Path(os.environ["SKILL_RUNNER_ARTIFACTS_DIR"])
    with open(artifacts / "seen.txt", "a") as fh:
        fh.write(json.dumps(seen) + "\\n")
    for target in (Path(path), artifacts / "note.txt"):
        if target.is_file():
            with open(target, "r+") as fh:
                fh.write("CHANGED")
    attempts = len((artifacts / "seen.txt").read_text().splitlines())
    if ctx["parameter"].get("hold") and attempts == 1:
        time.sleep(60)
    print(json.dumps({"seen": seen}))
    """
)
NOTE_WRITER = textwrap.dedent(
    f"""
    import os
    from pathlib import Path
    (Path(os.environ["SKILL_RUNNER_ARTIFACTS_DIR"]) / "note.txt").write_text({SENT!r})
    print('{{"seen": ""}}')
    """
)


@pytest.fixture(scope="module")
def backend():
    return "sqlite"  # file handling: no SQL of its own


@pytest.fixture(scope="module")
def stack(tmp_path_factory, backend):
    root = tmp_path_factory.mktemp("inputs")
    with (
        broker_settings(root, backend, **STACK_ENV) as settings,
        api_stack(settings, backend) as stack,
    ):
        write_skill(settings.skills_dir, "input-rewriter", REWRITER, file_input=True)
        write_skill(settings.skills_dir, "note-writer", NOTE_WRITER, file_input=False)
        stack.start_worker(beat=True, extra_env=FAST)
        yield stack


def write_skill(skills: Path, skill_id: str, script: str, file_input: bool) -> None:
    """A script skill (one retry when its worker dies); `file_input`: it takes `input_file`."""
    root = skills / skill_id
    (root / "assets").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "SKILL.md").write_text(f"---\nname: {skill_id}\ndescription: input test\n---\nRun.\n")
    runner = {
        "id": skill_id,
        "version": "1.0.0",
        "execution_modes": ["auto"],
        "entrypoint": {"type": "script", "script": {"command": "python scripts/run.py"}},
        "schemas": {n: f"assets/{n}.schema.json" for n in ("input", "parameter", "output")},
        "retries": 1,
    }
    (root / "assets/runner.json").write_text(json.dumps(runner))
    file_field = {"type": "string", "x-input-source": "file", "extensions": [".txt"]}
    schemas = {
        "input": {"type": "object", "properties": {"input_file": file_field}}
        if file_input
        else {"type": "object", "properties": {}},
        "parameter": {"type": "object", "properties": {"hold": {"type": "boolean"}}},
        "output": {"type": "object", "properties": {"seen": {"type": "string"}}},
    }
    for name, schema in schemas.items():
        (root / f"assets/{name}.schema.json").write_text(json.dumps(schema))
    (root / "scripts/run.py").write_text(script)


def post(stack, body: dict) -> str:
    resp = stack.client.post("/v1/jobs", json={**body, "runtime_options": {"no_cache": True}})
    assert resp.status_code == 200, resp.json
    return resp.json["request_id"]


def seen_by_attempts(stack, run_id: str) -> list[str]:
    seen = stack.settings.runs_dir / run_id / "artifacts" / "seen.txt"
    return [json.loads(line) for line in seen.read_text().splitlines()] if seen.exists() else []


def test_a_skill_writing_its_upload_in_place_leaves_the_stored_upload_for_the_retry(stack):
    rid = post(stack, {"skill_id": "input-rewriter", "parameter": {"hold": True}})
    up = stack.client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"input_file.txt": SENT}))
    assert up.status_code == 200, up.json
    running = stack.wait(rid, until=("running",))
    wait_for(lambda: seen_by_attempts(stack, running["run_id"]) == [SENT], 20)
    stored = stack.settings.requests_dir / rid / "uploads" / "input_file.txt"
    assert stored.read_text() == SENT  # the first attempt wrote its own copy
    os.kill(int(running["worker"].rsplit(":", 1)[1]), signal.SIGKILL)  # its worker dies
    ended = stack.wait(rid, timeout=40)
    assert ended["status"] == "succeeded" and ended["attempt"] == 2, ended
    # the retry read the upload as it was sent, not as the first attempt left it
    assert seen_by_attempts(stack, ended["run_id"]) == [SENT, SENT]
    assert stack.client.get(f"/v1/jobs/{rid}/result").json["result"]["data"] == {"seen": SENT}
    assert stored.read_text() == SENT
    run_copy = stack.settings.runs_dir / ended["run_id"] / "uploads" / "input_file.txt"
    assert run_copy.read_text() == "CHANGED" + SENT[len("CHANGED") :]


def test_a_run_reusing_a_workspace_leaves_the_earlier_artifact_and_its_sha256(stack):
    first = post(stack, {"skill_id": "note-writer"})
    source = stack.wait(first)
    assert source["status"] == "succeeded", source
    source_dir = stack.settings.runs_dir / source["run_id"]
    note = source_dir / "artifacts" / "note.txt"
    [entry] = [
        a
        for a in json.loads((source_dir / "manifest.json").read_text())["artifacts"]
        if a["path"].endswith("note.txt")
    ]
    assert entry["sha256"] == hashlib.sha256(SENT.encode()).hexdigest()

    target = "inputs/input_file/note.txt"
    binding = {
        "input_key": "input_file",
        "source_request_id": first,
        "source_path": "artifacts/note.txt",
        "target_path": target,
    }
    resp = stack.client.post(
        "/v1/jobs",
        json={
            "skill_id": "input-rewriter",
            "input": {"input_file": target},
            "runtime_options": {
                "no_cache": True,
                "workspace": {"mode": "reuse", "request_id": first, "file_bindings": [binding]},
            },
        },
    )
    assert resp.status_code == 200, resp.json
    second = stack.wait(resp.json["request_id"])
    assert second["status"] == "succeeded", second
    run_dir = stack.settings.runs_dir / second["run_id"]
    changed = "CHANGED" + SENT[len("CHANGED") :]
    # the run changed its own copies: the bound input and the taken-over artifact ...
    assert (run_dir / "uploads" / target).read_text() == changed
    assert (run_dir / "artifacts" / "note.txt").read_text() == changed
    # ... and neither the earlier run's artifact nor the file pinned under its request
    assert note.read_text() == SENT
    assert hashlib.sha256(note.read_bytes()).hexdigest() == entry["sha256"]
    pinned = stack.settings.requests_dir / resp.json["request_id"] / "bound" / target
    assert pinned.read_text() == SENT
