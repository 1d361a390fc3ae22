"""Runs that work in a worker's local scratch (SKILL_RUNNER_WORK_DIR), with real workers on
SQLite and Postgres: the run's files are in scratch while it runs and its logs are served live
from the shared runs/; at its end (success, cancel, a question to the user) its files are in
the shared runs/ before its status says so, and nothing is left in scratch. A worker killed
mid-run leaves its scratch behind: the run is reconciled from its lease as without scratch,
and the leftover is removed. The codex tests run the real CLI against the fake LLM; the
interactive run's second turn runs on another worker, from the files of the shared runs/. The
runs that only work in scratch and are served (a script, a boxed script, codex) run on SQLite;
the ends, the cancel, the reconciliation and the resumed turn on both databases."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import zipfile
from dataclasses import asdict
from pathlib import Path

import psutil
import pytest

from api import create_app
from api.queue import CeleryQueue
from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from runner_core.sandbox import find_bwrap
from runner_core.settings import REPO_ROOT
from runner_core.statuses import TERMINAL_STATUSES
from tests.engines.harness import FAKE_CONFIG, require_binary
from tests.helpers import wait_for, wait_for_job
from tests.integration.lifecycle_helpers import create_job, live_group, run_row
from tests.integration.services import SQLITE_ONLY, WorkerProcess, broker_settings, stop_workers

pytestmark = pytest.mark.integration
FAST = {"SKILL_RUNNER_KILL_GRACE_SEC": "1", "SKILL_RUNNER_SWEEP_INTERVAL_SEC": "1"}


@pytest.fixture
def workers(bare_stack):
    """`start(name, scratch, **env)`: a worker whose runs work in `scratch`; all are stopped
    at the end."""
    started: list[WorkerProcess] = []

    def start(name: str, scratch: Path, beat: bool = True, **env: str) -> WorkerProcess:
        proc = WorkerProcess(
            bare_stack.settings,
            f"{name}-{bare_stack.backend}",
            bare_stack.settings.data_dir / f"worker-{name}.log",
            concurrency=1,
            beat=beat,
            extra_env={**FAST, "SKILL_RUNNER_WORK_DIR": str(scratch), **env},
        )
        started.append(proc)
        return proc

    yield start
    stop_workers(started)


def in_scratch(scratch: Path) -> list[str]:
    """The run directories in a worker's scratch."""
    runs = scratch / "runs"
    return sorted(os.listdir(runs)) if runs.is_dir() else []


def served_files(client, rid: str) -> tuple[list[str], dict]:
    """(the names in the job's bundle, its artifact list) as the API serves them."""
    bundle = client.get(f"/v1/jobs/{rid}/bundle")
    assert bundle.status_code == 200, bundle.data[:300]
    names = zipfile.ZipFile(io.BytesIO(bundle.data)).namelist()
    return names, client.get(f"/v1/jobs/{rid}/artifacts").json


@SQLITE_ONLY
def test_a_script_run_works_in_scratch_and_is_served_from_the_shared_runs(
    bare_stack, workers, tmp_path
):
    scratch = tmp_path / "scratch"
    workers("a", scratch)
    rid = create_job(bare_stack, "slow-counter", sleep=3, children=0, ticks=3)
    run_id = bare_stack.wait(rid, until=("running", *TERMINAL_STATUSES))["run_id"]
    local, shared = scratch / "runs" / run_id, bare_stack.settings.runs_dir / run_id
    # while it runs: its files are local, its output is served live from the shared logs
    wait_for(lambda: (local / "artifacts" / "calls.txt").is_file(), 10)
    assert not (shared / "artifacts" / "calls.txt").exists()
    live = wait_for(
        lambda: (
            (
                r := bare_stack.client.get(
                    f"/v1/jobs/{rid}/logs/range?stream=stdout&byte_from=0"
                ).json
            )["text"].startswith("tick 0")
            and r
        ),
        10,
    )
    assert live["status"] == "running", live

    status = bare_stack.wait(rid)
    assert status["status"] == "succeeded", (
        status,
        bare_stack.client.get(f"/v1/jobs/{rid}/logs").json,
    )
    assert in_scratch(scratch) == []  # nothing left in scratch
    result = bare_stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    pid = result["data"]["pid"]
    assert result["artifacts"] == ["artifacts/calls.txt"]
    artifact = bare_stack.client.get(f"/v1/jobs/{rid}/artifacts/calls.txt")
    assert artifact.status_code == 200 and artifact.data.decode().split() == [str(pid)]
    names, listed = served_files(bare_stack.client, rid)
    assert any(n.endswith("calls.txt") for n in names), names
    assert [a["path"] for a in listed["artifacts"]] == ["artifacts/calls.txt"]
    logs = bare_stack.client.get(f"/v1/jobs/{rid}/logs").json
    assert logs["stdout"].count("tick") == 3
    assert (shared / "raw" / "interval.txt").is_file() and (shared / "events.jsonl").is_file()
    assert "publish" in run_row(bare_stack, run_id).timings
    assert not (shared / ".publishing").exists()


