"""The run-directory files the output chain reads and writes."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner_core.in_run import remove_in_run, run_folder, write_at, write_in_run

RAW_TEXT = Path("raw/engine_output.txt")
RAW_ENVELOPE = Path("raw/engine_output.json")
RESULT_FILE = Path("result/result.json")
OUTPUT_FILE = Path("result/output.json")
VALIDATION_FILE = Path("result/validation.json")
# Written only when a skill command needs a schema file and the caller gave none.
SCHEMA_COPY = Path("result/output.schema.json")


@dataclass(frozen=True)
class RawOutput:
    """Where the engine's raw output was saved."""

    text_path: Path
    envelope_path: Path | None

    @property
    def primary_path(self) -> Path:
        """The file that best holds what the engine said: its text, else its envelope."""
        if self.envelope_path is not None and self.text_path.stat().st_size == 0:
            return self.envelope_path
        return self.text_path


def write_json(run_dir: Path, rel: Path, value: Any) -> None:
    """Write `value` as indented UTF-8 JSON to `rel` below `run_dir`, its folders made."""
    # default=str: envelopes come from CLIs and may hold values json cannot encode natively
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    write_text(run_dir, rel, text + "\n")


def write_results(run_dir: Path, values: dict[Path, Any]) -> None:
    """write_json of each `result/<name>` value, through one walk down to `result/`."""
    dfd = run_folder(run_dir, "result")
    try:
        for rel, value in values.items():
            text = json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n"
            write_at(dfd, rel.name, text.encode("utf-8"), atomic=False)
    finally:
        os.close(dfd)


def write_text(run_dir: Path, rel: Path, text: str) -> None:
    """Write `text` (UTF-8) to `rel` below `run_dir`, never through a link the run planted on
    the way (its folders made when missing)."""
    write_in_run(run_dir, rel.as_posix(), text.encode("utf-8"), atomic=False)


def write_raw_output(
    run_dir: Path, engine_text: str | None, envelope: Any, text_file: Path | None = None
) -> RawOutput:
    """Save the engine's text (empty when there is none) and its envelope (when there is one).
    `text_file` already holds the text: it is hard-linked (a new name costs far less than a
    new file), or copied where links are not possible."""
    text_path = run_dir / RAW_TEXT
    if not (text_file is not None and link_file(text_file, run_dir, RAW_TEXT)):
        write_text(run_dir, RAW_TEXT, engine_text or "")
    envelope_path = None
    if envelope is not None:
        envelope_path = run_dir / RAW_ENVELOPE
        write_json(run_dir, RAW_ENVELOPE, envelope)
    return RawOutput(text_path, envelope_path)


def link_file(source: Path, run_dir: Path, rel: Path) -> bool:
    """Hard-link `source` (not a link in its place) as `rel` below `run_dir`, replacing what is
    there; False when the file system refuses."""
    try:
        dfd = run_folder(run_dir, rel.parent.as_posix())
    except OSError:
        return False
    try:
        for _attempt in range(3):
            try:
                os.link(source, rel.name, dst_dir_fd=dfd, follow_symlinks=False)
                return True
            except FileExistsError:
                remove_in_run(run_dir, rel.as_posix())
            except OSError:
                return False
        return False
    finally:
        os.close(dfd)


def read_result_file(run_dir: Path, relative: Path = RESULT_FILE) -> str | None:
    """Return the text of the result file (result/result.json unless the skill names another),
    or None when it does not exist or is a link leading out of the run (never read through)."""
    path = run_dir / relative
    if not path.is_file() or not path.resolve().is_relative_to(run_dir.resolve()):
        return None
    # errors="replace": a skill that writes Latin-1 should get a validation error, not a crash
    return path.read_text(encoding="utf-8", errors="replace")


def ensure_schema_file(run_dir: Path, schema: Any, schema_path: Path | None) -> Path:
    """Return `schema_path`, or write the schema into the run directory and return that path."""
    if schema_path is not None:
        return schema_path
    write_json(run_dir, SCHEMA_COPY, schema)
    return run_dir / SCHEMA_COPY
