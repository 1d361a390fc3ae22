"""A reply made of files (`POST .../interaction/reply/files`, Skill-Runner's
`skillrunner.interaction-files.v1`): one JSON `metadata` part and repeated `files` parts. The
files land in the run's `uploads/interaction-<id>/`, where the agent works, and the reply the
agent reads names them. Without the client's idempotency key, the fingerprint of its metadata
and files stands in for one, so a resent upload starts nothing new."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable
from typing import Any, TypeGuard

from flask import request
from sqlalchemy.orm import Session
from werkzeug.exceptions import RequestEntityTooLarge

from api import context, json_bodies
from api.errors import ApiError
from api.jobs import interaction
from runner_core.error_codes import ErrorCode
from runner_core.skills import SkillPackage
from runner_core.store.models import Request, Run
from runner_core.uploads import nfc

MAX_FILES = 8
MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_TOTAL_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024
_BODY_BYTES = MAX_TOTAL_BYTES + MAX_FILES * 1024 + _CHUNK  # the files, their parts, the metadata
_UNSAFE = re.compile(r"[^\w.\- ]+")
_NAME_BYTES = 200  # UTF-8 bytes of a stored name: under the file system's 255 per name
_KEY_CHARS = 128  # as the JSON reply's idempotency_key (and its column)


def interaction_files_protocol() -> dict[str, Any]:
    """The handshake's `skillrunner.interaction-files.v1` entry: the limits enforced here."""
    return {
        "supported": True,
        "max_files": MAX_FILES,
        "max_file_bytes": MAX_FILE_BYTES,
        "max_total_bytes": MAX_TOTAL_BYTES,
    }


def reply_with_files(
    session: Session, req: Request, run: Run, skill_for: Callable[[], SkillPackage]
) -> dict[str, Any]:
    request.max_content_length = _BODY_BYTES  # not the JSON bodies' limit: before the form
    try:
        meta = _metadata(req.id)
        files = request.files.getlist("files")
    except RequestEntityTooLarge as exc:
        raise _too_large(req.id, f"the request is over {_BODY_BYTES} bytes") from exc
    if not files:
        raise _invalid(req.id, "no `files` part")
    if len(files) > MAX_FILES:
        raise _too_large(req.id, f"{len(files)} files, at most {MAX_FILES}")
    slots = _slots(req.id, meta, len(files))
    interaction.require_interactive(req.id, run)
    fingerprint = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
    contents = []
    total = 0
    for index, upload in enumerate(files):
        data = bytearray()
        while chunk := upload.stream.read(_CHUNK):
            data += chunk
            if len(data) > MAX_FILE_BYTES:
                raise _too_large(req.id, f"file {index} is over {MAX_FILE_BYTES} bytes")
        total += len(data)
        if total > MAX_TOTAL_BYTES:
            raise _too_large(req.id, f"the files are over {MAX_TOTAL_BYTES} bytes together")
        if not data:
            raise _invalid(req.id, f"file {index} is empty")
        fingerprint.update(hashlib.sha256(data).digest())
        contents.append((slots[index], _safe_name(upload.filename, index), bytes(data)))
    _refuse_shared_names(req.id, [(slot, name) for slot, name, _data in contents])
    key = meta.get("idempotency_key") or "files-" + fingerprint.hexdigest()[:32]
    target = f"uploads/interaction-{meta['interaction_id']}"
    described: list[dict[str, Any]] = [
        {"slot": slot, "path": f"{target}/{slot}/{name}", "name": name, "size": len(data)}
        for slot, name, data in contents
    ]
    response = {"message": meta.get("message") or "", "files": described}

    base = context.settings().runs_dir / run.id
    # written aside first, and moved in place only once this reply is the one recorded: a
    # reply that loses a race (the run read as waiting before its body had arrived) leaves the
    # winner's files as they are
    staging = base / "uploads" / f".interaction-{meta['interaction_id']}-{uuid.uuid4().hex}"

    def store() -> None:
        for slot, name, data in contents:
            path = staging / slot / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

    def keep() -> None:
        for slot, name, _data in contents:
            staged, path = staging / slot / name, base / target / slot / name
            if staged.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged, path)

    body = {"interaction_id": meta["interaction_id"], "response": response, "idempotency_key": key}
    try:
        return interaction.reply(
            session,
            req,
            run,
            body,
            skill_for,
            free=True,
            before=store,
            sha256=fingerprint.hexdigest(),
            accepted=keep,
        )
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _metadata(request_id: str) -> dict[str, Any]:
    raw = request.form.get("metadata")
    if raw is None and "metadata" in request.files:
        raw = request.files["metadata"].read().decode("utf-8", errors="replace")
    try:
        meta = json_bodies.loads(raw) if raw is not None else None
    except ValueError as exc:
        raise _invalid(request_id, f"metadata is not JSON: {exc}") from exc
    if not isinstance(meta, dict) or not _whole(meta.get("interaction_id")):
        raise _invalid(request_id, "metadata must be a JSON object with an integer interaction_id")
    unknown = set(meta) - {"interaction_id", "idempotency_key", "message", "bindings"}
    if unknown:
        raise _invalid(request_id, "unknown metadata fields: " + ", ".join(sorted(unknown)))
    key = meta.get("idempotency_key")
    if key is not None and not (isinstance(key, str) and 1 <= len(key) <= _KEY_CHARS):
        raise _invalid(
            request_id, f"idempotency_key must be a string of 1 to {_KEY_CHARS} characters"
        )
    if not isinstance(meta.get("message", ""), str | None):
        raise _invalid(request_id, "message must be a string")
    if not isinstance(meta.get("bindings", []), list | None):
        raise _invalid(request_id, "bindings must be a list of {slot, file_index}")
    return meta


