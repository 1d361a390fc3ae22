"""A run directory as a person browses it: the file tree and one file's preview. Hidden entries
(a dot in any part: the engine CLIs' homes with their keys and sessions, the skill snapshot) and
the engine config files written beside them are never listed nor read; nor is anything outside
the run directory, by `..` or by a symlink."""

from __future__ import annotations

import base64
import json
import mimetypes
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner_core.secret_values import mask_bytes

TEXT_CAP = 256 * 1024  # bytes of a text file a preview holds
IMAGE_CAP = 2 * 1024 * 1024  # an image larger than this is not inlined
TREE_CAP = 2000  # entries a tree lists at most
SECRET_NAMES = frozenset(
    {"opencode.json", "kilo.json", "auth.json", "credentials.json", "oauth_creds.json"}
)
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


class FileRefused(ValueError):
    """A path the preview does not read; `reason` says which rule refused it."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class TreeEntry:
    path: str  # relative, "/"-separated
    type: str  # "file" or "dir"
    size: int | None  # bytes, files only


def hidden_part(parts: tuple[str, ...]) -> bool:
    """Whether a run-relative path (its parts) is hidden: a dotted part or an engine config."""
    return any(part.startswith(".") for part in parts) or (
        bool(parts) and parts[-1] in SECRET_NAMES
    )


def tree(run_dir: Path) -> tuple[list[TreeEntry], bool]:
    """The visible entries under `run_dir` in path order, and whether the
    listing was cut at TREE_CAP. Symlinks are listed only when they stay inside the run."""
    entries: list[TreeEntry] = []
    if not run_dir.is_dir():
        return entries, False
    root = run_dir.resolve()
    for current, dirs, files in os.walk(run_dir):
        here = Path(current)
        rel_here = here.relative_to(run_dir).parts
        dirs[:] = sorted(d for d in dirs if not hidden_part((*rel_here, d)))
        for name in [*dirs, *sorted(files)]:
            path = here / name
            parts = (*rel_here, name)
            if hidden_part(parts) or not _inside(root, path):
                continue
            if hidden_target(root, root.joinpath(*parts), path.resolve()):
                continue
            is_dir = name in dirs
            size = None if is_dir else path.stat().st_size
            entries.append(TreeEntry("/".join(parts), "dir" if is_dir else "file", size))
            if len(entries) >= TREE_CAP:
                return _in_order(entries), True
    return _in_order(entries), False


def hidden_target(root: Path, lexical: Path, real: Path) -> bool:
    """Whether `lexical` (a path under the resolved `root`) reaches, through a symlink, a hidden
    entry or an engine config file (`real`, its resolved path): a link the run planted among
    its outputs pointing at an engine home's key stays inside the run, and is refused all the same."""
    if real == lexical:
        return False
    try:
        parts = real.relative_to(root).parts
    except ValueError:
        return True
    return hidden_part(parts)


def _in_order(entries: list[TreeEntry]) -> list[TreeEntry]:
    """By path, part by part: each directory's entries right after it."""
    return sorted(entries, key=lambda e: e.path.split("/"))


def _inside(root: Path, path: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except OSError:  # a symlink loop
        return False


def resolve(run_dir: Path, rel: str) -> Path:
    """The file `rel` names inside `run_dir`; FileRefused for an absolute path, `..`, a NUL
    byte (no file name holds one), a hidden or secret part, or a symlink leading out of the run."""
    parts = tuple(p for p in rel.replace("\\", "/").split("/") if p not in ("", "."))
    if not rel or rel.startswith("/") or ".." in parts or "\0" in rel:
        raise FileRefused("traversal", f"'{rel}' is not a path inside the run")
    if hidden_part(parts):
        raise FileRefused("secret", f"'{rel}' is hidden: engine homes and configs are not shown")
    path = run_dir.joinpath(*parts)
    root = run_dir.resolve()
    if not _inside(root, path):
        raise FileRefused("symlink", f"'{rel}' leads outside the run")
    if hidden_target(root, root.joinpath(*parts), path.resolve()):
        raise FileRefused("secret", f"'{rel}' is a link to a hidden file or an engine config")
    return path


def preview(path: Path, rel: str) -> dict[str, Any]:
    """`{path, size, mime, kind, truncated, text | data_url}`: JSON pretty-printed, text up to
    TEXT_CAP bytes, small images inlined as data URLs, anything else described only."""
    size = path.stat().st_size
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    body: dict[str, Any] = {"path": rel, "size": size, "mime": mime, "truncated": False}
    if mime in IMAGE_TYPES:
        if size > IMAGE_CAP:
            return {**body, "kind": "binary", "truncated": True}
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return {**body, "kind": "image", "data_url": f"data:{mime};base64,{data}"}
    with path.open("rb") as fh:
        raw = fh.read(TEXT_CAP + 1)
    truncated = len(raw) > TEXT_CAP
    raw = raw[:TEXT_CAP]
    if b"\0" in raw[:8192]:
        return {**body, "kind": "binary"}
    text = mask_bytes(raw).decode("utf-8", errors="replace")  # the secrets this process knows
    if path.suffix == ".json" and not truncated:
        try:
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
            return {**body, "kind": "json", "text": text}
        except ValueError:
            pass  # not valid JSON: shown as it is
    return {**body, "kind": "text", "text": text, "truncated": truncated}
