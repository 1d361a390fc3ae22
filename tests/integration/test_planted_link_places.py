"""What a run's processes leave in its directory (a symlink out of the run, a FIFO) where the
worker writes while or after they run: its channel to a code skill (`calls/`), the composite's
scratch lock, a retried run's skill snapshot, the logs it masks, its records. The worker writes
in the run, never through them, with the run box off and on (the default)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from runner_core.sandbox import find_bwrap
from tests.integration.services import STACK_ENV, api_stack, broker_settings
from tests.integration.test_planted_links import write_skill

pytestmark = pytest.mark.integration
SECRET = ("PLANTED_TEST_API_KEY", "sk-planted-5c2e9a7f1b")  # a secret the worker masks in logs


@pytest.fixture(scope="module", params=["off", "auto"], ids=["box-off", "box-on"])
def stack(request, tmp_path_factory):
    if request.param == "auto" and find_bwrap() is None:
        pytest.fail("bubblewrap must work here: deploy/install-sandbox.sh installs it")
    root = tmp_path_factory.mktemp(f"planted-{request.param}")
    with (
        broker_settings(root, "sqlite", **STACK_ENV) as settings,
        api_stack(settings, "sqlite") as stack,
    ):
        stack.start_worker(extra_env={"SKILL_RUNNER_SANDBOX": request.param, SECRET[0]: SECRET[1]})
        stack.box = request.param
        yield stack


def write_code_skill(skills: Path, name: str, code: str, retry: int = 0) -> None:
    """A skill.json code skill `name` (Python): `outside` in, `{ok}` out."""
    root = skills / "planted" / name
    root.mkdir(parents=True)
    spec = {
        "name": name,
        "description": "plants links where the worker writes",
        "category": "test",
        "input": {
            "type": "object",
            "properties": {"outside": {"type": "string"}},
            "required": ["outside"],
        },
        "output": {
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
        },
        "mode": "code",
        "retry": retry,
        "timeout": 30000,
        "version": "1.0.0",
    }
    (root / "skill.json").write_text(json.dumps(spec))
    (root / "index.py").write_text(textwrap.dedent(code))


def run(stack, skill_id: str, outside: Path, timeout: float = 30.0) -> dict:
    body = {
        "skill_id": skill_id,
        "input": {"outside": str(outside)},
        "runtime_options": {"no_cache": True},
    }
    resp = stack.client.post("/v1/jobs", json=body)
    assert resp.status_code == 200, resp.json
    return stack.wait(resp.json["request_id"], timeout)


CHANNEL_PLANTER = """
import os, time

def execute(input, ctx):
    run, outside = os.environ["SKILL_RUNNER_RUN_DIR"], input["outside"]
    os.symlink(outside + "/scratch.lock", run + "/.scratch.lock")
    ctx.scratch["seen"] = True  # handed back (scratch.put) once this returns
    # the worker's channel folder, a link out of the run for a while
    os.rename(run + "/calls", run + "/calls.real")
    os.symlink(outside, run + "/calls")
    time.sleep(0.6)
    os.unlink(run + "/calls")
    os.rename(run + "/calls.real", run + "/calls")
    return {"ok": True}
"""


def test_the_channel_and_scratch_lock_of_a_code_skill_are_not_written_through_links(
    stack, tmp_path
):
    write_code_skill(stack.settings.skills_dir, "channel_planter", CHANNEL_PLANTER)
    outside = tmp_path / "outside"
    outside.mkdir()
    # a request where the link leads (a boxed script cannot write there: the test does)
    (outside / "op-9.request.json").write_text(json.dumps({"op": "open", "args": {}}))
    status = run(stack, "channel_planter", outside)
    assert status["status"] == "succeeded", status
    assert sorted(p.name for p in outside.iterdir()) == ["op-9.request.json"]
    run_dir = stack.settings.runs_dir / status["run_id"]
    assert json.loads((run_dir / ".scratch.json").read_text()) == {"seen": True}


SNAPSHOT_PLANTER = """
import os, shutil

def execute(input, ctx):
    run = os.environ["SKILL_RUNNER_RUN_DIR"]
    if os.path.exists(run + "/first-attempt"):
        return {"ok": True}
    open(run + "/first-attempt", "w").close()
    shutil.rmtree(run + "/.skill")  # the snapshot this attempt runs from
    os.symlink(input["outside"], run + "/.skill")
    raise RuntimeError("the first attempt fails; its retry takes a new snapshot")
"""


def test_a_retry_takes_its_skill_snapshot_in_the_run_not_through_a_link(stack, tmp_path):
    write_code_skill(stack.settings.skills_dir, "snapshot_planter", SNAPSHOT_PLANTER, retry=1)
    outside = tmp_path / "outside"
    outside.mkdir()
    status = run(stack, "snapshot_planter", outside)
    assert status["status"] == "succeeded", status
    assert list(outside.iterdir()) == []
    snapshot = stack.settings.runs_dir / status["run_id"] / ".skill"
    assert not snapshot.is_symlink() and (snapshot / "snapshot_planter" / "index.py").is_file()


LOGS_PLANTER = textwrap.dedent(
    """
    import json, os, shutil
    from pathlib import Path
    run = Path(os.environ["SKILL_RUNNER_RUN_DIR"])
    outside = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())["input"][
        "outside"]
    shutil.rmtree(run / "logs")  # what this process prints still goes to the files it had
    os.symlink(outside, run / "logs")
    Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps({"ok": True}))
    """
)


def test_logs_are_masked_in_the_run_never_through_a_link(stack, tmp_path):
    write_skill(stack.settings.skills_dir, "logs-planter", LOGS_PLANTER)
    outside = tmp_path / "outside"
    outside.mkdir()
    victims = {name: f"the key {SECRET[1]} stays" for name in ("stdout.txt", "stderr.txt")}
    for name, text in victims.items():
        (outside / name).write_text(text)
    resp = stack.client.post(
        "/v1/jobs", json={"skill_id": "logs-planter", "input": {"outside": str(outside)}}
    )
    status = stack.wait(resp.json["request_id"])
    assert status["status"] == "succeeded", status
    assert {name: (outside / name).read_text() for name in victims} == victims
    assert not (stack.settings.runs_dir / status["run_id"] / "logs").is_symlink()


FIFO_PLANTER = textwrap.dedent(
    """
    import json, os
    from pathlib import Path
    run = Path(os.environ["SKILL_RUNNER_RUN_DIR"])
    for name in ("result/output.json.tmp", "result/validation.json.tmp",
                 "result/result.json.tmp", "manifest.json.tmp", "raw/engine_output.txt"):
        os.mkfifo(run / name)
    print(json.dumps({"ok": True}))
    """
)


@pytest.mark.timeout(120)
def test_fifos_left_at_the_worker_s_records_never_hold_it(stack):
    """A FIFO no one reads holds an open for writing for ever: the worker makes its records
    anew instead, and the run ends."""
    write_skill(stack.settings.skills_dir, "fifo-planter", FIFO_PLANTER)
    resp = stack.client.post(
        "/v1/jobs", json={"skill_id": "fifo-planter", "input": {"outside": ""}}
    )
    rid = resp.json["request_id"]
    status = stack.wait(rid, 20)
    assert status["status"] == "succeeded", status
    assert stack.client.get(f"/v1/jobs/{rid}/result").json["result"]["data"] == {"ok": True}
