"""Logging of every process (API, worker, beat): the console plus one rotating file,
`LOG_FILE` (default `<data dir>/logs/skill_runner.log`), as text or as JSON lines
(`LOG_FORMAT=json`), with every known secret value masked (runner_core.secret_values). A line logged while a run is being handled carries its run_id and
request_id, from a context variable the task and the request set (`run_context`).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from logging.handlers import RotatingFileHandler
from pathlib import Path

from runner_core.secret_values import redact
from runner_core.settings import Settings

_RUN: ContextVar[tuple[str | None, str | None]] = ContextVar(
    "skill_runner_run", default=(None, None)
)
_CALLER: ContextVar[str | None] = ContextVar("skill_runner_caller", default=None)
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_configured = False


@contextmanager
def run_context(run_id: str | None, request_id: str | None) -> Iterator[None]:
    """Lines logged inside carry `run_id` and `request_id`."""
    token = _RUN.set((run_id, request_id))
    try:
        yield
    finally:
        _RUN.reset(token)


def bind(run_id: str | None = None, request_id: str | None = None) -> None:
    """Add ids to the current context (a task knows its request id only after the claim)."""
    current = _RUN.get()
    _RUN.set((run_id or current[0], request_id or current[1]))


def bind_caller(name: str | None) -> None:
    """The API token (by its name) the current request came with; None between requests."""
    _CALLER.set(name)


class RunContextFilter(logging.Filter):
    """Sets `record.run_id` / `record.request_id` (an `extra=` given to the call wins)."""

    def filter(self, record: logging.LogRecord) -> bool:
        run_id, request_id = _RUN.get()
        record.run_id = getattr(record, "run_id", None) or run_id
        record.request_id = getattr(record, "request_id", None) or request_id
        record.caller = getattr(record, "caller", None) or _CALLER.get()
        return True


class TextFormatter(logging.Formatter):
    """The plain line, then ` run_id=… request_id=… caller=…` for what is known of them."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        ids = [
            f"{key}={value}"
            for key in ("run_id", "request_id", "caller")
            if (value := getattr(record, key, None))
        ]
        return redact(f"{line} {' '.join(ids)}" if ids else line)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, message, pid, run_id, request_id, caller
    (the API token's name), exc."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
            "run_id": getattr(record, "run_id", None),
            "request_id": getattr(record, "request_id", None),
            "caller": getattr(record, "caller", None),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return redact(json.dumps(entry, ensure_ascii=False))


class SharedRotatingFileHandler(RotatingFileHandler):
    """A RotatingFileHandler several processes can share: each write holds an flock on
    `<file>.lock`, reopens the file when another process has rotated it, and rotates by size
    itself, so no line goes to a renamed file and no two processes rotate at once."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            with open(self.baseFilename + ".lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if self.stream is None or self._rotated_elsewhere(self.stream.fileno()):
                    if self.stream is not None:
                        self.stream.close()
                    self.stream = self._open()
                super().emit(record)
        except OSError:
            self.handleError(record)

    def _rotated_elsewhere(self, fd: int) -> bool:
        try:
            on_disk = os.stat(self.baseFilename)
        except FileNotFoundError:
            return True
        mine = os.fstat(fd)
        return (on_disk.st_dev, on_disk.st_ino) != (mine.st_dev, mine.st_ino)


def log_path(settings: Settings) -> Path:
    return Path(settings.log_file or settings.data_dir / "logs" / "skill_runner.log")


def configure_logging(settings: Settings) -> None:
    """Idempotent per process: LOG_LEVEL, LOG_FILE, LOG_MAX_BYTES, LOG_BACKUP_COUNT,
    LOG_FORMAT (text or json) on the root logger."""
    global _configured
    if _configured:
        return
    _configured = True
    root = logging.getLogger()
    root.setLevel(settings.log_level)
    formatter: logging.Formatter = (
        JsonFormatter() if settings.log_format == "json" else TextFormatter(TEXT_FORMAT)
    )
    handlers: list[logging.Handler] = []
    if not any(isinstance(h, logging.StreamHandler) for h in root.handlers):
        handlers.append(logging.StreamHandler())
    path = log_path(settings)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(
            SharedRotatingFileHandler(
                path, maxBytes=settings.log_max_bytes, backupCount=settings.log_backup_count
            )
        )
    except OSError as exc:  # a read-only data dir must not stop the service
        logging.getLogger(__name__).warning("file logging disabled: %s", exc)
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.addFilter(RunContextFilter())
        root.addHandler(handler)