def test_a_cancel_mid_run_leaves_the_shared_run_directory_complete(bare_stack, workers, tmp_path):
    scratch = tmp_path / "scratch"
    workers("a", scratch)
    rid = create_job(bare_stack, "slow-counter", sleep=30, children=1)
    run_id = bare_stack.wait(rid, until=("running", *TERMINAL_STATUSES))["run_id"]
    local, shared = scratch / "runs" / run_id, bare_stack.settings.runs_dir / run_id
    wait_for(lambda: (local / "raw" / "child_pids.txt").is_file(), 10)
    assert bare_stack.client.post(f"/v1/jobs/{rid}/cancel").json["accepted"] is True
    status = bare_stack.wait(rid, timeout=20)
    assert status["status"] == "canceled" and status["error"]["code"] == "CANCELED_BY_USER"
    assert in_scratch(scratch) == []
    result = bare_stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["status"] == "canceled" and result["error"]["code"] == "CANCELED_BY_USER"
    # what the run had made when it was canceled is in the shared directory
    assert (shared / "artifacts" / "calls.txt").is_file()
    assert (shared / "raw" / "child_pids.txt").is_file()
    names, _listed = served_files(bare_stack.client, rid)
    assert any(n.endswith("result.json") for n in names), names


@pytest.mark.parametrize(
    "sig, status, code",
    [
        (signal.SIGTERM, "canceled", "CANCELED_BY_USER"),  # Flower's revoke with terminate
        (signal.SIGUSR1, "failed", "TIMEOUT"),  # Celery's soft time limit
    ],
)
def test_a_signal_to_the_pool_process_publishes_the_run_before_it_is_recorded(
    bare_stack, workers, tmp_path, sig, status, code
):
    scratch = tmp_path / "scratch"
    workers("a", scratch)
    rid = create_job(bare_stack, "slow-counter", sleep=30, children=0)
    running = bare_stack.wait(rid, until=("running", *TERMINAL_STATUSES))
    local = scratch / "runs" / running["run_id"]
    wait_for(lambda: (local / "raw" / "child_pids.txt").is_file(), 10)
    os.kill(int(running["worker"].rsplit(":", 1)[1]), sig)
    ended = bare_stack.wait(rid, timeout=20)
    assert ended["status"] == status and ended["error"]["code"] == code, ended
    assert in_scratch(scratch) == []
    shared = bare_stack.settings.runs_dir / running["run_id"]
    assert (shared / "artifacts" / "calls.txt").is_file()
    result = bare_stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["status"] == status and result["error"]["code"] == code


def test_a_worker_killed_mid_run_is_reconciled_and_its_scratch_removed(
    bare_stack, workers, tmp_path
):
    scratch = tmp_path / "scratch"
    # the script's pid read from inside is its group only outside a box (own pid namespace)
    unboxed = {"SKILL_RUNNER_SANDBOX": "off"}
    first = workers("a", scratch, beat=False, **unboxed)
    rid = create_job(bare_stack, "slow-counter", sleep=60, children=1)
    run_id = bare_stack.wait(rid, until=("running", *TERMINAL_STATUSES))["run_id"]
    local = scratch / "runs" / run_id
    wait_for(lambda: (local / "raw" / "child_pids.txt").is_file(), 10)
    pgid = int((local / "artifacts" / "calls.txt").read_text().split()[-1])
    wait_for(lambda: run_row(bare_stack, run_id).pgid == pgid, 5)
    children = psutil.Process(first.proc.pid).children()
    first.kill(signal.SIGKILL)  # the worker and its pool process, no cleanup code runs
    for child in children:
        child.send_signal(signal.SIGKILL)
    assert in_scratch(scratch) == [run_id]  # the local copy of a dead worker's run
    workers("b", scratch, **unboxed)  # the same host's next worker: same scratch
    ended = bare_stack.wait(rid, timeout=20)
    assert ended["status"] == "failed", ended
    assert ended["error"]["code"] == "ORCHESTRATOR_RESTART_INTERRUPTED"
    assert ended["recovery_state"] == "failed_reconciled"
    wait_for(lambda: live_group(pgid) == [], 10)  # found by its working directory in scratch
    wait_for(lambda: in_scratch(scratch) == [], 10)  # the ended run's leftover
    # the API still answers for the run: its logs were in the shared runs/ all along
    assert bare_stack.client.get(f"/v1/jobs/{rid}/logs").status_code == 200