def _slots(request_id: str, meta: dict[str, Any], count: int) -> list[str]:
    """Each file's slot by its index: every file bound exactly once (unbound: `file`)."""
    slots: list[str | None] = [None] * count
    for binding in meta.get("bindings") or []:
        index = binding.get("file_index") if isinstance(binding, dict) else None
        slot = binding.get("slot") if isinstance(binding, dict) else None
        if not _whole(index) or not 0 <= index < count or not isinstance(slot, str):
            raise _invalid(request_id, f"a binding names no file: {binding!r}")
        if slots[index] is not None:
            raise _invalid(request_id, f"file {index} is bound twice")
        slots[index] = _safe_name(slot, index)
    return [s or "file" for s in slots]


def _whole(value: object) -> TypeGuard[int]:
    """A JSON integer (true and false are ints to Python, not to a client)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _safe_name(name: str | None, index: int) -> str:
    """The client's file name as a plain name (never a path), in NFC: a name from macOS is NFD,
    whose combining accents would otherwise be made `_`."""
    base = _UNSAFE.sub("_", nfc(name or "").replace("\\", "/").rsplit("/", 1)[-1]).strip(". ")
    base = base[:120].encode("utf-8")[:_NAME_BYTES].decode("utf-8", "ignore").strip(". ")
    return base or f"file-{index}"


def _refuse_shared_names(request_id: str, stored: list[tuple[str, str]]) -> None:
    """400 when two files would be stored at one slot and name (the same name, or names equal
    once made plain and NFC): one would silently replace the other."""
    first: dict[tuple[str, str], int] = {}
    for index, place in enumerate(stored):
        if place in first:
            raise _invalid(
                request_id,
                f"files {first[place]} and {index} would both be stored as "
                f"{place[0]}/{place[1]}: give them different names or slots",
            )
        first[place] = index


def _invalid(request_id: str, message: str) -> ApiError:
    return ApiError(400, ErrorCode.INTERACTION_REPLY_INVALID, message, {}, request_id)


def _too_large(request_id: str, message: str) -> ApiError:
    limits = interaction_files_protocol()
    limits.pop("supported")
    return ApiError(413, ErrorCode.UPLOAD_TOO_LARGE, message, limits, request_id)
