"""The README's second demo, run as written: its commands are read from the README section
"An agent run without an API key" and run with bash; only the port differs (a free one instead
of 8000), and `deploy/run.sh` is started as the `skill-runner` it execs (its bootstrap step
would reinstall the test environment without the test extra)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from launcher.demo_llm import KEY_VARIABLES
from runner_core.engines import get_adapter
from runner_core.settings import REPO_ROOT
from tests.engines.harness import require_binary
from tests.helpers import wait_for
from tests.integration.test_serve import free_port, health

SECTION = "## An agent run without an API key"


def readme_blocks() -> list[list[str]]:
    """The section's bash blocks, each as its commands (continuation lines joined)."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    return [block.replace("\\\n", "").strip().splitlines() for block in blocks]


def test_the_readme_demo_runs_demo_echo_through_codex_without_a_key(tmp_path: Path):
    require_binary(get_adapter("codex"))
    (install, start), client = readme_blocks()
    assert install == "deploy/install-engines.sh" and start == "deploy/run.sh --demo-llm"
    subprocess.run(["bash", "-c", install], cwd=REPO_ROOT, check=True, timeout=900)

    port = free_port()
    drop = {"CELERY_BROKER_URL", "DATABASE_URL", "SKILL_RUNNER_ENGINE_CONFIG_DIR", *KEY_VARIABLES}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        SKILL_RUNNER_DATA_DIR=str(tmp_path / "data"),
        SKILL_RUNNER_SKILLS_DIR=str(REPO_ROOT / "skills"),
        PORT=str(port),
        HOST="127.0.0.1",
        WEB_CONCURRENCY="1",
    )
    argv = start.replace("deploy/run.sh", str(Path(sys.executable).parent / "skill-runner serve"))
    serve = subprocess.Popen(
        argv.split(), cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: (health(base) or {}).get("status") == "ok", 60, 0.2, what="/healthz")
        script = "\n".join(client).replace("localhost:8000", f"localhost:{port}")
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        serve.send_signal(signal.SIGTERM)
        output = serve.communicate(timeout=60)[0].decode(errors="replace")
    assert done.returncode == 0, (done.stdout, done.stderr, output)
    assert serve.returncode == 0, output
    assert "DEMO LLM ON" in output  # loud in the service's log

    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    healthz, status, events, result = answers[:4]
    assert healthz["demo_llm"] is True
    assert status["status"] == "succeeded" and status["engine"] == "codex", status
    assert '"type":"command_execution"' in events["text"]  # the agent's shell call
    assert result["result"]["data"] == {
        "text": "  Hello   World ",
        "length": 16,
        "normalized": True,
        "normalized_text": "hello world",
        "warnings": ["the text has leading or trailing whitespace"],
    }
    notes = (tmp_path / "notes.md").read_text()
    assert notes.startswith("# Notes") and done.stdout.rstrip().endswith(notes.rstrip())
