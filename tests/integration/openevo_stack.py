"""A stack whose skills directory also holds the skill.json test skills (openEvo's category
layout), with the pinned TypeScript runner installed; shared by the skill.json test modules."""

from __future__ import annotations

import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from api import create_app
from api.queue import CeleryQueue
from runner_core.settings import REPO_ROOT
from tests.integration.services import Stack, broker_settings

OPENEVO_SKILLS = Path(__file__).resolve().parents[1] / "openevo_skills"


def install_node_runners() -> None:
    """deploy/install-node-runners.sh (a no-op when installed); fails loudly without npm."""
    done = subprocess.run(
        ["bash", str(REPO_ROOT / "deploy" / "install-node-runners.sh")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"cannot install the TypeScript runner: {done.stderr[-2000:]}"


@contextmanager
def openevo_stack(root: Path, backend: str, **worker: Any):
    """API + a real worker on real Redis and SQL, with tests/openevo_skills installed."""
    with broker_settings(root, backend) as settings:
        shutil.copytree(OPENEVO_SKILLS, settings.skills_dir, dirs_exist_ok=True)
        app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
        stack = Stack(settings, app.test_client(), app, None, backend)
        try:
            stack.start_worker(**worker)
            yield stack
        finally:
            if stack.worker:
                stack.worker.stop()
            app.extensions["db"].kw["bind"].dispose()


def start(stack: Stack, skill_id: str, inline: dict[str, Any]) -> str:
    """POST a job of `skill_id` with inline `input`; its request id (a refusal fails the test)."""
    resp = stack.client.post("/v1/jobs", json={"skill_id": skill_id, "input": inline})
    assert resp.status_code == 200, resp.json
    return resp.json["request_id"]
