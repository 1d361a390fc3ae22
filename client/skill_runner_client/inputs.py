"""A job's input files as the one zip an upload takes: each file named after its input field
(`input_file` + the file's extension), which is how the service matches them."""

from __future__ import annotations

import errno
import os
import tempfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

FileSource = str | os.PathLike[str] | bytes
# the service checks entries of 64 KiB and more against its ratio limit (200 by default);
# half of it leaves room for a lower limit
RATIO_MIN_BYTES, STORE_ABOVE_RATIO = 64 * 1024, 100


def check_files(files: Mapping[str, FileSource]) -> None:
    """FileNotFoundError naming the field for a path that is not a file: raised before the run
    is created, so a typo leaves no job waiting for an upload that never comes."""
    for field, source in files.items():
        if not isinstance(source, bytes) and not os.path.isfile(source):
            raise FileNotFoundError(errno.ENOENT, f"no file for input '{field}'", os.fspath(source))


def entry_name(field: str, source: FileSource) -> str:
    """`field` plus the suffix of the file's name (none for bytes)."""
    if isinstance(source, bytes):
        return field
    return field + Path(source).suffix


def build_inputs_zip(files: Mapping[str, FileSource]) -> IO[bytes]:
    """A spooled temporary zip of `files` (field -> path or bytes), rewound to its start."""
    spool = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)
    with zipfile.ZipFile(spool, "w", zipfile.ZIP_DEFLATED) as zf:
        for field, source in files.items():
            how = zipfile.ZIP_STORED if squeezes_too_well(source) else zipfile.ZIP_DEFLATED
            if isinstance(source, bytes):
                zf.writestr(entry_name(field, source), source, compress_type=how)
            else:
                zf.write(source, entry_name(field, source), compress_type=how)
    spool.seek(0)
    return spool


# left out of a package made from a folder: caches and version control, not the skill's files
SKIPPED_IN_PACKAGES = frozenset({"__pycache__", ".git", ".hg", ".svn", ".DS_Store", ".venv"})


def build_package_zip(folder: str | os.PathLike[str]) -> IO[bytes]:
    """A skill folder as its package: a spooled temporary zip with the folder's files at its
    root (caches, version control and *.pyc left out), rewound to its start."""
    root = Path(folder)
    spool = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)
    with zipfile.ZipFile(spool, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if SKIPPED_IN_PACKAGES & set(rel.parts) or path.suffix == ".pyc" or path.is_dir():
                continue
            how = zipfile.ZIP_STORED if squeezes_too_well(path) else zipfile.ZIP_DEFLATED
            zf.write(path, rel.as_posix(), compress_type=how)
    spool.seek(0)
    return spool


def squeezes_too_well(source: FileSource) -> bool:
    """Whether deflating `source` would pass STORE_ABOVE_RATIO: the service refuses an entry
    that compresses too well as a zip bomb (UPLOAD_ZIP_BOMB, 200 by default), so a file
    of zeros or of one repeated line is sent stored instead."""
    whole = len(source) if isinstance(source, bytes) else os.path.getsize(source)
    if whole < RATIO_MIN_BYTES:  # never checked: no second pass over small files
        return False
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    size = packed = 0
    chunks = [source] if isinstance(source, bytes) else _chunks(source)
    for chunk in chunks:
        size += len(chunk)
        packed += len(deflate.compress(chunk))
    packed += len(deflate.flush())
    return size >= RATIO_MIN_BYTES and size > STORE_ABOVE_RATIO * max(packed, 1)


def _chunks(path: str | os.PathLike[str]) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            yield chunk
