"""Engine upgrades (POST/GET /v1/engines/{engine}/upgrade): the API -> real Redis -> a real
worker -> real npm, into a temporary engines folder (never the checkout's .engines/, which the
rest of the suite runs on). One real install, of the smallest engine package (qwen at its pinned
version); a version npm does not have; the refusals; and a run that starts between the API's
check and the worker's. On both databases (the upgrade's guarded UPDATEs and its unique
active_engine are SQL), but the real install on SQLite only: npm does not care which."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Connection, update

from runner_core.engines import catalog
from runner_core.engines.packages import ENGINE_PACKAGES
from runner_core.settings import REPO_ROOT
from runner_core.statuses import RunStatus, UpgradeStatus
from runner_core.store import engine_upgrades
from runner_core.store.models import Run
from tests.helpers import TOKENS, bearer, wait_for, write_tokens_file
from tests.integration.services import (
    SQLITE_ONLY,
    STACK_ENV,
    Stack,
    api_stack,
    broker_settings,
)

ENGINE = "qwen"  # the smallest engine package (about 50 MB unpacked, no dependencies)
LOCK = REPO_ROOT / "deploy" / "engines" / "package-lock.json"
PINNED = json.loads(LOCK.read_text())["packages"][f"node_modules/{ENGINE_PACKAGES[ENGINE]}"][
    "version"
]
ROOT = bearer("root")  # admin
INSTALL_SEC = 180.0  # npm from its cache takes seconds; a cold cache downloads ~15 MB


@pytest.fixture(scope="module")
def upgrade_stack(tmp_path_factory, backend) -> Iterator[tuple[Stack, Path]]:
    """The API (this process) and one worker, both taking CLIs from a temporary engines
    folder, with the tokens of tests.helpers.TOKENS; yields the stack and that folder's bin."""
    root = tmp_path_factory.mktemp(f"upgrades-{backend}")
    bin_dir = root / "engines" / "node_modules" / ".bin"
    tokens = write_tokens_file(root / "tokens.jsonl", TOKENS)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SKILL_RUNNER_ENGINE_BIN_DIR", str(bin_dir))  # the API's, and the worker's
        env.delenv("SKILL_RUNNER_QWEN_BIN", raising=False)
        with (
            broker_settings(
                root, backend, SKILL_RUNNER_TOKENS_FILE=str(tokens), **STACK_ENV
            ) as settings,
            api_stack(settings, backend) as stack,
        ):
            stack.start_worker(extra_env={"SKILL_RUNNER_ENGINE_BIN_DIR": str(bin_dir)})
            yield stack, bin_dir


@pytest.fixture
def stack(upgrade_stack) -> Stack:
    return upgrade_stack[0]


def connect(stack: Stack) -> Connection:
    return stack.app.extensions["db_engine"].connect()


def add_run(stack: Stack, status: RunStatus, engine: str = ENGINE) -> str:
    """A run row of `engine` in `status`, as a client's job would leave it."""
    run_id = str(uuid.uuid4())
    with connect(stack) as conn:
        conn.execute(
            Run.__table__.insert(),
            {"id": run_id, "request_id": run_id, "skill_id": "demo-echo", "engine": engine}
            | {"status": status, "parameter": {}, "input": {}, "runtime_options": {}}
            | {"warnings": [], "timings": {}, "needs_upload": False, "attempt": 0},
        )
        conn.commit()
    return run_id


def end_run(stack: Stack, run_id: str) -> None:
    with connect(stack) as conn:
        conn.execute(update(Run).where(Run.id == run_id).values(status=RunStatus.FAILED))
        conn.commit()


def post(stack: Stack, body: object, engine: str = ENGINE, headers=ROOT):
    return stack.client.post(f"/v1/engines/{engine}/upgrade", json=body, headers=headers)


def upgrade_of(stack: Stack) -> dict:
    return stack.client.get(f"/v1/engines/{ENGINE}/upgrade", headers=ROOT).json