def probe(stack, action: str, target: str = "") -> tuple[dict, dict]:
    """A `box-probe` run: (its status, what the script reported)."""
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "box-probe", "input": {"action": action, "target": target}}
    ).json["request_id"]
    status = stack.wait(rid, timeout=60)
    assert status["status"] == "succeeded", status
    return status, stack.client.get(f"/v1/jobs/{rid}/result").json["result"]["data"]


@SQLITE_ONLY
def test_a_boxed_run_in_scratch_works_in_its_local_directory_and_sees_no_other(
    bare_stack, workers, tmp_path
):
    if find_bwrap() is None:
        pytest.fail("bubblewrap must work here: deploy/install-sandbox.sh installs it")
    scratch = tmp_path / "scratch"
    workers("a", scratch)
    status, seen = probe(bare_stack, "ok")
    assert seen["detail"] == str(scratch / "runs" / status["run_id"])  # it ran in scratch
    wait_for(lambda: (scratch / "run-pool").is_dir(), 10)  # made for the next run
    status, seen = probe(bare_stack, "list", str(scratch / "runs"))
    assert seen == {"action": "list", "outcome": "listed", "detail": status["run_id"]}
    for hidden in (scratch / "run-pool", bare_stack.settings.runs_dir):
        _status, seen = probe(bare_stack, "list", str(hidden))
        assert seen["outcome"] == "refused", (hidden, seen)
    _status, seen = probe(bare_stack, "write", str(bare_stack.settings.runs_dir / "x"))
    assert seen["outcome"] == "refused"


@pytest.fixture
def small_shared_disk(tmp_path):
    """The shared data directory on a 4 MiB tmpfs (root only); the scratch on the real disk."""
    mount = tmp_path / "small" / "data"
    mount.mkdir(parents=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"a small disk is a tmpfs mount, which needs root: {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_shared_disk_full_when_a_run_ends_fails_it_storage_full_and_keeps_nothing_half(
    tmp_path, small_shared_disk
):
    database = f"sqlite:///{tmp_path / 'runs.db'}"  # off the small disk
    with broker_settings(tmp_path / "small", DATABASE_URL=database) as settings:
        app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
        client, scratch = app.test_client(), tmp_path / "scratch"
        worker = WorkerProcess(
            settings,
            "full",
            tmp_path / "worker.log",
            extra_env={"SKILL_RUNNER_WORK_DIR": str(scratch)},
        )
        try:
            rid = client.post(
                "/v1/jobs",
                json={"skill_id": "slow-counter", "parameter": {"sleep": 2, "children": 0}},
            ).json["request_id"]
            run_id = wait_for_job(client, rid, 20, ("running", *TERMINAL_STATUSES))["run_id"]
            wait_for(lambda: (scratch / "runs" / run_id / "artifacts" / "calls.txt").is_file(), 10)
            with open(small_shared_disk / "fill", "ab") as out:  # the shared disk fills up
                with contextlib.suppress(OSError):
                    while True:
                        out.write(b"\0" * 65536)
                        out.flush()
            status = wait_for_job(client, rid, 30)
            assert status["status"] == "failed", status
            assert status["error"]["code"] == "STORAGE_FULL", status["error"]
            assert "No space left on device" in status["error"]["message"]
            assert in_scratch(scratch) == []
            shared = settings.runs_dir / run_id
            assert not (shared / ".publishing").exists()  # no half copy left behind
            assert not (shared / "artifacts" / "calls.txt").exists()
            # space again: the next run is published whole
            (small_shared_disk / "fill").unlink()
            again = client.post(
                "/v1/jobs",
                json={"skill_id": "slow-counter", "parameter": {"sleep": 0, "children": 0}},
            ).json["request_id"]
            assert wait_for_job(client, again, 30)["status"] == "succeeded"
            assert in_scratch(scratch) == []
        finally:
            worker.stop()
            app.extensions["db"].kw["bind"].dispose()


# --- the real codex CLI against the fake LLM -------------------------------------------------

RESULT = {"text": "hello", "length": 5}
ONE_TURN = Script(
    command="printf 'made by codex' > artifacts/note.txt",
    final_text="Here you go:\n```json\n" + json.dumps(RESULT) + "\n```",
)
REPLIED = "The user answered your question"  # the runner's reply message starts so
QUESTION = """I drafted two titles.
<ASK_USER_YAML>
kind: choose_one
prompt: Which title should the summary use?
options:
  - label: The plain one
    value: TITLE-A
  - label: The bold one
    value: TITLE-B-7
</ASK_USER_YAML>"""
DONE = {"title": "TITLE-B-7", "text": "hello"}
ASKS_THEN_FINISHES = Script(
    command="echo drafting titles > artifacts/draft.txt",
    final_text=QUESTION,
    when=(
        {
            "contains": REPLIED,
            "command": "echo writing the result",
            "final_text": json.dumps({"__SKILL_DONE__": True, **DONE}),
        },
    ),
)


