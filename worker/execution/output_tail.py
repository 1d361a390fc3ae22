"""Follow a running process's log files and turn what it prints into events: `raw.stdout` /
`raw.stderr` chunks (with a `raw_ref` into logs/range) and, for engines that stream their own
events, the agent's messages and tool calls as they happen."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from runner_core.egress import Endpoint
from runner_core.engines.base import CommandSpec, ProcessResult
from runner_core.engines.live import Translated, translate_line
from runner_core.events import EventLog
from runner_core.secret_values import longest, mask_file
from runner_core.workspace import open_run_file
from worker.execution.contexts import EntryContext
from worker.execution.network import egress_plan
from worker.execution.supervisor import run_command

TAIL_EVERY_SEC = 0.2
RAW_TEXT_CAP = 2000  # characters of a chunk carried in its raw event; the rest is in the log


class OutputTail:
    """`with OutputTail(events, logs, offsets, engine):` around a process run."""

    def __init__(
        self, events: EventLog, logs: Path, offsets: tuple[int, int], engine: str | None
    ) -> None:
        self.events, self.engine = events, engine
        self.files = {"stdout": logs / "stdout.txt", "stderr": logs / "stderr.txt"}
        self.read_to = {"stdout": offsets[0], "stderr": offsets[1]}
        self.partial = ""  # the stdout line still being printed
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="output-tail", daemon=True)

    def __enter__(self) -> OutputTail:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._read()  # whatever came after the last look
        if self.partial:
            self.events.emit_many(self._translate(self.partial + "\n"))

    def _follow(self) -> None:
        while not self._stop.wait(TAIL_EVERY_SEC):
            self._read()

    def _read(self) -> None:
        for stream, path in self.files.items():
            # secrets printed are masked in the file (same length) before they become events
            mask_file(path, max(0, self.read_to[stream] - longest()))
            fh = open_run_file(path.parent, path.name)  # never through a link the run planted
            if fh is None:
                continue
            try:
                with fh:
                    fh.seek(self.read_to[stream])
                    data = fh.read()
            except OSError:
                continue
            if not data:
                continue
            start = self.read_to[stream]
            self.read_to[stream] = start + len(data)
            text = data.decode("utf-8", errors="replace")
            ref = {"stream": stream, "byte_from": start, "byte_to": start + len(data)}
            raw = (f"raw.{stream}", {"raw_ref": ref, "text": text[:RAW_TEXT_CAP]})
            translated = self._translate(text) if stream == "stdout" else []
            self.events.emit_many([raw, *translated])

    def _translate(self, text: str) -> Translated:
        """The events the complete lines of `text` make (the rest waits for its newline)."""
        lines = (self.partial + text).split("\n")
        self.partial = lines.pop()  # not yet ended by a newline
        return [item for line in lines for item in translate_line(self.engine, line)]


def run_streamed(
    entry: EntryContext,
    spec: CommandSpec,
    engine: str | None,
    over_budget: Callable[[ProcessResult], bool] | None = None,
    providers: set[Endpoint] | None = None,
) -> ProcessResult:
    """Run a process of the run; with an event log, what it prints becomes events as it is
    printed (for `engine`'s CLI, its messages and tool calls too). `over_budget`: stops it once
    the run reached its budget (Watch.over_budget); `providers`: where the engine's network box
    lets its CLI connect (runner_core.egress.provider_endpoints)."""
    logs = entry.paths.logs
    stdout, stderr = logs / "stdout.txt", logs / "stderr.txt"
    watch = replace(
        entry.watch(engine is not None),
        over_budget=over_budget,
        egress=egress_plan(entry, engine, providers),
    )
    if entry.events is None:
        return run_command(spec, stdout, stderr, watch)
    offsets = tuple(p.stat().st_size if p.exists() else 0 for p in (stdout, stderr))
    with OutputTail(entry.events, logs, (offsets[0], offsets[1]), engine):
        return run_command(spec, stdout, stderr, watch)
