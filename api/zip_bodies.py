"""Zip request bodies: skill packages (install or one-off run) and a one-off run's input upload.

A zip arrives as a multipart field or as a raw `application/zip` body; it is streamed to a file
first, then handed to the safe extractor of `runner_core.uploads`. Refusals become ApiErrors
whose `details.errors` lists every problem.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import shutil
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flask import request
from werkzeug.exceptions import RequestEntityTooLarge

from api import context
from api.errors import ApiError
from runner_core.error_codes import ErrorCode
from runner_core.skills import SkillPackage
from runner_core.skills.package import PackageError, check_calls, unpack_package
from runner_core.uploads import (
    UploadedFile,
    UploadError,
    UploadLimits,
    extract_upload,
    write_input_manifest,
)

CHUNK = 1024 * 1024


def body_cap(limits: UploadLimits) -> int:
    """The largest zip body taken for `limits`: the content it may hold, plus room for the
    zip's own headers and a multipart envelope."""
    return limits.max_total_bytes + limits.max_entries * 1024 + CHUNK


@contextmanager
def body_limit(max_bytes: int) -> Iterator[None]:
    """Read this request's body (raw or form) under a limit of `max_bytes`: over it is
    413 UPLOAD_TOO_LARGE, known from the Content-Length or while the body streams."""
    request.max_content_length = max_bytes  # before the body or the form is touched
    try:
        yield
    except RequestEntityTooLarge as exc:
        raise ApiError(
            413,
            ErrorCode.UPLOAD_TOO_LARGE,
            f"the upload is larger than the limit of {max_bytes} bytes",
            {"limit_bytes": max_bytes},
        ) from exc


def save_zip_body(
    field: str, dest: Path, max_bytes: int, *, allow_raw: bool = True
) -> tuple[int, str]:
    """Write the multipart `field` (or the raw body) to `dest`; returns (size, sha256).
    A body over `max_bytes` is refused (body_limit) and nothing of it is kept."""
    try:
        with body_limit(max_bytes):
            return _save_zip_body(field, dest, allow_raw)
    except BaseException:  # refused, cut off by the client, or the disk filled up
        dest.unlink(missing_ok=True)
        raise


def _save_zip_body(field: str, dest: Path, allow_raw: bool) -> tuple[int, str]:
    upload = request.files.get(field)
    if upload is None and not (
        allow_raw and request.mimetype in ("application/zip", "application/octet-stream")
    ):
        raise ApiError(
            400,
            ErrorCode.PACKAGE_MISSING if field == "package" else ErrorCode.UPLOAD_MISSING,
            f"send the zip as the multipart field '{field}'"
            + (" or as an application/zip body" if allow_raw else ""),
            {"field": field},
        )
    source = upload.stream if upload is not None else request.stream
    digest, size = hashlib.sha256(), 0
    with dest.open("wb") as out:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    return size, digest.hexdigest()


EMPTY_ZIP_MAX = 64 * 1024  # a zip of no files (or of folders only) is far smaller


def holds_no_files(field: str = "file") -> bool:
    """True when the upload (multipart `field` or the raw body) is a small zip with no file in
    it; anything else, a bad zip included, is False and left to the ordinary checks."""
    if (request.content_length or 0) > EMPTY_ZIP_MAX:
        return False
    upload = request.files.get(field)
    if upload is None and request.mimetype not in ("application/zip", "application/octet-stream"):
        return False
    raw = (upload.stream if upload is not None else request.stream).read(EMPTY_ZIP_MAX + 1)
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            return all(info.is_dir() for info in archive.infolist())
    except (zipfile.BadZipFile, ValueError):
        return False


def unpack_package_or_400(zip_path: Path, workdir: Path, extra: dict | None = None) -> SkillPackage:
    """Unpack and validate a skill package, or raise a 400 listing every error."""
    try:
        pkg = unpack_package(zip_path, workdir)
        check_calls(pkg, context.settings().skills_dir)  # a temp composite calls installed skills
        return pkg
    except (UploadError, PackageError) as exc:
        raise package_api_error(exc, extra) from exc


def package_api_error(exc: UploadError | PackageError, extra: dict | None = None) -> ApiError:
    """The 400 (409 for an id taken by the other format) for a refused package: its code,
    message and `details.errors`."""
    details = {**exc.details, **(extra or {})}
    details.setdefault("errors", [exc.message])
    status = 409 if exc.code == ErrorCode.SKILL_ID_CONFLICT else 400
    return ApiError(status, exc.code, exc.message, details)


def upload_limits() -> UploadLimits:
    """The operator's limits for input archives (SKILL_RUNNER_UPLOAD_MAX_*)."""
    settings = context.settings()
    return UploadLimits(
        max_total_bytes=settings.upload_max_bytes,
        max_entries=settings.upload_max_entries,
        max_ratio=settings.upload_max_ratio,
    )


@contextmanager
def upload_lock(request_dir: Path, request_id: str) -> Iterator[None]:
    """One upload at a time per request: a second one while the first is still coming in (a
    client retrying too early) is 409 UPLOAD_IN_PROGRESS and touches nothing. A flock, so it
    holds across gunicorn's processes and is dropped if the holder dies."""
    request_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(request_dir / ".upload.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ApiError(
                409,
                ErrorCode.UPLOAD_IN_PROGRESS,
                "another upload for this request is still coming in; wait for its answer",
                {},
                request_id,
            ) from None
        yield
    finally:
        os.close(fd)  # releases the lock


def receive_inputs(request_dir: Path, request_id: str) -> list[UploadedFile]:
    """Extract the input zip (field `file` or raw body) into `<request>/uploads/`."""
    tmp, dest = request_dir / "inputs.zip.part", request_dir / "uploads"
    request_dir.mkdir(parents=True, exist_ok=True)
    extracted = False
    try:
        save_zip_body("file", tmp, body_cap(upload_limits()))
        if dest.is_dir() and not any(dest.iterdir()):
            dest.rmdir()
        files = extract_upload(tmp, dest, upload_limits())
        extracted = True
        write_input_manifest(files, request_dir / "input_manifest.json")
    except UploadError as exc:
        raise ApiError(400, exc.code, exc.message, exc.details, request_id) from exc
    except BaseException:
        if extracted:  # the upload did not go through: the client may send it again
            shutil.rmtree(dest, ignore_errors=True)
        raise
    finally:
        tmp.unlink(missing_ok=True)
        dest.mkdir(exist_ok=True)
    return files
