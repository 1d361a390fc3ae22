"""The command line client as a user runs it (subprocesses of the installed console scripts)
against gunicorn + a Celery worker on Redis: batch with kill -9 and --resume, a bad batch
file, submit/wait/result/status/cancel/logs -f/bundle/list/skills/install/reply."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from skill_runner_client import Client
from tests.helpers import wait_for, zip_bytes
from tests.integration.served import served_stack
from tests.integration.services import broker_settings
from tests.packages import echo_skill

pytestmark = pytest.mark.integration
BIN = Path(sys.executable).parent
BATCH_JOBS = 200


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    with broker_settings(root) as settings, served_stack(settings) as stack:
        yield stack


@pytest.fixture
def client(served):
    with Client(served.base_url) as client:
        yield client


def cli(served, *args: str, script: str = "skill-runner-client", timeout: float = 120):
    env = {**os.environ, "SKILL_RUNNER_URL": served.base_url}
    return subprocess.run(
        [str(BIN / script), *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def popen(served, *args: str, script: str = "skill-runner-client") -> subprocess.Popen:
    env = {**os.environ, "SKILL_RUNNER_URL": served.base_url}
    return subprocess.Popen(
        [str(BIN / script), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def jobs_of(client: Client, skill_id: str) -> list[str]:
    return [j["request_id"] for j in client.jobs.iter(skill_id=skill_id)]


def summary(out: Path) -> list[dict]:
    path = out / "summary.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def write_batch(root: Path, n: int) -> Path:
    (root / "inputs").mkdir(parents=True)
    lines = []
    for i in range(n):
        (root / "inputs" / f"n{i}.txt").write_text(f"{100 + i}\n")
        lines.append(
            {
                "key": f"n{i}",
                "skill_id": "demo-prime-number",
                "parameter": {"divisor": 1},
                "files": {"input_file": f"inputs/n{i}.txt"},
            }
        )
    path = root / "jobs.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_batch_killed_half_way_and_resumed_runs_every_job_once(served, client, tmp_path):
    jobs = write_batch(tmp_path, BATCH_JOBS)
    out = tmp_path / "out"
    args = ("batch", str(jobs), "--out", str(out), "--concurrency", "4", "--artifacts")
    args += ("--max-queued", "50")  # a full window: results are collected while sending
    first = popen(served, *args)
    try:
        wait_for(lambda: len(summary(out)) >= BATCH_JOBS // 2, 300, 0.05, "half the batch")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    done_before = len(summary(out))
    assert done_before < BATCH_JOBS
    again = cli(served, *args, timeout=30)
    assert again.returncode == 2 and "--resume" in again.stderr  # never over an earlier batch
    resumed = cli(served, *args, "--resume", timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    entries = summary(out)
    assert sorted(e["key"] for e in entries) == sorted(f"n{i}" for i in range(BATCH_JOBS))
    assert {e["status"] for e in entries} == {"succeeded"}
    on_server = jobs_of(client, "demo-prime-number")
    assert len(on_server) == BATCH_JOBS  # nothing was submitted twice
    assert set(on_server) == {e["request_id"] for e in entries}
    for i in (0, BATCH_JOBS // 2, BATCH_JOBS - 1):
        result = json.loads((out / "results" / f"n{i}.json").read_text())
        assert result["result"]["data"]["bound"] == 100 + i
        report = out / "artifacts" / f"n{i}" / "primes.md"
        assert report.read_text().startswith(f"# Primes up to {100 + i}")
    assert len(list((out / "results").glob("*.json"))) == BATCH_JOBS
    assert not list(out.rglob("*.part"))
    assert "200/200 done: 200 succeeded, 0 failed" in resumed.stderr


def test_a_bad_line_submits_nothing_and_exits_2(served, client, tmp_path):
    before = len(jobs_of(client, "slow-counter"))
    jobs = tmp_path / "bad.jsonl"
    jobs.write_text(
        '{"skill_id": "slow-counter"}\n'
        '{"skill_id": "slow-counter", "parameter": {"sleep": 0}}\n'
        '{"skill_id": "slow-counter", "parameter": [1]}\n'
    )
    answer = cli(served, "batch", str(jobs), "--out", str(tmp_path / "out"))
    assert answer.returncode == 2
    assert "bad.jsonl:3: parameter must be an object" in answer.stderr
    assert "nothing was submitted" in answer.stderr
    missing = tmp_path / "missing.csv"
    missing.write_text("key,skill_id,files.input_file\na,demo-prime-number,nope.txt\n")
    answer = cli(served, "batch", str(missing))
    assert answer.returncode == 2 and "missing.csv:2: files.input_file: no file" in answer.stderr
    assert len(jobs_of(client, "slow-counter")) == before
    assert not (tmp_path / "out").exists()


def test_a_csv_batch_with_a_refused_line_exits_1(served, tmp_path):
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(
        "key,skill_id,parameter.sleep,parameter.ticks\n"
        "ok,slow-counter,0,1\n"
        "refused,slow-counter,-1,1\n"
    )
    out = tmp_path / "out"
    answer = cli(served, "batch", str(jobs), "--out", str(out), "--json")
    assert answer.returncode == 1, answer.stderr
    entries = {e["key"]: e for e in summary(out)}
    assert entries["ok"]["status"] == "succeeded"
    assert entries["refused"]["status"] == "rejected"
    assert entries["refused"]["error_code"] == "SCHEMA_VALIDATION_FAILED"
    assert json.loads(answer.stdout)["exit_code"] == 1


def test_a_line_without_the_file_its_skill_takes_fails_and_the_batch_ends(served, tmp_path):
    (tmp_path / "n.txt").write_text("30\n")
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(
        '{"key": "with", "skill_id": "demo-prime-number", "files": {"input_file": "n.txt"}}\n'
        '{"key": "without", "skill_id": "demo-prime-number"}\n'
    )
    out = tmp_path / "out"
    answer = cli(served, "batch", str(jobs), "--out", str(out), timeout=60)  # it never ended
    assert answer.returncode == 1, answer.stderr
    entries = {e["key"]: e for e in summary(out)}
    assert entries["with"]["status"] == "succeeded"
    assert (entries["without"]["status"], entries["without"]["error_code"]) == (
        "failed",
        "INPUT_FILE_MISSING",
    )
    submitted = cli(served, "submit", "demo-prime-number", "--wait", "--json", timeout=60)
    assert submitted.returncode == 1, submitted.stderr
    assert json.loads(submitted.stdout)["result"]["error"]["code"] == "INPUT_FILE_MISSING"


def test_install_takes_a_skill_folder_and_leaves_its_caches_out(served, client, tmp_path):
    folder = tmp_path / "cli-folder"
    for rel, text in echo_skill("cli-folder", message="from a folder").items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    for junk in ("scripts/__pycache__/run.cpython-311.pyc", ".git/config", "scripts/old.pyc"):
        (folder / junk).parent.mkdir(parents=True, exist_ok=True)
        (folder / junk).write_bytes(b"\0")
    installed = cli(served, "install", str(folder), "--json", script="skill-runner")
    assert installed.returncode == 0, installed.stderr
    assert json.loads(installed.stdout)["skill_id"] == "cli-folder"
    files = client.skill("cli-folder")["files"]
    assert "SKILL.md" in files and not [f for f in files if ".git" in f or f.endswith(".pyc")]
    waited = cli(served, "submit", "cli-folder", "-i", "text=hi", "--wait")
    assert json.loads(waited.stdout)["result"]["data"]["message"] == "from a folder"
    missing = cli(served, "install", str(tmp_path / "nothing"), script="skill-runner")
    assert missing.returncode == 2
    assert "no package zip or skill folder at" in missing.stderr


def test_submit_wait_status_result_logs_bundle_and_list(served, tmp_path):
    package = tmp_path / "echo.zip"
    package.write_bytes(zip_bytes(echo_skill("cli-echo", file_input=True)))
    installed = cli(served, "install", str(package), "--json", script="skill-runner")
    assert installed.returncode == 0, installed.stderr
    assert json.loads(installed.stdout)["skill_id"] == "cli-echo"
    skills = cli(served, "skills", script="skill-runner")
    assert "cli-echo" in skills.stdout and skills.returncode == 0
    notes = tmp_path / "notes.txt"
    notes.write_text("from a file")
    waited = cli(served, "submit", "cli-echo", "-i", "text=hi", "-f", f"notes={notes}", "--wait")
    assert waited.returncode == 0, waited.stderr
    assert json.loads(waited.stdout)["result"]["data"]["notes"] == "from a file"

    submitted = cli(served, "submit", "cli-echo", "-i", "text=again", "-f", f"notes={notes}")
    rid = submitted.stdout.strip()
    assert submitted.returncode == 0 and len(rid) == 36
    assert cli(served, "wait", rid).stdout.strip() == f"{rid} succeeded"
    assert cli(served, "status", rid, "--json", script="skill-runner").returncode == 0
    result = cli(served, "result", rid)
    assert json.loads(result.stdout)["result"]["data"]["text"] == "again"
    bundle = tmp_path / "b.zip"
    assert cli(served, "bundle", rid, "-o", str(bundle)).returncode == 0
    assert zipfile.is_zipfile(bundle)
    listed = cli(served, "list", "--skill", "cli-echo", "--json")
    assert rid in {j["request_id"] for j in json.loads(listed.stdout)}
    assert cli(served, "logs", rid, "--stream", "stderr").returncode == 0

    refused = cli(served, "submit", "cli-echo", "-p", "wait_for_go=3")
    assert refused.returncode == 1
    assert "SCHEMA_VALIDATION_FAILED" in refused.stderr
    unknown = cli(served, "status", "no-such-id", "--json")
    assert unknown.returncode == 1
    assert json.loads(unknown.stderr)["error"]["code"] == "REQUEST_NOT_FOUND"
    engines = cli(served, "engines", "--json")
    assert "codex" in {e["engine"] for e in json.loads(engines.stdout)}


def test_logs_follow_prints_a_run_live_and_cancel_ends_it(served, client):
    rid = client.jobs.create("slow-counter", parameter={"sleep": 15, "ticks": 6})["request_id"]
    follow = popen(served, "logs", "-f", rid, script="skill-runner")
    first = follow.stdout.readline().decode()
    assert first.startswith("tick 0")
    assert client.jobs.get(rid)["status"] == "running"  # printed while the run goes
    rest, _ = follow.communicate(timeout=60)
    assert follow.returncode == 0
    assert "tick 5" in rest.decode()

    rid = client.jobs.create("slow-counter", parameter={"sleep": 30})["request_id"]
    canceled = cli(served, "cancel", rid)
    assert canceled.returncode == 0 and "canceled" in canceled.stdout
    waited = cli(served, "wait", rid)
    assert waited.returncode == 1 and "CANCELED_BY_USER" in waited.stdout


def test_reply_to_a_run_that_is_not_interactive_is_refused(served, client):
    rid = client.jobs.create("slow-counter")["request_id"]
    client.jobs.wait(rid, timeout=60)
    answer = cli(served, "reply", rid, "--text", "hello", "--interaction-id", "1")
    assert answer.returncode == 1
    assert answer.stderr.startswith("skill-runner-client: ")  # the service's code and message


def test_a_batch_collects_jobs_that_outlast_their_first_long_poll(served, tmp_path):
    """More collectors than the service lets wait (WEB_THREADS - 1 per process): some long
    polls answer 409 at once and their jobs go back in line; the batch still ends with all."""
    jobs = tmp_path / "slow.jsonl"
    jobs.write_text(
        "".join(
            json.dumps({"key": f"s{i}", "skill_id": "slow-counter", "parameter": {"sleep": 1}})
            + "\n"
            for i in range(10)
        )
    )
    out = tmp_path / "out"
    answer = cli(served, "batch", str(jobs), "--out", str(out), "--concurrency", "12")
    assert answer.returncode == 0, answer.stderr
    assert sorted(e["key"] for e in summary(out)) == sorted(f"s{i}" for i in range(10))


def test_a_batch_run_again_after_its_input_file_and_a_line_were_fixed_runs_them_anew(
    served, tmp_path
):
    (tmp_path / "n.txt").write_text("10\n")
    jobs = tmp_path / "fixed.jsonl"
    line = {"key": "a", "skill_id": "demo-prime-number", "files": {"input_file": "n.txt"}}
    jobs.write_text(json.dumps(line) + "\n")
    first = cli(served, "batch", str(jobs), "--out", str(tmp_path / "first"))
    assert first.returncode == 0, first.stderr
    (tmp_path / "n.txt").write_text("30\n")  # the input was wrong: fixed, run again
    second = cli(served, "batch", str(jobs), "--out", str(tmp_path / "second"))
    assert second.returncode == 0, second.stderr
    jobs.write_text(json.dumps({**line, "parameter": {"divisor": 1}}) + "\n")  # the line edited
    third = cli(served, "batch", str(jobs), "--out", str(tmp_path / "third"))
    assert third.returncode == 0, third.stderr  # not IDEMPOTENCY_KEY_REUSED
    bounds = [
        json.loads((tmp_path / out / "results" / "a.json").read_text())["result"]["data"]["bound"]
        for out in ("first", "second", "third")
    ]
    assert bounds == [10, 30, 30]
    ids = [summary(tmp_path / out)[0]["request_id"] for out in ("first", "second", "third")]
    assert len(set(ids)) == 3
