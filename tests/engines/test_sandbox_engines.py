"""Each real CLI in the run's box (runner_core.sandbox, through the worker's supervisor):
the fake model asks its shell tool to write outside the run directory and to list another
run's directory; both are refused (no file, no listing), a write inside the run directory
works, and the run still ends with the model's final answer."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from runner_core.engines.base import EngineContext
from runner_core.sandbox import Limits, find_bwrap, plan_box
from runner_core.settings import REPO_ROOT
from runner_core.skills.model import Automation
from tests.engines.harness import (
    FAKE_CONFIG,
    MARKER_FILE,
    PROBE_PROMPT,
    PROBE_SKILL,
    make_run_dir,
    require_binary,
)
from tests.engines.test_every_engine import ENGINES
from worker.execution.supervisor import Watch, run_command

SECRET = "ZQXSECRET31"


@pytest.mark.parametrize("engine", ENGINES, ids=lambda engine: engine.name)
def test_the_shell_tool_cannot_leave_the_run_directory(tmp_path: Path, engine) -> None:
    if find_bwrap() is None:
        pytest.fail("bubblewrap must work here: deploy/install-sandbox.sh installs it")
    adapter = get_adapter(engine.name)
    require_binary(adapter)
    data = tmp_path / "data"
    run_dir = make_run_dir(data / "runs", adapter)
    other = data / "runs" / "other-run"
    other.mkdir()
    (other / f"{SECRET}.txt").write_text("another run's file")
    outside = tmp_path / "outside"
    outside.mkdir()
    escapes = [outside / "escaped.txt", REPO_ROOT / f"escaped-{uuid.uuid4().hex}.txt"]
    command = "; ".join(
        [
            *(f"printf x > {path}" for path in escapes),
            f"ls {other}",
            f"printf probe > {MARKER_FILE}",
        ]
    )
    final = json.dumps({"status": "ok", "engine": engine.name})
    box = plan_box("auto", Limits(4 * 1024**3, 1024, 4096), run_dir, Automation(), (data,))
    assert box is not None and box.bwrap is not None
    with FakeLLM(Script(command=command, final_text=final)) as llm:
        config = {**FAKE_CONFIG[adapter.name](llm), **engine.config}
        ctx = EngineContext(
            run_dir, PROBE_SKILL, PROBE_PROMPT, config, model=config["model"], boxed=True
        )
        spec = adapter.build_command(ctx)
        (run_dir / "logs").mkdir()
        process = run_command(
            spec,
            run_dir / "logs" / "stdout.txt",
            run_dir / "logs" / "stderr.txt",
            Watch(box=box.for_engine()),
        )
        seen = llm.request_text()
    output = adapter.parse_output(process)
    stderr = process.stderr_path.read_text(errors="replace")[-2000:]
    assert output.error is None, stderr
    assert output.parsed_json == json.loads(final)
    assert (run_dir / MARKER_FILE).read_text() == "probe"  # the tool call ran, in the box
    for path in escapes:
        assert not path.exists(), path
    assert SECRET not in seen  # the listing of the other run never reached the model
