"""Safe extraction of an uploaded zip into a request's `uploads/` directory.

Every header is checked before a single byte is written, then entries are streamed into a
private staging directory next to `dest` while real byte counts are enforced (headers can lie).
Only a fully successful extraction is renamed into place, so a refused upload leaves nothing.
Names are stored in Unicode NFC (a zip made on macOS spells "é" as "e" and a combining accent,
NFD), so they match the input fields and paths a client writes, as NFC nearly always.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import unicodedata
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from runner_core.error_codes import ErrorCode
from runner_core.workspace import write_file

CHUNK_SIZE = 64 * 1024
_DRIVE_LETTER = re.compile(r"^[A-Za-z]:")
NAME_MAX = 255  # bytes in one path component (Linux)
PATH_MAX = 4096  # bytes in a whole path, its terminating NUL included (Linux)
_STAGING_NAME = ".upload-" + "x" * 8  # what tempfile.mkdtemp names the staging directory


@dataclass(frozen=True)
class UploadLimits:
    """Limits applied to one uploaded archive."""

    max_total_bytes: int = 1024**3
    max_entries: int = 10_000
    max_ratio: float = 200.0
    # Entries this small cannot amplify meaningfully, and tiny text files routinely
    # compress better than any sane ratio limit.
    ratio_min_bytes: int = 64 * 1024
    # Deep enough for any real tree, shallow enough for the recursive copies and deletes the
    # tree meets later; and a name short enough to fit under any directory it is copied to.
    max_depth: int = 64
    max_path_bytes: int = 1024


@dataclass(frozen=True)
class UploadedFile:
    """One extracted file: run-relative POSIX path, byte size and sha256 hex digest."""

    path: str
    size: int
    sha256: str


class UploadError(Exception):
    """An upload was refused; `code` is the API error code."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(code, message, details or {})
        self.code = code
        self.message = message
        self.details = details or {}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def extract_upload(
    zip_path: Path, dest: Path, limits: UploadLimits = UploadLimits()
) -> list[UploadedFile]:
    """Extract `zip_path` into `dest` (absent or empty) and return the files, sorted by path.

    Raises UploadError and leaves `dest` untouched when the archive is refused.
    """
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UploadError(ErrorCode.UPLOAD_DEST_NOT_EMPTY, "upload destination already has content")
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        # ValueError: an entry name flagged UTF-8 that does not decode
        raise UploadError(
            ErrorCode.UPLOAD_NOT_ZIP, "upload is not a valid zip archive", {"reason": str(exc)}
        ) from exc
    with archive:
        plan = _plan_entries(archive.infolist(), limits, _name_room(dest))
        dest.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".upload-", dir=dest.parent))
        try:
            files = _extract_planned(archive, plan, staging, limits)
            staging.chmod(0o755)
            if dest.exists():
                dest.rmdir()  # checked empty above; rename cannot replace a non-empty dir
            os.replace(staging, dest)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return sorted(files, key=lambda f: f.path)


