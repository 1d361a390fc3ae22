"""gemini and qwen (Node CLIs) under their shipped defaults (deploy/engine-config/<engine>/
default.json), for real against the fake LLM server: how they are started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_llm import Script
from runner_core.engines import get_adapter
from runner_core.engines.config import load_engine_config
from tests.engines.harness import MARKER_FILE, PROBE_COMMAND, node_counts, run_scenario

NO_RELAUNCH = {"gemini": "GEMINI_CLI_NO_RELAUNCH", "qwen": "QWEN_CODE_NO_RELAUNCH"}
FINAL = '{"status": "ok"}'


@pytest.mark.parametrize("engine", sorted(NO_RELAUNCH))
def test_the_cli_runs_as_one_node_process(engine: str, tmp_path: Path) -> None:
    """With its NO_RELAUNCH variable the CLI does not start itself again as a child Node
    process (~1 s per run here); without it, it does (and the child may start helpers of its
    own, so at least two are seen)."""
    adapter, variable = get_adapter(engine), NO_RELAUNCH[engine]
    env = load_engine_config(engine, skill_dir=None, user=None)["env"]
    assert env.get(variable) == "true"
    script = Script(tool=False, final_text=FINAL)
    with node_counts(tmp_path / "shipped") as single:
        run = run_scenario(adapter, tmp_path / "shipped", script, config={"env": env})
    assert run.output.error is None, run.stderr[-2000:]
    assert run.output.parsed_json == json.loads(FINAL)
    unset = {k: v for k, v in env.items() if k != variable}
    with node_counts(tmp_path / "relaunch") as relaunched:
        run = run_scenario(adapter, tmp_path / "relaunch", script, config={"env": unset})
    assert run.output.error is None, run.stderr[-2000:]
    assert max(single) == 1 and max(relaunched) >= 2, (single, relaunched)


@pytest.mark.parametrize("engine", sorted(NO_RELAUNCH))
def test_a_shell_tool_runs_under_the_shipped_node_flags(engine: str, tmp_path: Path) -> None:
    """node_flags ["--liftoff-only"]: the CLI runs as `node --liftoff-only SCRIPT`, so V8 does
    not recompile the shell parser's WASM in the background, which the process would wait for
    at exit (~1 s per run with a shell call)."""
    shipped = load_engine_config(engine, skill_dir=None, user=None)
    config = {key: shipped[key] for key in ("env", "settings", "node_flags")}
    run = run_scenario(
        get_adapter(engine),
        tmp_path,
        Script(command=PROBE_COMMAND, final_text=FINAL),
        config=config,
    )
    # (after the flag a relaunching launcher would add: runner_core.engines.invocation)
    assert Path(run.spec.argv[0]).name == "node" and "--liftoff-only" in run.spec.argv[1:3]
    assert run.output.error is None, run.stderr[-2000:]
    assert (run.run_dir / MARKER_FILE).read_text() == "probe"
    assert run.output.parsed_json == json.loads(FINAL)