@pytest.fixture
def codex(bare_stack, tmp_path):
    """(the fake LLM's script file, the worker env that points codex at the fake LLM)."""
    require_binary(get_adapter("codex"))
    script_file = tmp_path / "llm-script.json"
    script_file.write_text(json.dumps(asdict(ONE_TURN)))
    with FakeLLM(script_file) as llm:
        config_dir = tmp_path / "engine-config"
        shutil.copytree(REPO_ROOT / "deploy" / "engine-config", config_dir)
        (config_dir / "codex").mkdir(exist_ok=True)
        (config_dir / "codex" / "enforced.json").write_text(json.dumps(FAKE_CONFIG["codex"](llm)))
        # codex makes no sandbox helper for a CODEX_HOME under the system's temporary folder,
        # where pytest's tmp_path is: the worker (and codex) get a TMPDIR of their own
        (tmp_path / "tmp").mkdir()
        env = {"SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir), "TMPDIR": str(tmp_path / "tmp")}
        yield script_file, env, llm


@pytest.mark.engines
@SQLITE_ONLY
def test_a_codex_run_works_in_scratch_and_is_served_from_the_shared_runs(
    bare_stack, workers, codex, tmp_path
):
    _script, env, _llm = codex
    scratch = tmp_path / "scratch"
    workers("a", scratch, **env)
    rid = bare_stack.client.post(
        "/v1/jobs", json={"skill_id": "echo-prompt", "engine": "codex", "input": {"text": "hi"}}
    ).json["request_id"]
    status = bare_stack.wait(rid, timeout=120)
    assert status["status"] == "succeeded", (
        status,
        bare_stack.client.get(f"/v1/jobs/{rid}/logs").json,
    )
    assert in_scratch(scratch) == []
    result = bare_stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["data"] == RESULT and result["artifacts"] == ["artifacts/note.txt"]
    note = bare_stack.client.get(f"/v1/jobs/{rid}/artifacts/note.txt")
    assert note.status_code == 200 and note.data == b"made by codex"
    names, _listed = served_files(bare_stack.client, rid)
    assert any(n.endswith("note.txt") for n in names), names
    shared = bare_stack.settings.runs_dir / status["run_id"]
    assert (shared / "logs" / "prompt.txt").read_text().startswith("Use the echo-prompt skill")
    assert (shared / ".codex-home").is_dir()  # the engine's session went along


@pytest.mark.engines
def test_an_interactive_codex_run_resumes_on_another_worker_from_the_shared_runs(
    bare_stack, workers, codex, tmp_path
):
    script, env, llm = codex
    script.write_text(json.dumps(asdict(ASKS_THEN_FINISHES)))
    # Every worker host has the same scratch path (codex records the run's absolute path in
    # its session); on one machine that is one folder, and it is empty between the turns.
    first_scratch = second_scratch = tmp_path / "scratch"
    first = workers("a", first_scratch, **env)
    rid = bare_stack.client.post(
        "/v1/jobs",
        json={
            "skill_id": "pick-title",
            "engine": "codex",
            "input": {"text": "hello"},
            "runtime_options": {"execution_mode": "interactive"},
        },
    ).json["request_id"]
    status = bare_stack.wait(rid, timeout=120, until=("waiting_user", *TERMINAL_STATUSES))
    assert status["status"] == "waiting_user", status
    # between turns the session is in the shared runs/, not in the first worker's scratch
    shared = bare_stack.settings.runs_dir / status["run_id"]
    assert in_scratch(first_scratch) == []
    assert (shared / ".codex-home").is_dir() and (shared / "artifacts" / "draft.txt").is_file()
    first.stop()
    second = workers("b", second_scratch, **env)
    pending = bare_stack.client.get(f"/v1/jobs/{rid}/interaction/pending").json["pending"]
    answered = bare_stack.client.post(
        f"/v1/jobs/{rid}/interaction/reply",
        json={"interaction_id": pending["interaction_id"], "response": "TITLE-B-7"},
    )
    assert answered.status_code == 200, answered.json
    status = bare_stack.wait(rid, timeout=120)
    assert status["status"] == "succeeded", (
        status,
        bare_stack.client.get(f"/v1/jobs/{rid}/logs").json,
    )
    assert int(status["worker"].rsplit(":", 1)[1]) in second.pool_pids()  # turn 2 ran there
    assert in_scratch(second_scratch) == []
    result = bare_stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["data"] == DONE
    # the second turn resumed codex's session: its requests carry turn 1's history
    resumed = [r.raw for r in llm.requests if REPLIED in r.raw]
    assert resumed and any("drafting titles" in raw for raw in resumed)
    assert "--- turn 2 ---" in (shared / "logs" / "prompt.txt").read_text()
    assert (shared / "artifacts" / "draft.txt").is_file()  # turn 1's file kept through turn 2
