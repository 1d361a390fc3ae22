"""multipart/form-data bodies read from their files as they are sent (an upload is never held
in memory), with a Content-Length known up front."""

from __future__ import annotations

import io
import os
import uuid
from collections.abc import Mapping
from typing import IO

FilePart = tuple[str, IO[bytes] | bytes, str]  # (filename, open binary file or bytes, type)


class Body(io.RawIOBase):
    """Bytes and open files read one after another, from each file's current position."""

    def __init__(self, parts: list[bytes | IO[bytes]]) -> None:
        self.parts, self.index = parts, 0
        self.length = sum(_remaining(part) for part in parts)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self.index < len(self.parts):
            part = self.parts[self.index]
            if isinstance(part, bytes):
                self.parts[self.index] = io.BytesIO(part)
                continue
            data = part.read(len(buffer))
            if data:
                buffer[: len(data)] = data
                return len(data)
            self.index += 1
        return 0


def encode(fields: Mapping[str, str], files: Mapping[str, FilePart]) -> tuple[Body, str]:
    """The body and its Content-Type for form `fields` and `files` (field -> FilePart)."""
    boundary = uuid.uuid4().hex
    parts: list[bytes | IO[bytes]] = []
    for name, value in fields.items():
        parts.append(_head(boundary, name) + b"\r\n" + value.encode() + b"\r\n")
    for name, (filename, content, content_type) in files.items():
        head = _head(boundary, name, filename) + f"Content-Type: {content_type}\r\n\r\n".encode()
        parts += [head, content, b"\r\n"]
    parts.append(f"--{boundary}--\r\n".encode())
    return Body(parts), f"multipart/form-data; boundary={boundary}"


def _head(boundary: str, name: str, filename: str | None = None) -> bytes:
    disposition = f'form-data; name="{_quoted(name)}"'
    if filename is not None:
        disposition += f'; filename="{_quoted(filename)}"'
    return f"--{boundary}\r\nContent-Disposition: {disposition}\r\n".encode()


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def _remaining(part: bytes | IO[bytes]) -> int:
    if isinstance(part, bytes):
        return len(part)
    position = part.tell()
    return part.seek(0, os.SEEK_END) - part.seek(position)
