"""Secret values: which variables are secrets, how they are masked in text, bytes, files and
log lines, and `hold`: a held secret leaves os.environ and /proc/<pid>/environ but the
service still reads it."""

from __future__ import annotations

import json
import logging
import os
import sys

from runner_core.logs import JsonFormatter, TextFormatter
from runner_core.secret_values import (
    MASK,
    is_secret,
    mask_bytes,
    mask_file,
    redact,
    remember,
    url_password,
)


def test_secrets_are_known_by_name_or_by_a_password_in_their_url() -> None:
    for name in (
        "OPENAI_API_KEY",
        "SKILL_RUNNER_API_TOKEN",
        "SKILL_RUNNER_WEBHOOK_SECRET",
        "PGPASSWORD",
        "DATABASE_URL",
        "CELERY_BROKER_URL",
    ):
        assert is_secret(name, "anything")
    assert is_secret("UV_INDEX_URL", "https://me:pw-123@index.example/simple")
    assert not is_secret("PATH", "/usr/bin") and not is_secret("TEST_REDIS_URL", "redis://h:6379")
    assert url_password("postgresql://app:s3cr3t-pw@db/x") == "s3cr3t-pw"
    assert url_password("sqlite:///data/runs.db") is None


def test_a_remembered_value_is_masked_as_it_is_and_inside_json() -> None:
    value = 'quote"d-secret-4a1b'
    remember(value, "short", "redis://:broker-pw-77a1@127.0.0.1:6379/0")
    line = json.dumps({"env": f"KEY={value}", "url": "redis://:broker-pw-77a1@h"})
    assert value not in redact(line) and json.dumps(value)[1:-1] not in redact(line)
    assert "broker-pw-77a1" not in redact(line) and MASK in redact(line)
    assert redact("a short word") == "a short word"  # under MIN_LENGTH: not a secret
    remember("sqlite:////data/runs.db", "redis://127.0.0.1:6379/0")  # no password: nothing
    assert redact("broker redis://127.0.0.1:6379/0") == "broker redis://127.0.0.1:6379/0"


def test_masking_bytes_and_files_keeps_their_length(tmp_path) -> None:
    remember("file-secret-93c2e")
    data = b"before file-secret-93c2e after"
    assert mask_bytes(data) == b"before " + b"*" * 17 + b" after"
    log = tmp_path / "stdout.txt"
    log.write_bytes(b"file-secret-93c2e\n" + data)
    assert mask_file(log, start=18) == 1  # only what follows the offset
    assert log.read_bytes() == b"file-secret-93c2e\n" + mask_bytes(data)


def test_log_lines_mask_remembered_values_in_messages_and_tracebacks() -> None:
    remember("log-secret-5d7f1")
    try:
        raise ValueError("connect failed with log-secret-5d7f1")
    except ValueError:
        record = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "key %s", ("log-secret-5d7f1",), sys.exc_info()
        )
    for formatter in (TextFormatter("%(message)s"), JsonFormatter()):
        line = formatter.format(record)
        assert "log-secret-5d7f1" not in line and MASK in line


def test_a_log_reached_through_a_folder_link_is_not_masked(tmp_path) -> None:
    remember("linked-secret-61d0f")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "stdout.txt").write_text("linked-secret-61d0f")
    os.symlink(outside, tmp_path / "logs")  # a run's logs/ replaced by a link
    assert mask_file(tmp_path / "logs" / "stdout.txt") == 0
    assert (outside / "stdout.txt").read_text() == "linked-secret-61d0f"