def write_input_manifest(files: Iterable[UploadedFile], path: Path) -> None:
    """Write `input_manifest.json`: {"files": [{path, size, sha256}, ...]}."""
    body = {"files": [asdict(f) for f in sorted(files, key=lambda f: f.path)]}
    write_file(path, (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def nfc(name: str) -> str:
    """`name` in Unicode NFC, the form upload names are stored and matched in."""
    return unicodedata.normalize("NFC", name)


def safe_entry_name(name: str) -> str:
    """Return the normalised relative POSIX path of an entry name, in NFC, or raise
    UPLOAD_UNSAFE_PATH."""
    entry, name = name, nfc(name)
    unsafe = (
        not name
        or "\\" in name  # a Windows separator is a traversal on some extractors
        or "\x00" in name
        or name.startswith("/")
        or _DRIVE_LETTER.match(name) is not None
    )
    parts = _path_parts(name)
    if unsafe or ".." in parts or not parts:
        raise UploadError(ErrorCode.UPLOAD_UNSAFE_PATH, "unsafe path in archive", {"entry": entry})
    return "/".join(parts)


def _path_parts(name: str) -> list[str]:
    return [p for p in name.split("/") if p not in ("", ".")]


def _name_room(dest: Path) -> int:
    """Bytes left for an entry's name under `dest` or its staging directory within PATH_MAX."""
    base = len(os.fsencode(Path(dest).absolute())) + 1 + len(_STAGING_NAME)  # covers both
    return PATH_MAX - 1 - base - 1


def _check_name_fits(name: str, limits: UploadLimits, room: int) -> None:
    """Refuse (UPLOAD_UNSAFE_PATH) a normalised entry name the file system cannot hold: a
    component over NAME_MAX bytes, more than `max_depth` levels, or a path over
    `max_path_bytes` or `room` bytes."""
    parts = name.split("/")
    longest = max(len(os.fsencode(part)) for part in parts)
    size, max_size = len(os.fsencode(name)), min(limits.max_path_bytes, room)
    if longest > NAME_MAX:
        problem, limit = "a name in the entry's path is too long", {"max_name_bytes": NAME_MAX}
    elif len(parts) > limits.max_depth:
        problem, limit = "the entry is nested too deep", {"max_depth": limits.max_depth}
    elif size > max_size:
        problem, limit = "the entry's path is too long", {"max_path_bytes": max_size}
    else:
        return
    shown = name if len(name) <= 200 else name[:200] + "..."  # a 4000-character name helps nobody
    raise UploadError(ErrorCode.UPLOAD_UNSAFE_PATH, problem, {"entry": shown, **limit})


def _plan_entries(
    infos: list[zipfile.ZipInfo], limits: UploadLimits, room: int
) -> list[tuple[zipfile.ZipInfo, str]]:
    """Check every header; return (info, normalised name) pairs to extract. `room`: the bytes
    an entry's name may take under the destination."""
    if len(infos) > limits.max_entries:
        raise UploadError(
            ErrorCode.UPLOAD_TOO_MANY_ENTRIES,
            "archive has too many entries",
            {"entries": len(infos), "max_entries": limits.max_entries},
        )
    plan: list[tuple[zipfile.ZipInfo, str]] = []
    files: set[str] = set()
    dirs: set[str] = set()
    spelled: dict[str, str] = {}  # normalised name -> the entry's name in the archive
    total = 0
    for info in infos:
        name = safe_entry_name(info.filename)
        _check_name_fits(name, limits, room)
        _check_entry_kind(info)
        is_dir = info.is_dir()
        if name in files or (name in dirs and not is_dir):
            raise _duplicate(name, spelled.get(name), info.filename)
        spelled.setdefault(name, info.filename)
        parents = [str(p) for p in PurePosixPath(name).parents if str(p) != "."]
        if any(p in files for p in parents):
            raise UploadError(
                ErrorCode.UPLOAD_DUPLICATE_ENTRY, "entry nested under a file", {"entry": name}
            )
        (dirs if is_dir else files).add(name)
        dirs.update(parents)
        total += info.file_size
        if total > limits.max_total_bytes:
            raise UploadError(
                ErrorCode.UPLOAD_TOO_LARGE,
                "archive expands beyond the size limit",
                {"max_total_bytes": limits.max_total_bytes},
            )
        _check_ratio(name, info.file_size, info.compress_size, limits)
        plan.append((info, name))
    return plan


def _duplicate(name: str, first: str | None, second: str) -> UploadError:
    """UPLOAD_DUPLICATE_ENTRY for a second entry at `name`; when the two are spelled apart only
    by Unicode normalisation (NFC and NFD), it says so and names both."""
    if first is None or _path_parts(first) == _path_parts(second):
        return UploadError(
            ErrorCode.UPLOAD_DUPLICATE_ENTRY, "duplicate entry in archive", {"entry": name}
        )
    return UploadError(
        ErrorCode.UPLOAD_DUPLICATE_ENTRY,
        "two entries name the same file once their names are Unicode-normalised (NFC): "
        f"{first!r} and {second!r}",
        {"entry": name, "entries": [first, second]},
    )


# zipfile inflates bzip2 and LZMA a whole read of compressed bytes at once, unbounded: 3 KB
# of bzip2 under a header claiming 100 bytes took 8 GB of memory. Deflate is read bounded.
_COMPRESSIONS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}


def _check_entry_kind(info: zipfile.ZipInfo) -> None:
    if info.compress_type not in _COMPRESSIONS:
        raise UploadError(
            ErrorCode.UPLOAD_NOT_ZIP,
            f"entry compressed with method {info.compress_type}; only stored and deflate are taken",
            {"entry": info.filename, "compress_type": info.compress_type},
        )
    if info.flag_bits & 0x1:
        raise UploadError(
            ErrorCode.UPLOAD_ENCRYPTED,
            "encrypted entries are not supported",
            {"entry": info.filename},
        )
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise UploadError(
            ErrorCode.UPLOAD_SYMLINK, "symlink entries are not allowed", {"entry": info.filename}
        )


def _check_ratio(name: str, size: int, compressed: int, limits: UploadLimits) -> None:
    if size >= limits.ratio_min_bytes and size > limits.max_ratio * max(compressed, 1):
        raise UploadError(
            ErrorCode.UPLOAD_ZIP_BOMB,
            "entry compression ratio exceeds the limit",
            {"entry": name, "max_ratio": limits.max_ratio},
        )


def _extract_planned(
    archive: zipfile.ZipFile,
    plan: list[tuple[zipfile.ZipInfo, str]],
    staging: Path,
    limits: UploadLimits,
) -> list[UploadedFile]:
    files: list[UploadedFile] = []
    total = 0
    for info, name in plan:
        target = staging.joinpath(*name.split("/"))
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        budget = limits.max_total_bytes - total
        written, digest = _stream_entry(archive, info, name, target, limits, budget)
        total += written
        files.append(UploadedFile(path=name, size=written, sha256=digest))
    return files


def _stream_entry(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    name: str,
    target: Path,
    limits: UploadLimits,
    budget: int,
) -> tuple[int, str]:
    """Copy one entry in chunks, counting real bytes against the header and the limits."""
    digest = hashlib.sha256()
    written = 0
    try:
        with archive.open(info) as src, open(target, "xb") as out:
            while chunk := src.read(CHUNK_SIZE):
                written += len(chunk)
                if written > info.file_size:
                    raise UploadError(
                        ErrorCode.UPLOAD_ZIP_BOMB,
                        "entry is larger than its header claims",
                        {"entry": name},
                    )
                if written > budget:
                    raise UploadError(
                        ErrorCode.UPLOAD_TOO_LARGE,
                        "archive expands beyond the size limit",
                        {"max_total_bytes": limits.max_total_bytes},
                    )
                digest.update(chunk)
                out.write(chunk)
    except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError) as exc:
        # NotImplementedError: a compression method zipfile cannot read.
        raise UploadError(
            ErrorCode.UPLOAD_NOT_ZIP,
            "corrupt or unsupported entry in archive",
            {"entry": name, "reason": str(exc)},
        ) from exc
    return written, digest.hexdigest()
