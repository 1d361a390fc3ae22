"""What every engine adapter does alike, each through the same scenario: where the prompt and
the session to resume go, where the CLI runs and what it is given, and how a CLI that is
missing or fails without output is reported. Each test_engine_<name>.py keeps what only its
engine does; adding an engine means adding a row to ADAPTERS.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from runner_core.engines import get_adapter
from runner_core.engines.base import EngineAdapter
from runner_core.engines.invocation import binary_env
from tests.helpers import TRANSCRIPTS, engine_context, printed

KEY = "secret-key-42"
CONFIG = {
    "base_url": "http://127.0.0.1:9/v1",
    "api_key": KEY,
    "model": "m1",
    "env": {"EXTRA_VAR": "1"},
    "settings": {"some": {"setting": True}},
}
LONG_PROMPT = "x" * 200_000


@dataclass(frozen=True)
class Adapter:
    """One engine's spelling of what every adapter does."""

    name: str
    resume: str = "--resume"  # the argv word before the session id
    prompt_flag: str | None = None  # the prompt as FLAG=PROMPT; None: after "--"
    stdin_args: tuple[str, ...] = ()  # what argv ends with when the prompt is on stdin

    @property
    def adapter(self) -> EngineAdapter:
        return get_adapter(self.name)

    def prompt_tail(self, prompt: str) -> list[str]:
        return [f"{self.prompt_flag}={prompt}"] if self.prompt_flag else ["--", prompt]


ADAPTERS = [
    Adapter("claude"),
    Adapter("codex", resume="resume", stdin_args=("-",)),
    Adapter("gemini", prompt_flag="--prompt"),
    Adapter("iflow", prompt_flag="--prompt"),
    Adapter("opencode", resume="-s"),
    Adapter("kilo", resume="-s"),
    Adapter("qwen", prompt_flag="--prompt"),
]
each_adapter = pytest.mark.parametrize("engine", ADAPTERS, ids=lambda engine: engine.name)


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: Adapter) -> None:
    """The engine's CLI is an executable file (whether or not the real one is installed)."""
    cli = tmp_path / "bin" / engine.adapter.binary
    cli.parent.mkdir()
    cli.write_text("#!/bin/sh\n")
    cli.chmod(0o755)
    monkeypatch.setenv(binary_env(engine.adapter.binary), str(cli))


@each_adapter
def test_a_prompt_starting_with_a_dash_ends_argv_as_one_value(
    tmp_path: Path, engine: Adapter
) -> None:
    spec = engine.adapter.build_command(engine_context(tmp_path, config=CONFIG, prompt="- a --b"))
    assert spec.argv[-len(engine.prompt_tail("")) :] == engine.prompt_tail("- a --b")
    assert spec.stdin is None


@each_adapter
def test_a_prompt_too_long_for_argv_goes_to_stdin(tmp_path: Path, engine: Adapter) -> None:
    spec = engine.adapter.build_command(engine_context(tmp_path, config=CONFIG, prompt=LONG_PROMPT))
    assert spec.stdin == LONG_PROMPT
    assert not any(LONG_PROMPT in arg for arg in spec.argv)
    assert tuple(spec.argv[len(spec.argv) - len(engine.stdin_args) :]) == engine.stdin_args


@each_adapter
def test_the_session_to_resume_comes_just_before_the_prompt(
    tmp_path: Path, engine: Adapter
) -> None:
    spec = engine.adapter.build_command(engine_context(tmp_path, config=CONFIG, session_id="sid-1"))
    tail = engine.prompt_tail("do it")
    assert spec.argv[-len(tail) - 2 :] == [engine.resume, "sid-1", *tail]


@each_adapter
def test_the_cli_runs_in_the_run_dir_with_its_home_there_and_the_config_env(
    tmp_path: Path, engine: Adapter
) -> None:
    spec = engine.adapter.build_command(engine_context(tmp_path, config=CONFIG))
    assert spec.cwd == tmp_path
    assert Path(spec.env["HOME"]).parent == tmp_path
    assert spec.env["EXTRA_VAR"] == "1"


@each_adapter
def test_the_key_reaches_the_cli_in_its_environment_only(tmp_path: Path, engine: Adapter) -> None:
    spec = engine.adapter.build_command(engine_context(tmp_path, config=CONFIG))
    assert KEY in spec.env.values()
    assert not any(KEY in text for text in [*spec.argv, *spec.files.values()])


@each_adapter
def test_a_cli_not_installed_is_named_bare_and_reported_as_cli_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: Adapter
) -> None:
    binary = engine.adapter.binary
    monkeypatch.setenv(binary_env(binary), str(tmp_path / "missing"))
    assert engine.adapter.build_command(engine_context(tmp_path, config=CONFIG)).argv[0] == binary
    result = printed(tmp_path, 127, stderr=f"cannot start {binary}: not found\n")
    out = engine.adapter.parse_output(result)
    assert out.error is not None and out.error.code == "CLI_NOT_INSTALLED"


@each_adapter
def test_a_failed_exit_without_output_is_engine_failed_with_stderr(
    tmp_path: Path, installed: None, engine: Adapter
) -> None:
    out = engine.adapter.parse_output(printed(tmp_path, 3, stderr="boom: bad flag\n"))
    assert out.error is not None and out.error.code == "ENGINE_FAILED"
    assert "boom: bad flag" in out.error.message


@each_adapter
def test_a_cli_killed_on_timeout_is_engine_failed(
    tmp_path: Path, installed: None, engine: Adapter
) -> None:
    out = engine.adapter.parse_output(printed(tmp_path, None, timed_out=True))
    assert out.error is not None and out.error.code == "ENGINE_FAILED"
    assert out.error.details["timed_out"] is True


@pytest.mark.parametrize(
    ("name", "first", "last"),
    [
        ("gemini", "gemini_http400", "gemini_tool_json"),
        ("qwen", "qwen_http400", "qwen_tool_json"),
        ("iflow", "iflow_tool_json", "iflow_json_only"),
    ],
)
def test_the_appended_log_of_a_resumed_turn_reads_as_the_last_turn(
    tmp_path: Path, name: str, first: str, last: str
) -> None:
    adapter = get_adapter(name)
    turns = [(TRANSCRIPTS / f"{t}.stdout").read_text() for t in (first, last)]
    (tmp_path / "alone").mkdir()
    alone = adapter.parse_output(printed(tmp_path / "alone", 0, turns[1]))
    out = adapter.parse_output(printed(tmp_path, 0, "".join(turns)))
    assert out.error is None and alone.error is None
    assert out.parsed_json == alone.parsed_json is not None
    assert out.session_id == alone.session_id is not None
