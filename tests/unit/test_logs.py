from __future__ import annotations

import json
import logging

from runner_core.logs import (
    JsonFormatter,
    RunContextFilter,
    SharedRotatingFileHandler,
    TextFormatter,
    bind,
    run_context,
)


def record(message: str, **extra) -> logging.LogRecord:
    made = logging.LogRecord("worker.tasks", logging.INFO, __file__, 1, message, (), None)
    made.__dict__.update(extra)
    RunContextFilter().filter(made)
    return made


def test_a_json_line_carries_the_run_and_request_ids_of_its_context() -> None:
    with run_context("run-1", None):
        bind(request_id="req-1")
        inside = json.loads(JsonFormatter().format(record("claimed")))
    outside = json.loads(JsonFormatter().format(record("idle")))
    assert (inside["run_id"], inside["request_id"], inside["message"]) == (
        "run-1",
        "req-1",
        "claimed",
    )
    assert inside["level"] == "INFO" and inside["logger"] == "worker.tasks" and inside["pid"]
    assert (outside["run_id"], outside["request_id"]) == (None, None)


def test_a_text_line_names_the_ids_only_when_it_is_about_a_run() -> None:
    text = TextFormatter("%(levelname)s %(message)s")
    with run_context("run-2", "req-2"):
        assert text.format(record("ended")) == "INFO ended run_id=run-2 request_id=req-2"
    assert text.format(record("swept")) == "INFO swept"
    assert text.format(record("revoked", run_id="run-3")) == "INFO revoked run_id=run-3"


def test_the_file_rotates_by_size_and_keeps_the_backup_count(tmp_path) -> None:
    path = tmp_path / "service.log"
    handler = SharedRotatingFileHandler(path, maxBytes=1000, backupCount=2)
    handler.setFormatter(logging.Formatter("%(message)s"))
    for i in range(100):
        handler.emit(record(f"line {i:03d} " + "x" * 40))
    handler.close()
    files = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock"))
    assert files == ["service.log", "service.log.1", "service.log.2"]
    assert all((tmp_path / name).stat().st_size <= 1000 for name in files)
    assert (tmp_path / "service.log").read_text().splitlines()[-1].startswith("line 099")


def test_a_line_logged_for_a_request_names_its_token_until_the_next_request() -> None:
    from runner_core.logs import bind_caller

    text = TextFormatter("%(message)s")
    bind_caller("alice")
    try:
        assert text.format(record("cancel")) == "cancel caller=alice"
        assert json.loads(JsonFormatter().format(record("cancel")))["caller"] == "alice"
        bind_caller(None)
        assert text.format(record("cancel")) == "cancel"
    finally:
        bind_caller(None)
