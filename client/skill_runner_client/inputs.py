"""A job's input files as the one zip an upload takes: each file named after its input field
(`input_file` + the file's extension), which is how the service matches them."""

from __future__ import annotations

import errno
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO

FileSource = str | os.PathLike[str] | bytes


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
            if isinstance(source, bytes):
                zf.writestr(entry_name(field, source), source)
            else:
                zf.write(source, entry_name(field, source))
    spool.seek(0)
    return spool
