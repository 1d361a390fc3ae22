"""Reading a batch file: JSON Lines (one job object a line) or CSV with a header row. Every
line is checked before anything is sent, so a bad file submits nothing."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_runner_client import strict_json

FIELDS = {"key", "skill_id", "engine", "model", "parameter", "input", "files", "runtime_options"}
OBJECT_FIELDS = ("parameter", "input", "runtime_options", "files")
# a key names its result file and its artifacts' folder: a safe file name, never . or ..
# (artifacts/../ is --out itself, where an artifact named summary.jsonl would replace the summary)
KEY = re.compile(r"(?!\.{1,2}$)[A-Za-z0-9._-]{1,128}")


class BadLine(ValueError):
    """A line of the batch file that cannot be a job; names the line."""

    def __init__(self, path: Path, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.line, self.reason = line, reason


@dataclass(frozen=True)
class BatchJob:
    """One line: a job to run under `key`."""

    key: str
    line: int
    skill_id: str
    engine: str | None = None
    model: str | None = None
    parameter: dict[str, Any] = field(default_factory=dict)
    input: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    runtime_options: dict[str, Any] = field(default_factory=dict)

    def idempotency_key(self, batch_file: Path) -> str:
        """Derived from the batch file's absolute path, the job's key and what the job is (its
        fields, its input files' bytes): a rerun or `--resume` of the same job sends the same key,
        so the service creates nothing twice; a job edited since is a new job, not the old one's
        result (an edited input file) nor IDEMPOTENCY_KEY_REUSED (an edited line)."""
        digest = hashlib.sha256(f"{os.path.realpath(batch_file)}\0{self.key}\0".encode())
        fields = [self.skill_id, self.engine, self.model, self.parameter, self.input]
        digest.update(json.dumps([*fields, self.runtime_options], sort_keys=True).encode())
        for name, path in sorted(self.files.items()):
            with open(path, "rb") as fh:
                digest.update(f"\0{name}\0".encode() + hashlib.file_digest(fh, "sha256").digest())
        return "batch-" + digest.hexdigest()[:40]


def read_batch(path: Path, base: Path | None = None) -> list[BatchJob]:
    """Every job of the file, or BadLine for the first line that is not one. Input files are
    relative to `base` (default: the file's folder)."""
    _check_utf8(path)
    if path.suffix.lower() == ".csv":
        rows = _csv_rows(path)
    else:
        rows = _jsonl_rows(path)
    jobs: list[BatchJob] = []
    seen: dict[str, int] = {}
    for line, row in rows:
        job = _job(path, line, row, path.parent if base is None else base)
        if job.key in seen:
            raise BadLine(path, line, f"key '{job.key}' repeats line {seen[job.key]}")
        seen[job.key] = line
        jobs.append(job)
    return jobs


def _check_utf8(path: Path) -> None:
    """BadLine naming the first line that is not UTF-8 (the decoder's error names a byte
    offset into the whole file only)."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                byte = raw[exc.start : exc.start + 1].hex()
                reason = f"not UTF-8 (byte 0x{byte} at column {exc.start + 1}): save it as UTF-8"
                raise BadLine(path, number, reason) from None


def _jsonl_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    with path.open(encoding="utf-8-sig") as fh:  # a BOM (Notepad) is skipped
        for number, text in enumerate(fh, 1):
            if not text.strip():
                continue
            try:
                row = strict_json.loads(text)
            except ValueError as exc:
                raise BadLine(path, number, f"not JSON: {exc}") from None
            if not isinstance(row, dict):
                raise BadLine(path, number, "not a JSON object")
            rows.append((number, row))
    return rows


def _csv_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """CSV columns: key, skill_id, engine, model; parameter, input, files, runtime_options as
    JSON objects; or `parameter.NAME`, `input.NAME`, `files.FIELD` for one value each."""
    rows = []
    with path.open(encoding="utf-8-sig", newline="") as fh:  # Excel writes a BOM
        reader = csv.DictReader(fh)
        for row in reader:
            line = reader.line_num
            extra = [cell for cell in row.get(None) or [] if cell]
            if extra:  # cells past the header's columns: never dropped unread
                columns = len(reader.fieldnames or [])
                raise BadLine(
                    path,
                    line,
                    f"more cells than the header's {columns} columns "
                    f'(a value holding a comma is quoted: "a, b"): {extra!r}',
                )
            job: dict[str, Any] = {}
            for column, value in row.items():
                if column is None or value in (None, ""):
                    continue
                for name, cell in _csv_cell(path, line, column.strip(), value).items():
                    if isinstance(job.get(name), dict) and isinstance(cell, dict):
                        cell = {**job[name], **cell}  # parameter.a, parameter.b, ...
                    job[name] = cell
            if job:
                rows.append((line, job))
    return rows


def _csv_cell(path: Path, line: int, column: str, value: str) -> dict[str, Any]:
    head, _, name = column.partition(".")
    if head in OBJECT_FIELDS and not name:
        try:
            return {head: strict_json.loads(value)}
        except ValueError as exc:
            raise BadLine(path, line, f"column {column}: not JSON: {exc}") from None
    if head in OBJECT_FIELDS:
        return {head: {name: value if head == "files" else _scalar(value)}}
    return {column: value}


def _scalar(text: str) -> Any:
    """A CSV cell as JSON when it is JSON (numbers, true, ...), else as the string."""
    try:
        return strict_json.loads(text)
    except ValueError:  # not JSON (NaN included): the cell's text
        return text


def _job(path: Path, line: int, merged: dict[str, Any], base: Path) -> BatchJob:
    unknown = sorted(set(merged) - FIELDS)
    if unknown:
        raise BadLine(path, line, f"unknown field(s): {', '.join(unknown)}")
    if merged.get("skill_id") in (None, ""):
        raise BadLine(path, line, "skill_id is missing")
    if not isinstance(merged["skill_id"], str):
        raise BadLine(path, line, "skill_id must be a string")
    for name in ("engine", "model"):
        if merged.get(name) is not None and not isinstance(merged[name], str):
            raise BadLine(path, line, f"{name} must be a string")
    for name in OBJECT_FIELDS:
        if not isinstance(merged.get(name, {}), dict):
            raise BadLine(path, line, f"{name} must be an object")
    key = str(merged.get("key", line))
    if not KEY.fullmatch(key):
        raise BadLine(path, line, f"key '{key}' is not 1-128 letters, digits and ._- (nor . or ..)")
    files = {}
    for field_name, file_path in (merged.get("files") or {}).items():
        if not isinstance(file_path, str):
            raise BadLine(path, line, f"files.{field_name} must be a path")
        resolved = (base / file_path).resolve()
        if not resolved.is_file():
            raise BadLine(path, line, f"files.{field_name}: no file at {file_path}")
        files[field_name] = str(resolved)
    return BatchJob(
        key=key,
        line=line,
        skill_id=merged["skill_id"],
        engine=merged.get("engine"),
        model=merged.get("model"),
        parameter=merged.get("parameter") or {},
        input=merged.get("input") or {},
        files=files,
        runtime_options=merged.get("runtime_options") or {},
    )
