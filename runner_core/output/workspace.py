"""The run-directory files the output chain reads and writes."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner_core.workspace import write_file

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


def write_json(path: Path, value: Any) -> None:
    """Write `value` as indented UTF-8 JSON, creating parent directories."""
    # default=str: envelopes come from CLIs and may hold values json cannot encode natively
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    write_text(path, text + "\n")


def write_text(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path`; its folder is made only when it is missing."""
    data = text.encode("utf-8")
    try:
        write_file(path, data, atomic=False)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, data, atomic=False)


def write_raw_output(
    run_dir: Path, engine_text: str | None, envelope: Any, text_file: Path | None = None
) -> RawOutput:
    """Save the engine's text (empty when there is none) and its envelope (when there is one).
    `text_file` already holds the text: it is hard-linked (a new name costs far less than a
    new file), or copied where links are not possible."""
    text_path = run_dir / RAW_TEXT
    if not (text_file is not None and link_file(text_file, text_path)):
        write_text(text_path, engine_text or "")
    envelope_path = None
    if envelope is not None:
        envelope_path = run_dir / RAW_ENVELOPE
        write_json(envelope_path, envelope)
    return RawOutput(text_path, envelope_path)


def link_file(source: Path, dest: Path) -> bool:
    """Hard-link `source` as `dest` (replacing `dest`); False when the file system refuses."""
    for _attempt in range(3):
        try:
            os.link(source, dest)
            return True
        except FileExistsError:
            dest.unlink(missing_ok=True)
        except FileNotFoundError:
            if not source.exists():
                return False
            dest.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            return False
    return False


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
    path = run_dir / SCHEMA_COPY
    write_json(path, schema)
    return path
