"""Output fields marked `"x-type": "artifact-manifest"` (Skill-Runner's protocol for a dynamic
set of files): the field's value is the path of a JSON file holding a flat object
`{name: path}`, each path a file the run wrote.

After the run, each such manifest is read (a regular file inside the run, reached through no
link), its paths are written back run-relative (an agent often writes absolute ones), the field
takes the manifest's run-relative path, and the manifest and every file it lists become
artifacts. A listed file outside `result/` and `artifacts/` (which the bundle holds) is copied
to `artifacts/<its path>` so that downloads and the bundle carry it. An entry that is not a
file of the run is left out with an `ARTIFACT_MANIFEST_INVALID` warning.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner_core.error_codes import ErrorCode
from runner_core.in_run import run_folder, write_in_run
from runner_core.own_copy import own_copy
from runner_core.run_files import hidden_part
from runner_core.schema_refs import resolved_properties
from runner_core.workspace import open_run_file

MANIFEST_TYPE = "artifact-manifest"
BUNDLED_DIRS = ("result", "artifacts")  # what the bundle holds: a listed file elsewhere is copied
MAX_MANIFEST_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ManifestField:
    key: str
    role: str
    required: bool


@dataclass
class ListedFiles:
    """What the run's manifests named: run-relative path -> role, in order."""

    roles: dict[str, str] = field(default_factory=dict)
    missing_required: list[str] = field(default_factory=list)  # fields whose manifest is unusable
    warnings: list[dict[str, str]] = field(default_factory=list)


def manifest_fields(output_schema: dict[str, Any]) -> list[ManifestField]:
    """The output schema's top-level properties marked `"x-type": "artifact-manifest"`."""
    required = set(output_schema.get("required") or [])
    return [
        ManifestField(key, prop.get("x-role") or MANIFEST_TYPE, key in required)
        for key, prop in resolved_properties(output_schema).items()
        if isinstance(prop, dict) and prop.get("x-type") == MANIFEST_TYPE
    ]


def resolve_manifests(run_dir: Path, data: Any, fields: list[ManifestField]) -> ListedFiles:
    """Read and normalise each manifest `data` names (rewriting its field in `data` to the
    manifest's run-relative path); the files they list, for the artifact index."""
    listed = ListedFiles()
    if not fields or not isinstance(data, dict):
        return listed
    for spec in fields:
        value = data.get(spec.key)
        if value is None and not spec.required:
            continue
        rel = run_relative(run_dir, value)
        entries = _read_manifest(run_dir, rel) if rel is not None else None
        if rel is None or entries is None:
            _warn(
                listed, rel or str(value), f"{spec.key}: no manifest file of the run at {value!r}"
            )
            if spec.required:
                listed.missing_required.append(spec.key)
            continue
        data[spec.key] = rel
        normalised = {}
        for name, path in entries.items():
            kept = _listed_file(run_dir, rel, name, path, listed)
            if kept is not None:
                normalised[name] = kept
                listed.roles.setdefault(kept, name)
        if normalised != entries:
            write_in_run(run_dir, rel, (json.dumps(normalised, indent=2) + "\n").encode())
        listed.roles.setdefault(rel, spec.role)
    return listed


def run_relative(run_dir: Path, value: Any) -> str | None:
    """`value` (a path an agent wrote: run-relative or absolute inside the run) as a clean
    run-relative path, or None when it is no path of the run (outside it, `..`, hidden)."""
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        return None
    path = value.strip()
    if os.path.isabs(path):
        try:
            path = os.path.relpath(os.path.normpath(path), os.path.normpath(run_dir))
        except ValueError:
            return None
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts or hidden_part(tuple(parts)):
        return None
    return "/".join(parts)


def _read_manifest(run_dir: Path, rel: str) -> dict[str, Any] | None:
    fh = open_run_file(run_dir, rel)
    if fh is None:
        return None
    with fh:
        raw = fh.read(MAX_MANIFEST_BYTES + 1)
    try:
        entries = json.loads(raw) if len(raw) <= MAX_MANIFEST_BYTES else None
    except ValueError:
        return None
    return entries if isinstance(entries, dict) else None


def _listed_file(
    run_dir: Path, manifest: str, name: str, path: Any, listed: ListedFiles
) -> str | None:
    """The run-relative path of one manifest entry, copied into artifacts/ when the bundle
    would not hold it; None (with a warning) when it is no regular file of the run."""
    rel = run_relative(run_dir, path)
    fh = open_run_file(run_dir, rel) if rel is not None else None
    if rel is None or fh is None:
        _warn(listed, manifest, f"{manifest}: entry {name!r} is no file of the run: {path!r}")
        return None
    fh.close()
    if rel.split("/", 1)[0] in BUNDLED_DIRS:
        return rel
    target = f"artifacts/{rel}"
    folder, _, name = target.rpartition("/")
    dfd = run_folder(run_dir, folder)  # through no link the run left on the way
    try:
        own_copy(run_dir / rel, name, dir_fd=dfd)
    finally:
        os.close(dfd)
    return target


def _warn(listed: ListedFiles, path: str, message: str) -> None:
    listed.warnings.append(
        {"code": ErrorCode.ARTIFACT_MANIFEST_INVALID, "path": path, "message": message}
    )
