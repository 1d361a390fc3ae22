"""Prometheus metrics that several processes write (run ends, event subscribers), in
prometheus-client's multiprocess mode: each process writes its values to files under
a folder of their own (`default_dir`, or SKILL_RUNNER_METRICS_DIR), and GET /metrics adds them
up. What SQL or the broker already knows (runs
by status, queue depth, busy slots) is read at scrape time instead (api.metrics).

`use_metrics_dir` runs before any metric is made in a process: the API's app factory, the
worker's and beat's start (not at import of the Celery app, which Flower imports too and whose
own metrics stay its own).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

ENV = "PROMETHEUS_MULTIPROC_DIR"
DURATION_BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
_PID_FILE = re.compile(r"_(\d+)\.db$")
_ARCHIVED = ("counter", "histogram", "summary")  # the kinds whose values only ever grow
_ARCHIVE_LOCK = ".archive.lock"


SHARED_MEMORY = Path("/dev/shm")
_OWNER_FILE = "data-dir"  # in each folder under SHARED_MEMORY: the data dir it counts for


def default_dir(data_dir: Path, shared_memory: Path = SHARED_MEMORY) -> Path:
    """Where the processes of the service on `data_dir` write their values when no folder is
    set: in shared memory, off the data disk (the value files are memory-mapped sparse files:
    a new value on a full disk is a SIGBUS that kills the process); `<data_dir>/metrics` where
    there is no usable shared memory. The folder is named after the data dir, so each service
    on a host has its own and every process of one service finds the same."""
    root = shared_memory / _root_name()
    try:
        root.mkdir(mode=0o700, exist_ok=True)
        owned = root.stat()
    except OSError:
        return Path(data_dir) / "metrics"
    if owned.st_uid != os.getuid() or owned.st_mode & 0o077 or root.is_symlink():
        return Path(data_dir) / "metrics"  # someone else's folder: not trusted
    key = hashlib.sha256(str(Path(data_dir).resolve()).encode()).hexdigest()[:16]
    return root / f"metrics-{key}"


def use_metrics_dir(path: Path, data_dir: Path) -> Path:
    """Point this process (and its children) at `path` (the settings' `metrics_dir`), and
    remove the files of processes that are gone, their counts and histograms first added to
    the folder's archive (`counter_archive.db`, `histogram_archive.db`): a counter never goes
    down while the folder lasts. (Dropping them lowered a total by what the gone processes had
    counted, a decrease Prometheus reads as a reset, so `rate()` saw the counts still alive as
    new.) Folders in shared memory of services whose data dir is gone are removed."""
    path = Path(path)
    os.environ[ENV] = str(path)
    values = sys.modules.get("prometheus_client.values")
    if values is not None:  # imported already (the celery command loads Flower's plugin)
        # what it picks at import with ENV set
        setattr(values, "ValueClass", values.get_value_class())  # noqa: B010
    try:
        path.mkdir(parents=True, exist_ok=True)
        with open(path / _ARCHIVE_LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one process archives a gone process's file
            for entry in path.iterdir():
                found = _PID_FILE.search(entry.name)
                if found and not _alive(int(found.group(1))):
                    _archive(entry)
                    entry.unlink(missing_ok=True)
        if path.parent.name == _root_name():  # default_dir's: shared by several services
            (path / _OWNER_FILE).write_text(str(Path(data_dir).resolve()))
            _drop_orphans(path.parent)
    except OSError:  # a read-only data dir: metrics of this process stay unrecorded
        pass
    return path


def _archive(dead: Path) -> None:
    """Add the counts of a gone process's counter or histogram file to the folder's archive of
    its kind (gauges are the live processes' alone: nothing to keep)."""
    kind = dead.name.split("_", 1)[0]
    if kind not in _ARCHIVED:
        return
    from prometheus_client.mmap_dict import MmapedDict

    try:
        values = list(MmapedDict.read_all_values_from_file(str(dead)))
    except Exception:  # not a value file (cut short): nothing to keep
        return
    if not values:
        return
    archive = MmapedDict(str(dead.with_name(f"{kind}_archive.db")))
    try:
        for key, value, timestamp, _pos in values:
            kept, _ = archive.read_value(key)
            archive.write_value(key, kept + value, timestamp)
    finally:
        archive.close()


def _root_name() -> str:
    return f"skill-runner-{os.getuid()}"


def _drop_orphans(root: Path) -> None:
    """Remove the folders under `root` whose service's data dir no longer exists."""
    for folder in root.glob("metrics-*"):
        try:
            owner = Path((folder / _OWNER_FILE).read_text())
        except OSError:
            continue  # being made, or not ours to judge
        if not owner.exists():
            shutil.rmtree(folder, ignore_errors=True)


def forget_process(pid: int) -> None:
    """A process ended (a gunicorn worker): its live gauges no longer count."""
    if os.environ.get(ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@cache
def _instruments() -> dict[str, Any]:
    from prometheus_client import Counter, Gauge, Histogram

    # registry=None: values go to the multiprocess files; GET /metrics collects them from there
    return {
        "duration": Histogram(
            "skill_runner_run_duration_seconds",
            "Run time from start to end, by engine, skill and final status",
            ["engine", "skill", "status"],
            buckets=DURATION_BUCKETS,
            registry=None,
        ),
        "failures": Counter(
            "skill_runner_run_failures",
            "Runs that failed, by engine and error code",
            ["engine", "code"],
            registry=None,
        ),
        "tokens": Counter(
            "skill_runner_tokens",
            "Tokens the engines reported, by engine, model, API token name and kind (input "
            "counts cached_input, output counts reasoning)",
            ["engine", "model", "token_name", "kind"],
            registry=None,
        ),
        "cost": Counter(
            "skill_runner_cost_usd",
            "Cost in USD of the runs' turns, by engine, model and API token name (the engine's "
            "own figure, or the operator's price table)",
            ["engine", "model", "token_name"],
            registry=None,
        ),
        "egress_refused": Counter(
            "skill_runner_egress_refused",
            "Connections a run's network box refused, by engine and host",
            ["engine", "host"],
            registry=None,
        ),
        "subscribers": Gauge(
            "skill_runner_event_subscribers",
            "Open event streams (GET .../events)",
            registry=None,
            multiprocess_mode="livesum",
        ),
    }


def record_run_end(
    engine: str | None,
    skill_id: str,
    status: str,
    error_code: str | None,
    started_at: datetime | None,
    ended_at: datetime,
) -> None:
    """Count a run's end: its duration (when it started) and, for a failure, its code."""
    if os.environ.get(ENV) is None:
        return
    engine_name = engine or "script"
    instruments = _instruments()
    if started_at is not None:
        if started_at.tzinfo is None:  # SQLite hands back naive UTC
            started_at = started_at.replace(tzinfo=UTC)
        seconds = max(0.0, (ended_at - started_at).total_seconds())
        skill = bounded_label("skill", skill_id)
        instruments["duration"].labels(engine_name, skill, status).observe(seconds)
    if status == "failed":
        instruments["failures"].labels(engine_name, error_code or "UNKNOWN").inc()


TOKEN_KINDS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")


def record_tokens(
    engine: str | None, model: str | None, token_name: str | None, turn: dict[str, Any] | None
) -> None:
    """Count what one turn spent (runner_core.tokens.turn_tokens)."""
    if os.environ.get(ENV) is None or not turn:
        return
    instruments = _instruments()
    labels = (engine or "script", model or "default", token_name or "")
    for kind in TOKEN_KINDS:
        if turn.get(kind, 0) > 0:
            instruments["tokens"].labels(*labels, kind.removesuffix("_tokens")).inc(turn[kind])
    if turn.get("cost_usd", 0) > 0:
        instruments["cost"].labels(*labels).inc(turn["cost_usd"])


def record_egress_refused(engine: str | None, host: str) -> None:
    """Count one connection a run's network box refused."""
    if os.environ.get(ENV) is None:
        return
    _instruments()["egress_refused"].labels(engine or "script", bounded_label("host", host)).inc()


# Label values a run chooses (a one-off package's skill id, a host its code tries) each make a
# series, kept in the metrics files for the process's life: past LABEL_VALUES_MAX values of a
# label, a process counts new ones under OTHER.
LABEL_VALUES_MAX = 200
OTHER = "(other)"
_label_values: dict[str, set[str]] = {}


def bounded_label(label: str, value: str) -> str:
    """`value`, or OTHER once this process has seen LABEL_VALUES_MAX other values of `label`."""
    seen = _label_values.setdefault(label, set())
    if value in seen:
        return value
    if len(seen) >= LABEL_VALUES_MAX:
        return OTHER
    seen.add(value)
    return value


def counted_subscriber(frames: Iterator[T]) -> Iterator[T]:
    """`frames` of one event stream, counted in the subscribers gauge while it is open."""
    gauge = _instruments()["subscribers"] if os.environ.get(ENV) else None
    if gauge is not None:
        gauge.inc()
    try:
        yield from frames
    finally:
        if gauge is not None:
            gauge.dec()
