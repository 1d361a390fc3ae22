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
from runner_core.engines.base import EngineContext
from runner_core.settings import REPO_ROOT
from tests.engines.harness import (
    FAKE_CONFIG,
    MARKER_FILE,
    PROBE_PROMPT,
    PROBE_SKILL,
    engine_box,
)
from tests.engines.test_every_engine import ENGINES

SECRET = "ZQXSECRET31"


@pytest.mark.parametrize("engine", ENGINES, ids=lambda engine: engine.name)
def test_the_shell_tool_cannot_leave_the_run_directory(tmp_path: Path, engine) -> None:
    boxed = engine_box(tmp_path, engine.name)
    adapter, data, run_dir = boxed.adapter, boxed.data, boxed.run_dir
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
    with FakeLLM(Script(command=command, final_text=final)) as llm:
        config = {**FAKE_CONFIG[adapter.name](llm), **engine.config}
        ctx = EngineContext(
            run_dir, PROBE_SKILL, PROBE_PROMPT, config, model=config["model"], boxed=True
        )
        process = boxed.run(adapter.build_command(ctx))
        seen = llm.request_text()
    output = adapter.parse_output(process)
    stderr = process.stderr_path.read_text(errors="replace")[-2000:]
    assert output.error is None, stderr
    assert output.parsed_json == json.loads(final)
    assert (run_dir / MARKER_FILE).read_text() == "probe"  # the tool call ran, in the box
    for path in escapes:
        assert not path.exists(), path
    assert SECRET not in seen  # the listing of the other run never reached the model
