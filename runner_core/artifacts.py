"""Artifact contracts, the run's `manifest.json` index, and safe run-relative path lookup.

A skill declares its artifacts by marking output-schema properties with `"x-type": "artifact"`
(or in runner.json). After a run every file under `artifacts/` is hashed and listed; files the
contract names get their role, the rest are plain "output". Files the run wrote anywhere else
(a skill should write only `artifacts/` and `result/`, seed 003 §4) are listed beside them.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any
from urllib.parse import quote

from runner_core.error_codes import ErrorCode
from runner_core.in_run import write_in_run
from runner_core.run_files import hidden_target
from runner_core.schema_refs import resolved_properties
from runner_core.uploads import nfc

ARTIFACTS_DIR = "artifacts"
MANIFEST_NAME = "manifest.json"
_CHUNK = 64 * 1024
# mimetypes depends on the host's /etc/mime.types; pin the types skills actually produce.
_MIME_FALLBACKS = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".txt": "text/plain",
    ".csv": "text/csv",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".html": "text/html",
    ".pdf": "application/pdf",
    ".png": "image/png",
    ".zip": "application/zip",
}
_DRIVE_LETTER = re.compile(r"^[A-Za-z]:")
# A run's top-level entries that are not the skill's writes: its outputs, the runner's records and
# the run's inputs. Hidden entries (the skill snapshot, the CLI's HOME, the git marker) are the
# runner's and the engine's.
RUNNER_ENTRIES = frozenset(
    {
        "artifacts",
        "result",
        "logs",
        "raw",
        "uploads",
        "bundle",
        "input.json",
        "resolved_input.json",
        "input_manifest.json",
        "events.jsonl",
        "manifest.json",
    }
)
OTHER_WRITES_LIMIT = 200  # files listed; `other_writes_truncated` says when there were more


@dataclass(frozen=True)
class ArtifactSpec:
    """One entry of a skill's artifact contract."""

    role: str
    pattern: str
    mime: str | None = None
    required: bool = False

    def matches(self, rel_path: str) -> bool:
        """True when the run-relative path, the artifacts-relative path or the filename fits,
        compared in Unicode NFC (a file named on macOS is NFD, a schema's x-filename NFC)."""
        rel_path, pattern = nfc(rel_path), nfc(self.pattern)
        inner = rel_path.split("/", 1)[1] if "/" in rel_path else rel_path
        name = rel_path.rsplit("/", 1)[-1]
        return any(fnmatchcase(candidate, pattern) for candidate in (rel_path, inner, name))


@dataclass(frozen=True)
class ArtifactEntry:
    """One indexed file under `artifacts/`."""

    role: str
    path: str
    filename: str
    mime: str
    size: int
    sha256: str
    required: bool


