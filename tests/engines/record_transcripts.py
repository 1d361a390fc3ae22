"""Record real CLI transcripts against the fake LLM server for the adapters' unit tests.

    python -m tests.engines.record_transcripts codex claude
    python -m tests.engines.record_transcripts kilo:tool_json,resume   # some cases only

Writes tests/engines/transcripts/<engine>_<case>.stdout/.stderr. Paths of the temporary run
dir are replaced by `<run_dir>` so the files hold nothing of the recording machine. Re-record
after bumping a CLI version in deploy/install-engines.sh.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fake_llm import Script
from runner_core.engines import get_adapter
from tests.engines.harness import PROBE_COMMAND, ScenarioResult, run_scenario
from tests.engines.test_every_engine import shipped_offline

TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts"
FINAL = '{"status": "ok", "engine": "$model"}'
NO_KEY = {"api_key": None, "api_key_env": "UNSET_FAKE_KEY_VAR"}
NO_RETRIES: dict[str, dict[str, Any]] = {
    "codex": {
        "settings": {
            "model_providers": {"skillrunner": {"stream_max_retries": 0, "request_max_retries": 0}}
        }
    },
    "claude": {"env": {"CLAUDE_CODE_MAX_RETRIES": "0"}},
}

# recorded with the shipped defaults that keep the CLI off the network (telemetry, updates)
OFFLINE: dict[str, Callable[[], dict[str, Any]]] = {"kilo": lambda: shipped_offline("kilo")}

Case = Callable[[str, Path], ScenarioResult]


def _config(engine: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    offline = OFFLINE[engine]() if engine in OFFLINE else {}
    return {**offline, **(extra or {})}


def _tool_json(engine: str, base: Path) -> ScenarioResult:
    script = Script(command=PROBE_COMMAND, final_text=FINAL)
    return run_scenario(get_adapter(engine), base, script, config=_config(engine))


def _resume(engine: str, base: Path) -> ScenarioResult:
    adapter, script = get_adapter(engine), Script(command=PROBE_COMMAND, final_text=FINAL)
    first = run_scenario(adapter, base, script, config=_config(engine))
    return run_scenario(
        adapter,
        base,
        script,
        config=_config(engine),
        prompt="again",
        run_dir=first.run_dir,
        session_id=first.output.session_id,
    )


def _http(status: int) -> Case:
    def case(engine: str, base: Path) -> ScenarioResult:
        config = NO_RETRIES.get(engine, {}) if status == 401 else {}
        return run_scenario(
            get_adapter(engine),
            base,
            Script(status=status, error_message=f"fake {status}"),
            config=_config(engine, config),
            timeout=None if engine in OFFLINE else 60,
        )

    return case


def _http401_killed(engine: str, base: Path) -> ScenarioResult:
    """The CLI retries a 401 with its default backoff and is killed by the run timeout."""
    return run_scenario(
        get_adapter(engine), base, Script(status=401, error_message="fake 401"), timeout=4
    )


def _auth_missing(engine: str, base: Path) -> ScenarioResult:
    return run_scenario(get_adapter(engine), base, Script(), config=NO_KEY, timeout=60)


CASES: dict[str, Case] = {
    "tool_json": _tool_json,
    "resume": _resume,
    "http400": _http(400),
    "http401": _http(401),
    "http401_killed": _http401_killed,
    "auth_missing": _auth_missing,
}


def record(engine: str, cases: list[str] | None = None) -> None:
    """Run every case (or those named) for `engine` and store its scrubbed stdout/stderr."""
    TRANSCRIPTS.mkdir(exist_ok=True)
    for case, run in CASES.items():
        if cases and case not in cases:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp).resolve()
            result = run(engine, base)
            for stream, text in (("stdout", result.stdout), ("stderr", result.stderr)):
                scrubbed = text.replace(str(result.run_dir), "<run_dir>").replace(
                    str(base), "<tmp>"
                )
                (TRANSCRIPTS / f"{engine}_{case}.{stream}").write_text(scrubbed, encoding="utf-8")
        error = result.output.error.code if result.output.error else None
        print(
            f"{engine}_{case}: exit={result.process.exit_code} timed_out={result.process.timed_out} "
            f"error={error} {result.seconds:.2f}s"
        )


def main(argv: list[str]) -> int:
    """Record transcripts for the engines named on the command line."""
    for arg in argv or ["codex", "claude"]:
        engine, _, cases = arg.partition(":")
        record(engine, cases.split(",") if cases else None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