def wait_ended(stack: Stack, upgrade_id: str, seen: list[str] | None = None) -> dict:
    """The upgrade once it succeeded or failed; every status polled on the way into `seen`."""

    def ended() -> dict | None:
        body = upgrade_of(stack)
        assert body["upgrade_id"] == upgrade_id, body
        if seen is not None and (not seen or seen[-1] != body["status"]):
            seen.append(body["status"])
        return body if body["status"] in ("succeeded", "failed") else None

    return wait_for(ended, INSTALL_SEC, interval=0.05, what=f"upgrade {upgrade_id} to end")


def test_upgrading_needs_an_admin_token(stack):
    refused = post(stack, {"version": PINNED}, headers=bearer("alice"))
    assert refused.status_code == 403
    assert refused.json["error"]["code"] == "FORBIDDEN"
    assert refused.json["error"]["details"]["required_scope"] == "admin"
    assert (
        stack.client.get(f"/v1/engines/{ENGINE}/upgrade", headers=bearer("reader")).status_code
        == 200
    )


def test_an_unknown_engine_is_404_and_a_retired_one_keeps_its_code(stack):
    unknown = post(stack, {"version": "1.0.0"}, engine="nope")
    assert unknown.status_code == 404 and unknown.json["error"]["code"] == "ENGINE_NOT_FOUND"
    retired = post(stack, {"version": "1.0.0"}, engine="iflow")
    assert retired.status_code == 400 and retired.json["error"]["code"] == "ENGINE_RETIRED"


@pytest.mark.parametrize(
    "version",
    [
        "../x",
        "1.0.0 --foo",
        "--foo",
        "https://registry.example/qwen-code-1.0.0.tgz",
        "file:../x",
        "git+ssh://example/x.git",
        "^1.0.0",
        "1.x",
        "v1.0.0",
        "next",
        "1.0.0\n",
        5,
        None,
    ],
)
def test_a_version_npm_could_misread_is_400_with_the_error_body(stack, version):
    before = upgrade_of(stack).get("upgrade_id")
    refused = post(stack, {"version": version})
    assert refused.status_code == 400, refused.json
    error = refused.json["error"]
    assert error["code"] == "ENGINE_VERSION_INVALID"
    assert error["message"] and error["request_id"] and error["details"]["engine"] == ENGINE
    assert upgrade_of(stack).get("upgrade_id") == before  # nothing recorded


def test_an_active_run_of_the_engine_is_409(stack):
    run_id = add_run(stack, RunStatus.QUEUED)
    try:
        busy = post(stack, {"version": PINNED})
        assert busy.status_code == 409, busy.json
        assert busy.json["error"]["code"] == "ENGINE_BUSY"
        assert busy.json["error"]["details"]["active_runs"] == 1
    finally:
        end_run(stack, run_id)


def test_a_second_upgrade_while_one_is_in_progress_is_409(stack):
    upgrade_id = str(uuid.uuid4())
    with connect(stack) as conn:
        assert engine_upgrades.create(
            conn,
            upgrade_id=upgrade_id,
            engine=ENGINE,
            version=PINNED,
            requested_by="root",
            log_path=f"engine-upgrades/{upgrade_id}.log",
        )
    try:
        again = post(stack, {"version": PINNED})
        assert again.status_code == 409
        assert again.json["error"]["code"] == "ENGINE_UPGRADE_IN_PROGRESS"
    finally:
        with connect(stack) as conn:
            engine_upgrades.finish(conn, upgrade_id, UpgradeStatus.FAILED)


class RunStartsMeanwhile:
    """The real queue, but a run of the engine starts between the API's check and the send."""

    def __init__(self, stack: Stack) -> None:
        self.stack, self.queue = stack, stack.app.extensions["queue"]
        self.run_id: str | None = None

    def send_upgrade(self, upgrade_id: str, time_limits: tuple[int, int]) -> str | None:
        self.run_id = add_run(self.stack, RunStatus.RUNNING)
        return self.queue.send_upgrade(upgrade_id, time_limits)


