"""Chained runs in one workspace (`runtime_options.workspace = {mode: "reuse", request_id,
file_bindings}`): the request's shape, the paths a binding may name, the files a run takes over
from the run whose workspace it reuses, and the per-skill namespaces of result documents
(`result/<skill>.<n>/result.json`).

Each run keeps its own run directory (its logs, events and `result/result.json`); reusing a
workspace copies the earlier run's workspace files into the new run's directory before it
starts (runner_core.own_copy: a reflink where the file system can), so nothing the new run
does to them (a write in place included) reaches the earlier run, and a later clean-up of the
earlier run, or a second run reusing the same workspace, changes nothing for this one."""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from runner_core.in_run import run_folder
from runner_core.own_copy import own_copy
from runner_core.run_files import hidden_target
from runner_core.workspace import write_json_in

# A run's own records: never taken over by a run that reuses its workspace.
RECORDS = frozenset(
    {
        "logs",
        "raw",
        "bundle",
        "input.json",
        "resolved_input.json",
        "input_manifest.json",
        "manifest.json",
    }
)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class ReuseError(ValueError):
    """A `workspace` option the service refuses: `status` 404 (no such source), 409 (the
    source did not succeed, or its directory is gone) or 422 (a malformed option or binding)."""

    def __init__(self, status: int, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = details or {}


@dataclass(frozen=True, slots=True)
class FileBinding:
    """An earlier run's file, copied into this run's `uploads/<target_path>`."""

    input_key: str
    source_request_id: str
    source_path: str
    target_path: str


@dataclass(frozen=True, slots=True)
class Reuse:
    """A request to work in the workspace of the run of request `request_id`."""

    request_id: str
    bindings: tuple[FileBinding, ...]


def parse_reuse(options: Mapping[str, Any]) -> Reuse | None:
    """The `workspace` option of `runtime_options`: None for none (or mode "new");
    ReuseError 422 for a malformed one."""
    workspace = options.get("workspace")
    if workspace is None:
        return None
    if not isinstance(workspace, Mapping):
        raise ReuseError(422, "runtime_options.workspace must be an object")
    mode = str(workspace.get("mode") or "new").strip().lower()
    bindings = _bindings(workspace.get("file_bindings"))
    if mode == "new":
        if bindings:
            raise ReuseError(422, "runtime_options.workspace.file_bindings needs mode 'reuse'")
        return None
    if mode != "reuse":
        raise ReuseError(
            422, f"runtime_options.workspace.mode '{mode}' is not 'new' or 'reuse'", {"mode": mode}
        )
    request_id = workspace.get("request_id")
    if not isinstance(request_id, str) or not request_id.strip():
        raise ReuseError(422, "runtime_options.workspace.request_id is required for mode 'reuse'")
    return Reuse(request_id.strip(), bindings)


def _bindings(raw: Any) -> tuple[FileBinding, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ReuseError(422, "runtime_options.workspace.file_bindings must be an array")
    found: list[FileBinding] = []
    for index, item in enumerate(raw):
        where = f"runtime_options.workspace.file_bindings[{index}]"
        if not isinstance(item, Mapping):
            raise ReuseError(422, f"{where} must be an object", {"index": index})
        values = {}
        for name in ("input_key", "source_request_id", "source_path", "target_path"):
            value = item.get(name)
            if not isinstance(value, str) or not value.strip():
                raise ReuseError(
                    422, f"{where}.{name} must be a non-empty string", {"index": index}
                )
            values[name] = value.strip()
        binding = FileBinding(**values)
        if any(b.input_key == binding.input_key for b in found):
            raise ReuseError(422, f"{where}: input_key '{binding.input_key}' is bound twice")
        if any(b.target_path == binding.target_path for b in found):
            raise ReuseError(422, f"{where}: target_path '{binding.target_path}' is bound twice")
        found.append(binding)
    return tuple(found)


def clean_relative(raw: str, label: str) -> str:
    """`raw` as a relative POSIX path that stays inside its root and names no hidden entry
    (engine homes, the skill snapshot); ReuseError 422 otherwise."""
    text = raw.replace("\\", "/")
    path = PurePosixPath(text)
    parts = text.split("/")
    if path.is_absolute() or any(p in ("", ".", "..") for p in parts):
        raise ReuseError(422, f"{label} '{raw}' must be a relative path inside the run", {})
    if any(p.startswith(".") for p in parts):
        raise ReuseError(422, f"{label} '{raw}' names a hidden entry", {})
    return path.as_posix()


def source_file(run_dir: Path, source_path: str) -> Path:
    """The file `source_path` names in an earlier run's directory; ReuseError 422 when it
    leaves the run (also through a symlink), is one of the run's records, or is no file."""
    rel = clean_relative(source_path, "source_path")
    if rel.split("/")[0] in RECORDS:
        raise ReuseError(422, f"source_path '{source_path}' is one of the run's own records")
    root = run_dir.resolve()
    target = (root / rel).resolve()
    if not target.is_relative_to(root):
        raise ReuseError(422, f"source_path '{source_path}' leads out of the run")
    if hidden_target(root, root / rel, target):  # a link the run left to an engine home's key
        raise ReuseError(422, f"source_path '{source_path}' leads to a hidden entry")
    if not target.is_file():
        raise ReuseError(422, f"source_path '{source_path}': no such file in the source run")
    return target


def link_file(source: Path, target: Path) -> None:
    """`target` as a hard link of `source` (a copy across file systems); replaces a file.
    For a bound file's pin under its request only: no process writes there, and the worker
    gives the run its own copy of it (copy_uploads)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() or target.is_symlink():
        target.unlink()
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def safe_segment(skill_id: str) -> str:
    """The skill id as a folder name of `result/` (clients derive the same)."""
    return _UNSAFE.sub("-", skill_id).strip("-") or "skill"


def namespaces(result_dir: Path | str, skill_id: str) -> list[int]:
    """The numbers n of the `result/<skill>.<n>/` folders present, ascending."""
    prefix = safe_segment(skill_id) + "."
    found = []
    try:
        entries = list(os.scandir(result_dir))
    except OSError:
        return []
    for entry in entries:
        suffix = entry.name[len(prefix) :] if entry.name.startswith(prefix) else ""
        if suffix.isdigit() and entry.is_dir(follow_symlinks=False):  # a run's link: none
            found.append(int(suffix))
    return sorted(found)


def reserve_namespace(result_dir: Path, skill_id: str) -> Path:
    """Make this run's `result/<skill>.<n>/` (n one above the highest present): the folder
    its result document is copied to. Made once, when the run is prepared."""
    taken = namespaces(result_dir, skill_id)
    folder = result_dir / f"{safe_segment(skill_id)}.{(taken[-1] if taken else 0) + 1}"
    os.close(run_folder(result_dir.parent, f"result/{folder.name}"))
    return folder


def own_namespace(result_dir: Path, skill_id: str) -> Path | None:
    """The run's own namespace folder: the highest of its skill (taken-over ones are lower)."""
    taken = namespaces(result_dir, skill_id)
    return result_dir / f"{safe_segment(skill_id)}.{taken[-1]}" if taken else None


def result_json_path(run_dir: Path, skill_id: str) -> Path:
    """Where a client finds the run's result document: its namespace copy when the run has
    one, else the spec's `result/result.json`."""
    return Path(result_json_file(str(run_dir), skill_id))


def result_json_file(run_dir: str, skill_id: str) -> str:
    """`result_json_path` on plain strings (a job list computes it for every row it returns)."""
    result_dir = os.path.join(run_dir, "result")
    taken = namespaces(result_dir, skill_id)
    if taken:
        folder = os.path.join(result_dir, f"{safe_segment(skill_id)}.{taken[-1]}")
        document = os.path.join(folder, "result.json")
        if os.path.isfile(document):
            return document
    return os.path.join(result_dir, "result.json")


def copy_to_namespace(run_dir: Path, skill_id: str, document: dict[str, Any]) -> None:
    """Write the result document into the run's namespace too (when it has one)."""
    folder = own_namespace(run_dir / "result", skill_id)
    if folder is not None:  # through no link the run left on the way
        write_json_in(run_dir, f"result/{folder.name}/result.json", document)


def take_over(source_dir: Path, dest_dir: Path) -> int:
    """Copy the workspace files of an earlier run into `dest_dir` (own_copy: never a hard
    link, which a write in place would carry back into the earlier run's artifact): everything
    but its records, hidden entries (engine homes, the skill snapshot) and its
    `result/result.json`; files `dest_dir` already holds (this run's inputs) stay. Returns the
    files copied."""
    count = 0
    for rel in _workspace_files(source_dir):
        folder, _, name = rel.rpartition("/")
        # through no link a run left on the way (a retry's directory had a process in it)
        dfd = run_folder(dest_dir, folder)
        try:
            if _lexists(name, dfd):
                continue
            own_copy(source_dir / rel, name, dir_fd=dfd)
        finally:
            os.close(dfd)
        count += 1
    return count


def _lexists(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False


def _workspace_files(root: Path) -> Iterator[str]:
    for top in sorted(os.listdir(root)):
        if top.startswith(".") or top in RECORDS:
            continue
        path = root / top
        if path.is_symlink():
            continue
        if _regular(path):
            yield top
            continue
        if not path.is_dir():
            continue
        for folder, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel_folder = Path(folder).relative_to(root).as_posix()
            for name in files:
                rel = f"{rel_folder}/{name}"
                if rel == "result/result.json" or not _regular(os.path.join(folder, name)):
                    continue  # a symlink, a FIFO or a socket is not taken over
                yield rel


def _regular(path: Path | str) -> bool:
    """Is `path` a regular file itself (not through a symlink)?"""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
