"""What tests of every tier share: waiting on a condition, zip bodies, settings on a fresh
directory. Fixtures live in the conftest.py files and build on these; tests import from here,
never from a conftest."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar

import pytest

from runner_core.engines.base import EngineContext, ProcessResult
from runner_core.settings import REPO_ROOT, Settings, load_settings
from runner_core.statuses import TERMINAL_STATUSES
from tests.databases import migrate

T = TypeVar("T")
TEST_SKILLS = Path(__file__).parent / "skills"

# For tests whose SQL differs by dialect (keyset pages, timestamps): the API tier's `settings`
# fixture runs them on both databases.
BOTH_DATABASES = pytest.mark.parametrize("settings", ["sqlite", "postgres"], indirect=True)


def wait_for(
    condition: Callable[[], T],
    timeout: float = 5.0,
    interval: float = 0.05,
    what: str = "condition",
) -> T:
    """Poll `condition` until it returns something truthy and return that; fail the test when
    `timeout` seconds pass first."""
    end = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= end:
            raise AssertionError(f"{what} not met within {timeout} s")
        time.sleep(interval)


def wait_for_job(
    client: Any,
    request_id: str,
    timeout: float = 30.0,
    until: Collection[str] = TERMINAL_STATUSES,
    interval: float = 0.05,
    headers: dict[str, str] | None = None,
) -> dict:
    """The job's status document once its status is one of `until` (by default: it ended)."""
    last: list[dict] = [{}]

    def reached() -> dict | None:
        last[0] = client.get(f"/v1/jobs/{request_id}", headers=headers).json
        return last[0] if last[0]["status"] in until else None

    try:
        return wait_for(reached, timeout, interval)
    except AssertionError:
        raise AssertionError(
            f"job {request_id} still {last[0]['status']} after {timeout} s"
        ) from None


ZIP_TIME = (2024, 1, 1, 0, 0, 0)


def run_python(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter of the service's environment, from the checkout (its
    output captured as text): for what must not happen in the test's own process."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=timeout,
    )


def zip_bytes(files: dict[str, bytes | str]) -> bytes:
    """An in-memory zip of name -> content; the same files give the same bytes (a fixed entry
    time: a zip stamped with the clock differs across a 2 s boundary, and so does its hash)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            # the permissions ZipFile.writestr gives an entry named by a string
            info.external_attr = ((0o40775 << 16) | 0x10) if name.endswith("/") else 0o600 << 16
            zf.writestr(info, content)
    return buf.getvalue()


def upload_body(
    files: dict[str, bytes | str], field: str = "file", name: str = "inputs.zip"
) -> dict:
    """A multipart `data=` for the Flask test client: `files` zipped as one uploaded file."""
    return {field: (io.BytesIO(zip_bytes(files)), name)}


def copy_skills(dest: Path) -> Path:
    """The built-in skills plus the test skills, in one directory of their own."""
    dest.mkdir(parents=True, exist_ok=True)
    for source in (REPO_ROOT / "skills", TEST_SKILLS):
        for skill in source.iterdir():
            if skill.is_dir():
                shutil.copytree(skill, dest / skill.name, dirs_exist_ok=True)
    return dest


def make_settings(root: Path, **env: str) -> Settings:
    """Settings with the data and skills directories under `root`, plus `env`."""
    base = {
        "SKILL_RUNNER_DATA_DIR": str(root / "data"),
        "SKILL_RUNNER_SKILLS_DIR": str(root / "skills"),
    }
    base.update(env)
    return load_settings(base)


def migrated_settings(root: Path, **env: str) -> Settings:
    """`make_settings` with the data directory made and the database migrated (a SQLite file is
    a copy of the session's migrated template: tests/databases.py)."""
    settings = make_settings(root, **env)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    migrate(settings.database_url)
    return settings


TRANSCRIPTS = Path(__file__).parent / "engines" / "transcripts"


def recorded(name: str, exit_code: int | None, timed_out: bool = False) -> ProcessResult:
    """A process result whose stdout and stderr are a recorded CLI transcript
    (tests/engines/transcripts/<name>.stdout, .stderr)."""
    return ProcessResult(
        exit_code,
        TRANSCRIPTS / f"{name}.stdout",
        TRANSCRIPTS / f"{name}.stderr",
        0.0,
        1.0,
        timed_out=timed_out,
    )


def printed(
    folder: Path, exit_code: int | None, stdout: str = "", stderr: str = "", **kw: Any
) -> ProcessResult:
    """A process result whose captured stdout and stderr (files in `folder`) hold these texts."""
    (folder / "stdout").write_text(stdout)
    (folder / "stderr").write_text(stderr)
    return ProcessResult(exit_code, folder / "stdout", folder / "stderr", 0.0, 1.0, **kw)


def engine_context(run_dir: Path, *, config: dict[str, Any], **overrides: Any) -> EngineContext:
    """An adapter's input in command tests: skill `demo`, prompt `do it`, `config`."""
    values = {"run_dir": run_dir, "skill_id": "demo", "prompt": "do it", "config": config}
    return EngineContext(**{**values, **overrides})


# API tokens of the auth tests: name -> (token, scopes)
TOKENS = {
    "alice": ("alice-token-0123456789abcdef", ["read", "submit"]),
    "bob": ("bob-token-0123456789abcdef", ["read", "submit"]),
    "reader": ("reader-token-0123456789abcdef", ["read"]),
    "root": ("root-token-0123456789abcdef", ["admin"]),
}


def write_tokens_file(path: Path, tokens: dict[str, tuple[str, list[str]]]) -> Path:
    """A tokens file (one JSON line per token, its hash only) with `tokens`."""
    import hashlib
    import json

    lines = [
        json.dumps({"name": n, "sha256": hashlib.sha256(t.encode()).hexdigest(), "scopes": s})
        for n, (t, s) in tokens.items()
    ]
    path.write_text("".join(line + "\n" for line in lines))
    return path


def bearer(name_or_token: str) -> dict[str, str]:
    """The Authorization header of a token of TOKENS (by name) or of a literal token."""
    token = TOKENS[name_or_token][0] if name_or_token in TOKENS else name_or_token
    return {"Authorization": f"Bearer {token}"}


def fill_disk(path: Path) -> None:
    """Write zeros into `path` until the disk under it is full. Unbuffered: closing has nothing
    left to flush onto the full disk, and a disk already full when this starts is fine."""
    chunk = b"\0" * (1 << 20)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:
        return
    try:
        while True:
            os.write(fd, chunk)
    except OSError:
        pass
    finally:
        os.close(fd)
