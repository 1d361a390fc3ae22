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


class Channel:
    """Requests to the worker through files in the run's `calls/` folder: the box keeps the
    script off the network and the database. Absent when the script runs outside a service."""

    def __init__(self) -> None:
        run_dir = os.environ.get("SKILL_RUNNER_RUN_DIR", "")
        self.dir = os.path.join(run_dir, "calls")
        self.served = bool(run_dir)
        self.calls = 0
        self.ops = 0
        self._opened: dict[str, Any] | None = None

    def opened(self) -> dict[str, Any]:
        """The composite's scratch as this run starts to use it, and the session's id."""
        if self._opened is None:
            self._opened = self.op("open") if self.served else {"scratch": {}, "session_id": ""}
        return self._opened

    def request(self, base: str, body: dict[str, Any]) -> dict[str, Any]:
        os.makedirs(self.dir, exist_ok=True)
        with open(base + ".request.tmp", "w", encoding="utf-8") as fh:
            json.dump(body, fh)
        os.replace(base + ".request.tmp", base + ".request.json")
        while not os.path.exists(base + ".response.json"):  # the worker answers
            time.sleep(0.005 if base.rsplit(os.sep, 1)[-1].startswith("op-") else 0.02)
        with open(base + ".response.json", encoding="utf-8") as fh:
            return json.load(fh)

    def op(self, name: str, **args: Any) -> Any:
        if not self.served:
            raise RuntimeError(f"ctx.{name} needs the service: run the skill through it")
        self.ops += 1
        answer = self.request(os.path.join(self.dir, f"op-{self.ops}"), {"op": name, "args": args})
        if not answer.get("ok"):
            raise RuntimeError(f"ctx.{name}: {(answer.get('error') or {}).get('message')}")
        return answer.get("output")


class Memory:
    """ctx.memory: the owner's long-term entries, shared by the owner's skills."""

    def __init__(self, channel: Channel) -> None:
        self._op = channel.op

    def store(self, text: str, key: str | None = None, meta: dict | None = None) -> dict:
        return self._op("memory.store", text=text, key=key, meta=meta)

    def get(self, key: str) -> dict | None:
        return self._op("memory.get", key=key)

    def forget(self, key: str) -> dict:
        return self._op("memory.forget", key=key)

    def search(self, query: str, limit: int = 5) -> list[dict]:
        return self._op("memory.search", query=query, limit=limit)

    def list(self, limit: int = 20) -> list[dict]:
        return self._op("memory.list", limit=limit)


class Session:
    """ctx.session: the conversation's messages, oldest first."""

    def __init__(self, channel: Channel) -> None:
        self._op = channel.op
        self._channel = channel

    @property
    def id(self) -> str:
        return self._channel.opened()["session_id"]

    def history(self, limit: int = 50) -> list:
        return self._op("session.history", limit=limit)

    def append(self, role: str, content: str) -> dict:
        return self._op("session.append", role=role, content=content)

    def clear(self) -> dict:
        return self._op("session.clear")


class Context:
    """What openEvo's desktop ctx offers, served by the worker: run id, config, scratch (shared
    by a composite's steps), memory, session, log and call (composites)."""

    def __init__(self, run_id: str, channel: Channel) -> None:
        self.run_id = run_id
        self.config: dict[str, Any] = {}
        self.memory = Memory(channel)
        self.session = Session(channel)
        self._channel = channel
        self._scratch: dict[str, Any] | None = None  # asked for on first use
        self._scratch_at_start: Any = None

    @property
    def scratch(self) -> dict[str, Any]:
        if self._scratch is None:
            start = self._channel.opened()["scratch"]
            self._scratch_at_start = json.dumps(start, sort_keys=True)
            self._scratch = start
        return self._scratch

    @scratch.setter
    def scratch(self, value: dict[str, Any]) -> None:
        self.scratch  # noqa: B018 (what it held before, to tell a change)
        self._scratch = value

    def save_scratch(self) -> None:
        """Hand a changed scratch back to the worker, which merges it by key."""
        if self._scratch is None or not self._channel.served:
            return
        if json.dumps(self._scratch, sort_keys=True) != self._scratch_at_start:
            self._channel.op("scratch.put", scratch=self._scratch)

    def log(self, *parts: Any) -> None:
        print("[skill]", *parts, file=sys.stderr, flush=True)

    def call(self, name: str, input: Any = None) -> Any:
        """Run the skill `name` as a child run and return its output (composites only)."""
        channel = self._channel
        if not channel.served:
            raise RuntimeError(f"ctx.call('{name}'): only a composite skill calls other skills")
        channel.calls += 1
        base = os.path.join(channel.dir, str(channel.calls))
        answer = channel.request(base, {"name": name, "input": input if input is not None else {}})
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


def main(index: str) -> int:
    with open(os.environ["SKILL_RUNNER_INPUT_FILE"], encoding="utf-8") as fh:
        payload = json.load(fh)
    ctx = Context(os.environ.get("SKILL_RUNNER_RUN_ID", ""), Channel())
    stdout, sys.stdout = sys.stdout, sys.stderr  # prints go to the log, never into the result
    try:
        value = _load(index)(payload.get("input") or {}, ctx)
        if hasattr(value, "__await__"):  # an async execute
            import asyncio  # only then: its import costs more than the rest of the harness

            value = asyncio.run(_await(value))
        text = json.dumps(value, ensure_ascii=False)
    except Exception as exc:
        import traceback  # only on failure, as asyncio above

        traceback.print_exc()
        _write_error(f"{type(exc).__name__}: {exc}")
        return 1
    finally:
        sys.stdout = stdout
    result_file = os.environ["SKILL_RUNNER_RESULT_FILE"]
    os.makedirs(os.path.dirname(result_file), exist_ok=True)
    with open(result_file, "w", encoding="utf-8") as fh:
        fh.write(text)
    ctx.save_scratch()
    return 0


def _write_error(message: str) -> None:
    """What execute raised, for the run's error message (result/error.json; best effort)."""
    try:
        folder = os.path.dirname(os.environ["SKILL_RUNNER_RESULT_FILE"])
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "error.json"), "w", encoding="utf-8") as fh:
            json.dump({"message": message}, fh, ensure_ascii=False)
    except (KeyError, OSError):
        pass


async def _await(value: Any) -> Any:
    return await value


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
