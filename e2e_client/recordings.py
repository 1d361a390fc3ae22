"""Recordings of the client's key actions (create, upload, reply, result_read): one JSON file per
run under the recordings directory, written whole (temp file + rename) after each step."""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

FORMAT = "skill-runner-e2e-recording/1"
ACTIONS = ("create", "upload", "reply", "result_read")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,150}\.json$")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def file_name(request_id: str, started: datetime) -> str:
    """`20260101T120000Z-<request id>.json`; anything but letters, digits, `_` and `-` in the
    id becomes `_`, so a name never leaves the directory."""
    safe_id = _UNSAFE_CHARS.sub("_", request_id)[:100] or "run"
    return f"{started.strftime('%Y%m%dT%H%M%SZ')}-{safe_id}.json"


def is_safe_name(name: str) -> bool:
    return bool(_SAFE_NAME.match(name)) and ".." not in name


class Recordings:
    """The recordings directory: one file per request id, appended step by step."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)
        self._lock = threading.Lock()
        self._names: dict[str, str] = {}  # request id -> file name

    def path(self, name: str) -> Path:
        if not is_safe_name(name):
            raise KeyError(name)
        return self.dir / name

    def _find(self, request_id: str) -> str | None:
        if request_id in self._names:
            return self._names[request_id]
        for path in self.dir.glob(f"*-{_UNSAFE_CHARS.sub('_', request_id)}.json"):
            self._names[request_id] = path.name
            return path.name
        return None

    def record(
        self,
        request_id: str,
        action: str,
        request: dict[str, Any],
        response: Any,
        **head: Any,
    ) -> str:
        """Append one step to the run's recording (made on its first step, with `head` fields
        such as skill_id and backend); returns the file's name."""
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}")
        with self._lock:
            name = self._find(request_id)
            if name is None:
                name = file_name(request_id, datetime.now(UTC))
                doc: dict[str, Any] = {
                    "format": FORMAT,
                    "request_id": request_id,
                    "started_at": now(),
                    **head,
                    "steps": [],
                }
            else:
                doc = self.load(name)
            step = {"index": len(doc["steps"]) + 1, "action": action, "at": now()}
            doc["steps"].append({**step, "request": request, "response": response})
            self._write(name, doc)
            self._names[request_id] = name
            return name

    def name_of(self, request_id: str) -> str | None:
        with self._lock:
            return self._find(request_id)

    def has(self, request_id: str, action: str) -> bool:
        with self._lock:
            name = self._find(request_id)
        return name is not None and any(s["action"] == action for s in self.load(name)["steps"])

    def load(self, name: str) -> dict[str, Any]:
        return json.loads(self.path(name).read_text(encoding="utf-8"))

    def list(self) -> list[dict[str, Any]]:
        """Every recording's name, request id, skill and step count, newest first."""
        found = []
        for path in sorted(self.dir.glob("*.json"), reverse=True):
            if not is_safe_name(path.name):
                continue
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            found.append(
                {
                    "name": path.name,
                    "request_id": doc.get("request_id"),
                    "skill_id": doc.get("skill_id"),
                    "started_at": doc.get("started_at"),
                    "steps": len(doc.get("steps", [])),
                    "actions": [s.get("action") for s in doc.get("steps", [])],
                }
            )
        return found

    def _write(self, name: str, doc: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".part-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(doc, out, ensure_ascii=False, indent=2, default=str)
            os.replace(tmp, self.dir / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
