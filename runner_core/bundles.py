"""Downloadable run bundles under `run_dir/bundle/`.

The normal bundle holds what a client consumes (result/, artifacts/, manifest.json); the debug
bundle holds the whole run directory for troubleshooting, less the engine CLIs' home and config
files that hold a provider key. Zips are produced by zipstream-ng, which
reads each file in chunks while emitting, so memory stays flat however large the run is.

A bundle is built when it is first asked for, not when the run ends: the first download streams
the zip while storing it as `bundle/run_bundle[_debug].zip` with its manifest, and later ones
send the stored file. A run nobody downloads costs no zip (a large artifact would otherwise be
deflated at the end of every run).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO

import zipstream

from runner_core.engines.invocation import RUN_HOME
from runner_core.own_copy import remove_entry
from runner_core.run_files import SECRET_NAMES, hidden_target

log = logging.getLogger(__name__)
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
    return (
        ("run_bundle_debug.zip", "manifest_debug.json")
        if debug
        else ("run_bundle.zip", "manifest.json")
    )


def bundle_members(run_dir: Path, debug: bool) -> list[BundleMember]:
    """Files that belong in the bundle, sorted; symlinks only when they resolve inside the run."""
    root = Path(run_dir).resolve()
    if debug:
        # not the engine CLIs' homes (.home, .codex-home, .claude-home): their auth, config
        # and session files hold the provider key, and sessions what the agent's commands read
        tops = [p for p in root.iterdir() if p.name != BUNDLE_DIR and not _engine_home(p.name)]
    else:
        tops = [root / name for name in (*_CONTENT_DIRS, *_CONTENT_FILES)]
    members: list[BundleMember] = []
    for top in tops:
        for path in _walk_files(top):
            source = _inside_source(root, path)
            if source is not None and path.name not in SECRET_NAMES:
                members.append(BundleMember(path.relative_to(root).as_posix(), source))
    return sorted(members, key=lambda m: m.path)


def _engine_home(name: str) -> bool:
    return name == RUN_HOME or (name.startswith(".") and name.endswith("-home"))


def clear_planted(run_dir: Path) -> None:
    """Remove what a run left where the stored bundles go in their place: `bundle/` that is no
    folder (a symlink to one of the service's), a zip that is no regular file (a symlink to a
    key file, a FIFO). The folder is the run's own, writable from inside its box: served or
    written through such a link, a download would read or write any file of the service. For
    an ended run only (nothing in it moves any more)."""
    folder = Path(run_dir) / BUNDLE_DIR
    if folder.is_symlink() or (os.path.lexists(folder) and not folder.is_dir()):
        remove_entry(folder)
        return
    for debug in (False, True):
        stored = folder / bundle_names(debug)[0]
        if stored.is_symlink() or (os.path.lexists(stored) and not stored.is_file()):
            remove_entry(stored)


def bundle_path(run_dir: Path, debug: bool) -> Path:
    """Where the stored zip of this flavour lives (it may not exist yet)."""
    return Path(run_dir) / BUNDLE_DIR / bundle_names(debug)[0]


def stream_bundle(run_dir: Path, debug: bool, store: bool = True) -> Iterator[bytes]:
    """Zip bytes produced on the fly for an HTTP response. With `store`, the same bytes go to
    `bundle/<zip>` (through a temp file renamed at the end, so a download cut short leaves
    nothing) and the manifest is written after the last member: the next download is a file.
    Storing is a cache: when it fails (a full disk) the client still gets the whole zip, the
    partial copy is removed, and the next download streams again."""
    run_dir = Path(run_dir)
    listing: list[BundleFile] = []
    stream = _zip_stream(bundle_members(run_dir, debug), listing)
    if not store:
        yield from stream
        return
    zip_name, manifest_name = bundle_names(debug)
    out_dir = run_dir / BUNDLE_DIR
    tmp = out_dir / f".{zip_name}.{uuid.uuid4().hex}.tmp"
    copy = _open_copy(tmp)
    try:
        for chunk in stream:
            if copy is not None:
                copy = _copy_chunk(copy, chunk, tmp)
            yield chunk
        if copy is not None:
            finished, copy = copy, None
            _store(
                finished,
                tmp,
                out_dir / zip_name,
                out_dir / manifest_name,
                {"bundle": zip_name, "files": [asdict(f) for f in listing]},
            )
    finally:
        if copy is not None:  # the client went away mid-download
            with suppress(OSError):
                copy.close()
        tmp.unlink(missing_ok=True)


def store_bundle(run_dir: Path, debug: bool) -> Path | None:
    """Build and store the bundle without sending it (a Range asked of a bundle not built yet);
    its path, or None when it could not be stored (a full disk)."""
    clear_planted(run_dir)
    for _chunk in stream_bundle(run_dir, debug):
        time.sleep(0)  # a gevent worker serves its other requests while a big zip is made
    path = bundle_path(run_dir, debug)
    return path if path.is_file() else None


def _open_copy(tmp: Path) -> BinaryIO | None:
    try:
        tmp.parent.mkdir(parents=True, exist_ok=True)
        return open(tmp, "wb")
    except OSError as exc:
        log.warning("bundle not stored (%s); it is streamed each time", exc)
        return None


def _copy_chunk(copy: BinaryIO, chunk: bytes, tmp: Path) -> BinaryIO | None:
    """Write `chunk` to the stored copy; None (copy dropped) when it cannot be written."""
    try:
        copy.write(chunk)
        return copy
    except OSError as exc:
        log.warning("bundle not stored (%s); the download goes on", exc)
        with suppress(OSError):
            copy.close()
        tmp.unlink(missing_ok=True)
        return None


def _store(copy: BinaryIO, tmp: Path, zip_path: Path, manifest_path: Path, manifest: dict) -> None:
    """Close the finished copy and put it in place with its manifest, or neither."""
    try:
        copy.close()  # flushes: a full disk may only show here
        os.replace(tmp, zip_path)
        _write_text(manifest_path, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        log.warning("bundle not stored (%s); it is streamed each time", exc)
        zip_path.unlink(missing_ok=True)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _zip_stream(members: list[BundleMember], listing: list[BundleFile]) -> zipstream.ZipStream:
    """A lazy zip of `members`; each member's size and sha256 are appended to `listing` as
    the zip reads it (one pass over the data)."""
    zs = zipstream.ZipStream(compress_type=zipstream.ZIP_DEFLATED)
    for member in members:
        zs.add(
            _read_hashing(member, listing), arcname=member.path, size=member.source.stat().st_size
        )
    return zs


def _read_hashing(
    member: BundleMember, listing: list[BundleFile], chunk_size: int = 1 << 20
) -> Iterator[bytes]:
    digest, size = hashlib.sha256(), 0
    with open(member.source, "rb") as fh:
        while chunk := fh.read(chunk_size):
            digest.update(chunk)
            size += len(chunk)
            yield chunk
    listing.append(BundleFile(member.path, size, digest.hexdigest()))


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
    if (
        not real.is_relative_to(root)
        or real.is_relative_to(root / BUNDLE_DIR)
        or not real.is_file()
        or hidden_target(root, path, real)
    ):
        return None
    return real