def test_a_run_started_after_the_check_fails_the_upgrade_before_npm(stack, upgrade_stack):
    racing = RunStartsMeanwhile(stack)
    stack.app.extensions["queue"] = racing
    try:
        accepted = post(stack, {"version": PINNED})
        assert accepted.status_code == 202, accepted.json
        ended = wait_ended(stack, accepted.json["upgrade_id"])
    finally:
        stack.app.extensions["queue"] = racing.queue
        if racing.run_id:
            end_run(stack, racing.run_id)
    assert ended["status"] == "failed" and ended["error"]["code"] == "ENGINE_BUSY"
    assert ended["started_at"] is None and ended["log_tail"] == ""  # npm never started
    assert not (upgrade_stack[1] / ENGINE).exists()


@SQLITE_ONLY
def test_an_upgrade_installs_the_version_and_the_engine_reports_it(stack, upgrade_stack):
    bin_dir = upgrade_stack[1]
    before = stack.client.get(f"/v1/engines/{ENGINE}", headers=ROOT).json
    assert before["binary_path"] != str(bin_dir / ENGINE)  # the checkout's, or none
    accepted = post(stack, {"version": PINNED})
    assert accepted.status_code == 202, accepted.json
    body = accepted.json
    # the answer is read back after the task is sent: a quick worker may have started it
    assert body["status"] in ("queued", "running") and body["version_requested"] == PINNED
    assert body["tested"] is True and body["warnings"] == [] and body["requested_by"] == "root"

    seen = [body["status"]]
    ended = wait_ended(stack, body["upgrade_id"], seen)
    assert seen in (["queued", "running", "succeeded"], ["running", "succeeded"]), ended
    assert ended["version_installed"] == PINNED and ended["error"] is None
    assert "npm install --no-save" in ended["log_tail"] and "added" in ended["log_tail"]
    assert os.access(bin_dir / ENGINE, os.X_OK)

    detail = stack.client.get(f"/v1/engines/{ENGINE}", headers=ROOT).json
    assert detail["binary_path"] == str(bin_dir / ENGINE)
    assert detail["cli_version"] == PINNED and detail["upgrade_status"] == "succeeded"
    listed = stack.client.get("/v1/engines", headers=ROOT).json
    assert {e["engine"]: e["upgrade_status"] for e in listed}[ENGINE] == "succeeded"
    managed = stack.client.get(f"/v1/management/engines/{ENGINE}", headers=ROOT).json
    assert managed["upgrade_status"] == "succeeded"
    audit = stack.client.get("/v1/management/audit?action=engine.upgrade", headers=ROOT).json
    assert audit["items"][0]["target"] == ENGINE and audit["items"][0]["token_name"] == "root"


def test_a_version_npm_does_not_have_fails_with_npms_error(stack):
    accepted = post(stack, {"version": "0.0.999"})
    assert accepted.status_code == 202, accepted.json
    assert accepted.json["tested"] is False
    assert accepted.json["warnings"][0]["code"] == "ENGINE_VERSION_UNTESTED"
    ended = wait_ended(stack, accepted.json["upgrade_id"])
    assert ended["status"] == "failed" and ended["version_installed"] is None
    assert ended["error"]["code"] == "ENGINE_VERSION_NOT_FOUND"
    assert "ETARGET" in ended["log_tail"] or "E404" in ended["log_tail"]
    detail = stack.client.get(f"/v1/engines/{ENGINE}", headers=ROOT).json
    assert detail["upgrade_status"] == "failed"


def test_the_cli_version_cache_follows_a_replaced_file(tmp_path, monkeypatch):
    """npm replaces a package's files in place: the cached `--version` must not outlive them."""
    cli = tmp_path / "fakecli"

    def install(version: str) -> None:
        new = tmp_path / f"fakecli-{version}"
        new.write_text(f"#!/bin/sh\necho 'fakecli {version}'\n")
        new.chmod(0o755)
        os.replace(new, cli)

    monkeypatch.setenv("SKILL_RUNNER_FAKECLI_BIN", str(cli))
    install("1.0.0")
    assert catalog.cli_version("fakecli") == ("fakecli 1.0.0", None)
    install("2.0.0")
    assert catalog.cli_version("fakecli") == ("fakecli 2.0.0", None)
