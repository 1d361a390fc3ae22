"""Downloadable run bundles under `run_dir/bundle/`.

The normal bundle holds what a client consumes (result/, artifacts/, manifest.json); the debug
bundle holds the whole run directory for troubleshooting. Zips are produced by zipstream-ng, which
reads each file in chunks while emitting, so memory stays flat however large the run is.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

import zipstream

from runner_core.artifacts import file_sha256

BUNDLE_DIR = "bundle"
_CONTENT_DIRS = ("result", "artifacts")
_CONTENT_FILES = ("manifest.json",)


@dataclass(frozen=True)
class BundleMember:
    """One file to put in a bundle: its name in the zip and the real file it comes from."""

    path: str
    source: Path


@dataclass(frozen=True)
class BundleFile:
    """One line of a bundle manifest."""

    path: str
    size: int
    sha256: str


def bundle_names(debug: bool) -> tuple[str, str]:
    """(zip name, manifest name) inside `bundle/` for the chosen flavour."""
    return ("run_bundle_debug.zip", "manifest_debug.json") if debug else ("run_bundle.zip", "manifest.json")


def bundle_members(run_dir: Path, debug: bool) -> list[BundleMember]:
    """Files that belong in the bundle, sorted; symlinks only when they resolve inside the run."""
    root = Path(run_dir).resolve()
    if debug:
        tops = [p for p in root.iterdir() if p.name != BUNDLE_DIR]
    else:
        tops = [root / name for name in (*_CONTENT_DIRS, *_CONTENT_FILES)]
    members: list[BundleMember] = []
    for top in tops:
        for path in _walk_files(top):
            source = _inside_source(root, path)
            if source is not None:
                members.append(BundleMember(path.relative_to(root).as_posix(), source))
    return sorted(members, key=lambda m: m.path)


def stream_bundle(run_dir: Path, debug: bool) -> Iterable[bytes]:
    """Zip bytes for an HTTP response, produced on the fly without writing a file."""
    return _zip_stream(bundle_members(run_dir, debug))


def build_bundle(run_dir: Path, debug: bool) -> Path:
    """Write `bundle/run_bundle[_debug].zip` and its manifest; return the zip's path."""
    run_dir = Path(run_dir)
    zip_name, manifest_name = bundle_names(debug)
    out_dir = run_dir / BUNDLE_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    members = bundle_members(run_dir, debug)
    listing = [BundleFile(m.path, m.source.stat().st_size, file_sha256(m.source)) for m in members]
    target = out_dir / zip_name
    tmp = out_dir / f".{zip_name}.tmp"
    with open(tmp, "wb") as fh:
        for chunk in _zip_stream(members):
            fh.write(chunk)
    os.replace(tmp, target)
    manifest = {"bundle": zip_name, "files": [asdict(f) for f in listing]}
    (out_dir / manifest_name).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
    return target


def _zip_stream(members: list[BundleMember]) -> zipstream.ZipStream:
    zs = zipstream.ZipStream(compress_type=zipstream.ZIP_DEFLATED)
    for member in members:
        zs.add_path(str(member.source), arcname=member.path, recurse=False)
    return zs


def _walk_files(top: Path) -> Iterable[Path]:
    """Files (and file symlinks) under `top`; directory symlinks are never entered."""
    if top.is_symlink() or top.is_file():
        yield top
        return
    if not top.is_dir():
        return
    for dirpath, _dirnames, filenames in os.walk(top):  # followlinks=False by default
        for name in filenames:
            yield Path(dirpath) / name


def _inside_source(root: Path, path: Path) -> Path | None:
    """The real regular file behind `path`, or None if it escapes the run dir or is special."""
    try:
        real = path.resolve()
    except (RuntimeError, OSError):  # symlink loop
        return None
    if not real.is_relative_to(root) or real.is_relative_to(root / BUNDLE_DIR) or not real.is_file():
        return None
    return real
