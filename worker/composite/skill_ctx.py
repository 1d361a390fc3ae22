"""The worker's side of `ctx.memory`, `ctx.session` and `ctx.scratch` for skill.json code runs.

The harness (runner_core/openevo/harness.py, harness.mjs) writes `calls/op-<n>.request.json`
(`{"op", "args"}`) in its run directory; the run's CallServer thread answers each with
`op-<n>.response.json` (`{"ok", "output"}` or `{"ok": false, "error": {"message"}}`) from here.
The box keeps the script off the database and off other runs' files, so everything goes
through this channel.

Scope: the root run of a composite (a plain run is its own root) gives the owner (its token
name) and the session (`runtime_options.session_id`, else the root's request id), so every step
of a composite shares them; scratch is the root's too (`.scratch.json` in its run directory),
each run's changes merged in by top-level key when it ends. A run that touches memory or its
session has a result that depends on more than its input: it and its composite ancestors are
taken out of the result cache.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session

from runner_core.in_run import open_in_run
from runner_core.runtime_options import RuntimeOptions
from runner_core.store import memory
from runner_core.store.models import Run
from runner_core.workspace import open_run_file, write_json_in
from worker import context
from worker.context import sessions

log = logging.getLogger(__name__)
SCRATCH_FILE = ".scratch.json"
SCRATCH_LOCK = ".scratch.lock"
MAX_SCRATCH = 1024 * 1024  # bytes of a composite's scratch as JSON
MAX_DEPTH = 32  # composite nesting followed to the root

OPS: dict[str, Callable[..., Any]] = {
    "memory.store": memory.store,
    "memory.get": memory.get,
    "memory.forget": memory.forget,
    "memory.list": memory.entries,
    "memory.search": memory.search,
    "session.history": memory.history,
    "session.append": memory.append,
    "session.clear": memory.clear,
}


class SkillContext:
    """Answers one run's ctx requests (one instance per run, on its CallServer's thread)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        with sessions()() as session:
            self.lineage = _lineage(session, run)
        root = self.lineage[-1]
        session_id = RuntimeOptions.from_dict(root.runtime_options).session_id
        self.scope = memory.Scope(
            owner=root.owner or "",
            session_id=session_id or root.request_id,
            skill_id=run.skill_id,
        )
        self.root_dir = context.settings().runs_dir / root.id  # holds the scratch file
        self.scratch_at_start: dict[str, Any] = {}
        self.uncached = False

    def answer(self, request: Any) -> dict[str, Any]:
        op = request.get("op") if isinstance(request, dict) else None
        args = request.get("args") if isinstance(request, dict) else None
        args = args if isinstance(args, dict) else {}
        try:
            if op == "open":  # scratch as the run starts to use it, and the session's id
                self.scratch_at_start = _read_scratch(self.root_dir)
                output: Any = {
                    "scratch": self.scratch_at_start,
                    "session_id": self.scope.session_id,
                }
            elif op == "scratch.put":
                self._merge_scratch(args.get("scratch"))
                output = None
            elif op in OPS:
                output = self._stored(OPS[op], args)
            else:
                return _refused(f"unknown ctx request {op!r}")
        except memory.Refused as exc:
            return _refused(str(exc))
        except TypeError as exc:  # arguments the function does not take
            return _refused(f"{op}: {exc}")
        return {"ok": True, "output": output}

    def _stored(self, function: Callable[..., Any], args: dict[str, Any]) -> Any:
        with sessions()() as session:
            output = function(session, self.scope, **args)
            if not self.uncached:
                _take_out_of_cache(session, [r.id for r in self.lineage])
            session.commit()
        self.uncached = True
        return output

    def _merge_scratch(self, scratch: Any) -> None:
        """This run's changes (keys set, changed or removed since ctx.open) into the root's
        scratch as it is now: steps running side by side each keep what they wrote."""
        if not isinstance(scratch, dict):
            raise memory.Refused("ctx.scratch must be an object")
        with _locked(self.root_dir):
            current = _read_scratch(self.root_dir)
            for key in self.scratch_at_start.keys() - scratch.keys():
                current.pop(key, None)
            for key, value in scratch.items():
                if key not in self.scratch_at_start or self.scratch_at_start[key] != value:
                    current[key] = value
            if len(json.dumps(current, ensure_ascii=False).encode()) > MAX_SCRATCH:
                raise memory.Refused(f"ctx.scratch is larger than {MAX_SCRATCH} bytes as JSON")
            write_json_in(self.root_dir, SCRATCH_FILE, current)


def _lineage(session: Session, run: Run) -> list[Run]:
    """The run, its parent, ... up to the root (the last)."""
    chain = [run]
    while chain[-1].parent_run_id and len(chain) < MAX_DEPTH:
        parent = session.get(Run, chain[-1].parent_run_id)
        if parent is None:
            break
        session.expunge(parent)
        chain.append(parent)
    return chain


def _take_out_of_cache(session: Session, run_ids: list[str]) -> None:
    session.execute(update(Run).where(Run.id.in_(run_ids)).values(cache_key=None))


def _read_scratch(root_dir: Path) -> dict[str, Any]:
    """The root's scratch: a regular file reached through no link its runs left ({} else)."""
    fh = open_run_file(root_dir, SCRATCH_FILE)
    if fh is None:
        return {}
    try:
        with fh:
            value = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


@contextmanager
def _locked(root_dir: Path):
    os.makedirs(root_dir, exist_ok=True)
    fd = open_in_run(root_dir, SCRATCH_LOCK, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _refused(message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"message": message}}
