"""`ctx.call(name, input)` of a composite written as an index file (index.py / index.ts).

The index file runs as the parent run's script. Each call is a child run like a pipeline step
(`step_name` `<skill>@<n>`, the parent's id): the harness writes `calls/<n>.request.json` in
the run directory and waits for `calls/<n>.response.json`; a thread of the worker process that
runs the parent creates and sends the child, watches it end and writes the answer. When the
parent ends (done, failed, timed out or canceled), its children still active are canceled.
The parent holds its worker process while it waits, so index-file composites need a worker
with at least two processes (pipeline composites hold none).

The same directory carries every code skill's `ctx.memory`, `ctx.session` and `ctx.scratch`
requests (`op-<n>.request.json`), answered by worker.composite.skill_ctx.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from contextlib import contextmanager
from fnmatch import fnmatch
from typing import Any

from sqlalchemy import select

from runner_core.in_run import remove_in_run, run_folder, run_folder_if_there
from runner_core.openevo.spec import is_openevo_dir
from runner_core.openevo.steps import call_name, in_run_attempt
from runner_core.skills import SkillPackage
from runner_core.skills.memo import load_skill_cached
from runner_core.statuses import ACTIVE_STATUSES, RunStatus
from runner_core.store.cancels import parent_ended
from runner_core.store.models import Run
from runner_core.workspace import open_run_file, write_json_in
from worker import context
from worker.composite.children import cancel_children, create_child, output_of
from worker.composite.end import step_ended
from worker.composite.skill_ctx import SkillContext
from worker.context import events_of, sessions
from worker.dispatch import send_run
from worker.execution.run_layout import skill_source

log = logging.getLogger(__name__)
CALLS_DIR = "calls"
POLL_SEC = 0.02


def is_index_composite(pkg: SkillPackage) -> bool:
    spec = pkg.openevo
    return spec is not None and spec.mode == "composite" and not spec.pipeline


def runs_index_file(pkg: SkillPackage) -> bool:
    """A code skill or an index-file composite: its index file runs with a ctx."""
    spec = pkg.openevo
    return spec is not None and (spec.mode == "code" or is_index_composite(pkg))


@contextmanager
def calls_served(run: Run):
    """Serve the calls and ctx requests of `run` while it executes, when it runs an index
    file (a skill.json code skill or an index-file composite)."""
    source = skill_source(context.settings(), run) if run.engine is None else None
    if source is None or not is_openevo_dir(source):
        yield
        return
    pkg = load_skill_cached(source)
    if not runs_index_file(pkg):
        yield
        return
    server = CallServer(run, pkg)
    server.start()
    try:
        yield
    finally:
        server.stop()


class CallServer(threading.Thread):
    """Turns the harness's call requests into child runs and their ends into answers."""

    def __init__(self, parent: Run, pkg: SkillPackage) -> None:
        settings = context.settings()
        super().__init__(name=f"calls-{parent.id[:8]}", daemon=True)
        self.parent = parent
        self.composite = is_index_composite(pkg)
        self.allowed = set(pkg.openevo.calls) if pkg.openevo else set()
        self.ctx = SkillContext(parent)
        # where the script runs (a worker's local scratch when SKILL_RUNNER_WORK_DIR is set)
        # the folder is the run's, written while its script runs: every path in it is walked
        # from the run directory, through no link the script put in place of `calls/`
        self.run_dir = settings.work_runs_dir / parent.id
        remove_in_run(self.run_dir, CALLS_DIR)  # an earlier attempt's answers are not ours
        if self.composite:  # a code skill's harness makes it on its first request (after the
            os.close(run_folder(self.run_dir, CALLS_DIR))  # run directory left the run pool)
        self.pending: dict[int, str] = {}  # call number -> child run id
        self.seen: set[int] = set()
        self.ops_seen: set[str] = set()
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(POLL_SEC):
            try:
                self._answer_ops()
                self._take_requests()
                self._answer_ended()
            except Exception:  # a database hiccup: the next poll tries again
                log.warning("calls of run %s: poll failed", self.parent.id, exc_info=True)

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=5)
        if self.composite:
            with sessions()() as session:
                parent = session.get(Run, self.parent.id)  # its end is recorded by now
                if parent is not None:
                    reason = parent_ended(parent, parent.status, parent.error)
                    cancel_children(session, self.parent.id, reason)
                session.commit()

    def _answer_ops(self) -> None:
        for file in self._requests("op-*.request.json"):
            name = file.split(".")[0]
            if name in self.ops_seen:
                continue
            self.ops_seen.add(name)
            answer = self.ctx.answer(self._read(file))
            write_json_in(self.run_dir, f"{CALLS_DIR}/{name}.response.json", answer)

    def _take_requests(self) -> None:
        for file in self._requests("[0-9]*.request.json"):
            number = int(file.split(".")[0])
            if number in self.seen:
                continue
            self.seen.add(number)
            request = self._read(file)
            name, call_input = request.get("name"), request.get("input")
            call_input = {} if call_input is None else call_input
            if not self.composite:
                message = f"ctx.call('{name}'): only a composite skill calls other skills"
                self._answer(number, {"ok": False, "error": {"message": message}})
                continue
            if name not in self.allowed:
                self._answer(number, {"ok": False, "error": _undeclared(name, self.allowed)})
                continue
            if not isinstance(call_input, dict):  # as a job's input: never run with {} instead
                message = f"the input must be an object, not {_json_type(call_input)}"
                self._answer(number, {"ok": False, "error": {"message": message}})
                continue
            with sessions()() as session:
                step = in_run_attempt(call_name(name, number), self.parent.attempt)
                child, queue = create_child(session, self.parent, step, name, call_input)
                session.commit()
            self.pending[number] = child.id
            started = {"step": child.step_name, "request_id": child.request_id, "attempt": 1}
            events_of(self.parent).emit("step.started", started)  # as its step.ended says
            send_run(child, child.celery_task_id, queue)

    def _answer_ended(self) -> None:
        if not self.pending:
            return
        with sessions()() as session:
            rows = session.scalars(select(Run).where(Run.id.in_(list(self.pending.values()))))
            ended = {r.id: r for r in rows if r.status not in ACTIVE_STATUSES}
        for number, run_id in list(self.pending.items()):
            child = ended.get(run_id)
            if child is None:
                continue
            del self.pending[number]
            step_ended(self.parent, child)  # before the answer: the call's end comes first
            if child.status == RunStatus.SUCCEEDED:
                self._answer(number, {"ok": True, "output": output_of(child)})
            else:
                error = child.error or {"message": f"call {child.step_name} {child.status}"}
                self._answer(number, {"ok": False, "error": error, "status": child.status})

    def _answer(self, number: int, body: dict[str, Any]) -> None:
        write_json_in(self.run_dir, f"{CALLS_DIR}/{number}.response.json", body)

    def _requests(self, pattern: str) -> list[str]:
        """The names in `calls/` matching `pattern`, sorted; none while it is no real folder."""
        try:
            dfd = run_folder_if_there(self.run_dir, CALLS_DIR)
        except OSError:
            return []
        try:
            return sorted(n for n in os.listdir(dfd) if fnmatch(n, pattern))
        finally:
            os.close(dfd)

    def _read(self, name: str) -> Any:
        """A request: a regular file reached through no link (else an empty request)."""
        fh = open_run_file(self.run_dir, f"{CALLS_DIR}/{name}")
        if fh is None:
            return {}
        with fh:
            return json.loads(fh.read().decode("utf-8"))


def _undeclared(name: Any, allowed: set[str]) -> dict[str, Any]:
    return {"message": f"ctx.call('{name}'): not in this skill's `calls` ({sorted(allowed)})"}


def _json_type(value: Any) -> str:
    """What a value read from JSON is, when no object and not null: 'an array', ..."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "an array" if isinstance(value, list) else "a string"