@dataclass
class ArtifactManifest:
    """The index written to `run_dir/manifest.json`."""

    artifacts: list[ArtifactEntry] = field(default_factory=list)
    missing_required: list[ArtifactSpec] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    other_writes: list[dict[str, Any]] = field(default_factory=list)  # {path, size}
    other_writes_truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; `missing_required` holds the unmet contract entries."""
        return {
            # `path_rel`: the spec's name for `path`, which Skill-Runner's clients read
            "artifacts": [{**asdict(a), "path_rel": a.path} for a in self.artifacts],
            "missing_required": [asdict(s) for s in self.missing_required],
            "warnings": list(self.warnings),
            "other_writes": list(self.other_writes),
            "other_writes_truncated": self.other_writes_truncated,
        }


FILE_TYPES = ("artifact", "file")  # `file`: Skill-Runner's name for an artifact field


def is_file_field(prop: Any) -> bool:
    """Whether an output property is an artifact field (its value a file's path)."""
    return isinstance(prop, dict) and prop.get("x-type") in FILE_TYPES


def artifact_fields(output_schema: dict[str, Any]) -> list[ArtifactSpec]:
    """Register every output-schema property marked `"x-type": "artifact"` (or `"file"`), in
    schema order (a property written as a local `$ref` has its keywords in the definition)."""
    required = set(output_schema.get("required") or [])
    specs = []
    for key, prop in resolved_properties(output_schema).items():
        if is_file_field(prop):
            specs.append(
                ArtifactSpec(
                    role=prop.get("x-role") or "output",
                    pattern=prop.get("x-filename") or key,
                    mime=prop.get("x-mime"),
                    required=key in required,
                )
            )
    return specs


def guess_mime(filename: str) -> str:
    """MIME type from the file suffix, with fixed answers for common artifact types."""
    suffix = os.path.splitext(filename)[1].lower()
    if suffix in _MIME_FALLBACKS:
        return _MIME_FALLBACKS[suffix]
    return mimetypes.guess_type(filename)[0] or "application/octet-stream"


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def artifact_url(kind: str, request_id: str, path: str) -> str:
    """The download URL of a request's file `path`, relative to the service: under
    /v1/temp-skill-runs for a one-off run's request (`kind` temp), else /v1/jobs. Made when an
    answer is served (a cache hit's request serves its run's files under its own id), so the
    run's manifest.json holds paths only."""
    prefix = "temp-skill-runs" if kind == "temp" else "jobs"
    return f"/v1/{prefix}/{quote(request_id)}/artifacts/{quote(path)}"


def index_artifacts(
    run_dir: Path, contract: list[ArtifactSpec], listed: dict[str, str] | None = None
) -> ArtifactManifest:
    """Hash and list every file under `run_dir/artifacts/`, matched against `contract`, and the
    files artifact manifests `listed` elsewhere in the run (run-relative path -> role; checked
    regular files: runner_core.artifact_manifest)."""
    manifest = ArtifactManifest()
    listed = listed or {}
    if not listed and _empty_dir(Path(run_dir) / ARTIFACTS_DIR):  # most runs: nothing to walk
        manifest.missing_required = [s for s in contract if s.required]
        return manifest
    run_dir = Path(run_dir).resolve()
    found = _walk_artifacts(run_dir, manifest.warnings)
    walked = {rel for rel, _real in found}
    found += [(rel, run_dir / rel) for rel in listed if rel not in walked]
    for rel, real in found:
        spec = next((s for s in contract if s.matches(rel)), None)
        filename = rel.rsplit("/", 1)[-1]
        manifest.artifacts.append(
            ArtifactEntry(
                role=spec.role if spec else listed.get(rel, "output"),
                path=rel,
                filename=filename,
                mime=(spec.mime if spec and spec.mime else guess_mime(filename)),
                size=real.stat().st_size,
                sha256=file_sha256(real),
                required=bool(spec and spec.required),
            )
        )
    paths = [a.path for a in manifest.artifacts]
    manifest.missing_required = [
        s for s in contract if s.required and not any(s.matches(p) for p in paths)
    ]
    return manifest


def other_writes(run_dir: Path, since: float) -> tuple[list[dict[str, Any]], bool]:
    """Files changed since `since` (epoch seconds) outside the run's outputs, records, inputs and
    hidden entries: the first OTHER_WRITES_LIMIT as {path, size}, and whether there were more."""
    found: list[dict[str, Any]] = []
    for path in _outside_outputs(Path(run_dir)):
        info = path.lstat()
        if info.st_mtime >= since:
            found.append({"path": path.relative_to(run_dir).as_posix(), "size": info.st_size})
            if len(found) > OTHER_WRITES_LIMIT:
                return found[:OTHER_WRITES_LIMIT], True
    return found, False


def _outside_outputs(run_dir: Path) -> Iterator[Path]:
    """Every file and symlink of the run outside RUNNER_ENTRIES and hidden entries, in path
    order; symlinks are listed, never followed."""
    for top in sorted(run_dir.iterdir()):
        if top.name in RUNNER_ENTRIES or top.name.startswith("."):
            continue
        if top.is_symlink() or not top.is_dir():
            yield top
            continue
        for root, dirs, files in os.walk(top):
            dirs.sort()
            here = Path(root)
            yield from (here / name for name in sorted(files))
            yield from (here / name for name in dirs if (here / name).is_symlink())


def write_manifest(run_dir: Path, manifest: ArtifactManifest) -> Path:
    """Write `run_dir/manifest.json` atomically and return its path."""
    data = (json.dumps(manifest.to_dict(), indent=2, ensure_ascii=False) + "\n").encode()
    write_in_run(run_dir, MANIFEST_NAME, data)  # not through a link the run left there
    return Path(run_dir) / MANIFEST_NAME


def resolve_artifact_path(run_dir: Path, rel_path: str) -> Path:
    """Resolve a client-supplied run-relative path; raise ValueError if it leaves the run dir."""
    if (
        not rel_path
        or "\x00" in rel_path
        or "\\" in rel_path
        or rel_path.startswith("/")
        or _DRIVE_LETTER.match(rel_path)
        or ".." in rel_path.split("/")
    ):
        raise ValueError(f"unsafe path: {rel_path!r}")
    root = Path(run_dir).resolve()
    resolved = _real_path(root / rel_path)
    if resolved is None or resolved == root or not resolved.is_relative_to(root):
        raise ValueError(f"path escapes the run directory: {rel_path!r}")
    lexical = root.joinpath(*(part for part in rel_path.split("/") if part not in ("", ".")))
    if hidden_target(root, lexical, resolved):
        raise ValueError(f"path leads to a hidden file or an engine config: {rel_path!r}")
    return resolved


def _walk_artifacts(run_dir: Path, warnings: list[dict[str, str]]) -> list[tuple[str, Path]]:
    """(run-relative path, real file) pairs, sorted; symlinks only when they stay inside."""
    base = run_dir / ARTIFACTS_DIR
    found: list[tuple[str, Path]] = []
    if base.is_symlink():  # the whole folder replaced by a link: said, as for one inside it
        warnings.append(
            {
                "code": ErrorCode.ARTIFACT_SYMLINK_DIR,
                "path": ARTIFACTS_DIR,
                "message": "artifacts/ is a symlink; not followed",
            }
        )
    if not base.is_dir() or base.is_symlink():
        return found
    for dirpath, dirnames, filenames in os.walk(base):  # never follows directory symlinks
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(run_dir).as_posix()
            real = _real_path(path)
            if real is None or (
                path.is_symlink()
                and (not _resolves_inside(real, run_dir) or hidden_target(run_dir, path, real))
            ):
                warnings.append(
                    {
                        "code": ErrorCode.ARTIFACT_SYMLINK_ESCAPE,
                        "path": rel,
                        "message": "symlink leaves the run directory, does not resolve or leads to a"
                        " hidden file or an engine config; skipped",
                    }
                )
            elif path.is_symlink() and real.is_dir():
                warnings.append(
                    {
                        "code": ErrorCode.ARTIFACT_SYMLINK_DIR,
                        "path": rel,
                        "message": "symlinked directory not followed",
                    }
                )
            elif name in filenames and real.is_file():
                found.append((rel, real))
    return sorted(found)


def _resolves_inside(real: Path, run_dir: Path) -> bool:
    """A symlink's target is in the run and exists (a dangling link is no artifact either)."""
    return real.is_relative_to(run_dir) and os.path.lexists(real)


def _empty_dir(path: Path) -> bool:
    """True for an empty folder (or a missing one); a symlink to one counts as empty too, as
    `_walk_artifacts` never follows it."""
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except (FileNotFoundError, NotADirectoryError):
        return not os.path.lexists(path)


def _real_path(path: Path) -> Path | None:
    """`path.resolve()`, or None for a symlink loop."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return None
