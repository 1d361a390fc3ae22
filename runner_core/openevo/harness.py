"""Run `execute(input, ctx)` of a skill.json code skill written in Python (index.py).

Started by the worker as the skill's script, in the skill's folder: reads the resolved input
from SKILL_RUNNER_INPUT_FILE and writes the return value as JSON to SKILL_RUNNER_RESULT_FILE.
What the function prints goes to stderr (the run's log), so stdout never mixes with the result.
Standalone on purpose: it imports nothing of the service.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from typing import Any


class Unavailable:
    """A part of openEvo's desktop ctx this service does not offer: any use is a clear error."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        raise RuntimeError(
            f"ctx.{self._name} is not available in this service (ctx.{self._name}.{attr})"
        )


class Context:
    """What a service run can honestly offer a skill: its run id, config, scratch and log."""

    def __init__(self, run_id: str, scratch: dict[str, Any]) -> None:
        self.run_id = run_id
        self.config: dict[str, Any] = {}
        self.scratch = scratch
        self.memory = Unavailable("memory")
        self.session = Unavailable("session")
        self._calls = 0

    def log(self, *parts: Any) -> None:
        print("[skill]", *parts, file=sys.stderr, flush=True)

    def call(self, name: str, input: Any = None) -> Any:
        """Run the skill `name` as a child run and return its output (composites only)."""
        calls = os.path.join(os.environ.get("SKILL_RUNNER_RUN_DIR", ""), "calls")
        if not os.path.isdir(calls):
            raise RuntimeError(f"ctx.call('{name}'): only a composite skill calls other skills")
        self._calls += 1
        base = os.path.join(calls, str(self._calls))
        with open(base + ".request.tmp", "w", encoding="utf-8") as fh:
            json.dump({"name": name, "input": input if input is not None else {}}, fh)
        os.replace(base + ".request.tmp", base + ".request.json")
        while not os.path.exists(base + ".response.json"):  # the worker answers when it ends
            time.sleep(0.02)
        with open(base + ".response.json", encoding="utf-8") as fh:
            answer = json.load(fh)
        if not answer.get("ok"):
            message = (answer.get("error") or {}).get("message") or "failed"
            raise RuntimeError(f"ctx.call('{name}') failed: {message}")
        return answer.get("output")


def _load(path: str):
    # no __pycache__: a skill copy may be shared by runs, and an update whose file keeps its
    # size and (zip, 2 s) mtime would otherwise run the old bytecode
    sys.dont_write_bytecode = True
    spec = importlib.util.spec_from_file_location("skill_index", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(module)
    execute = getattr(module, "execute", None)
    if not callable(execute):
        raise RuntimeError(f"{path} defines no function execute(input, ctx)")
    return execute


def _scratch_path() -> str | None:
    return os.environ.get("SKILL_RUNNER_SCRATCH_FILE") or None


def main(index: str) -> int:
    with open(os.environ["SKILL_RUNNER_INPUT_FILE"], encoding="utf-8") as fh:
        payload = json.load(fh)
    scratch_file = _scratch_path()
    scratch: dict[str, Any] = {}
    if scratch_file and os.path.isfile(scratch_file):
        with open(scratch_file, encoding="utf-8") as fh:
            scratch = json.load(fh)
    ctx = Context(os.environ.get("SKILL_RUNNER_RUN_ID", ""), scratch)
    stdout, sys.stdout = sys.stdout, sys.stderr  # prints go to the log, never into the result
    try:
        value = _load(index)(payload.get("input") or {}, ctx)
        if hasattr(value, "__await__"):  # an async execute
            import asyncio  # only then: its import costs more than the rest of the harness

            value = asyncio.run(_await(value))
        text = json.dumps(value, ensure_ascii=False)
    except Exception:
        import traceback  # only on failure, as asyncio above

        traceback.print_exc()
        return 1
    finally:
        sys.stdout = stdout
    result_file = os.environ["SKILL_RUNNER_RESULT_FILE"]
    os.makedirs(os.path.dirname(result_file), exist_ok=True)
    with open(result_file, "w", encoding="utf-8") as fh:
        fh.write(text)
    if scratch_file:
        with open(scratch_file, "w", encoding="utf-8") as fh:
            json.dump(ctx.scratch, fh, ensure_ascii=False)
    return 0


async def _await(value: Any) -> Any:
    return await value


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
