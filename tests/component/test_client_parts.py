"""Parts of the client package that need no service: batch files, the batch summary after a
crash, Retry-After, the transport's retries against a small local HTTP server, and the command
line's own errors."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from skill_runner_client import Client, SkillRunnerError
from skill_runner_client.batch import read_summary
from skill_runner_client.batch_file import BadLine, read_batch
from skill_runner_client.cli import main as cli_main
from skill_runner_client.commands import pairs
from skill_runner_client.progress import Progress
from skill_runner_client.transport import retry_after_sec
from tests.imports import outside_stdlib


def test_jsonl_lines_become_jobs_with_stable_idempotency_keys(tmp_path):
    (tmp_path / "a.txt").write_text("1")
    path = tmp_path / "jobs.jsonl"
    path.write_text(
        '{"skill_id": "s", "files": {"input_file": "a.txt"}}\n\n'
        '{"key": "k2", "skill_id": "s", "parameter": {"n": 1}, "engine": "codex"}\n'
    )
    first, second = read_batch(path)
    assert (first.key, first.line, first.files) == ("1", 1, {"input_file": str(tmp_path / "a.txt")})
    assert (second.key, second.parameter, second.engine) == ("k2", {"n": 1}, "codex")
    assert first.idempotency_key(path) == read_batch(path)[0].idempotency_key(path)
    assert first.idempotency_key(path) != second.idempotency_key(path)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"skill_id": "s"}\nnot json\n', "2: not JSON"),
        ("[1]\n", "1: not a JSON object"),
        ('{"engine": "codex"}\n', "1: skill_id is missing"),
        ('{"skill_id": 5}\n', "1: skill_id must be a string"),
        ('{"skill_id": "s", "colour": 1}\n', "1: unknown field(s): colour"),
        ('{"skill_id": "s", "key": "a/b"}\n', "1: key 'a/b' is not"),
        ('{"skill_id": "s", "key": ".."}\n', "1: key '..' is not"),  # artifacts/.. is --out
        ('{"skill_id": "s", "key": "."}\n', "1: key '.' is not"),
        (
            '{"skill_id": "s", "key": "a"}\n{"skill_id": "s", "key": "a"}\n',
            "2: key 'a' repeats line 1",
        ),
        ('{"skill_id": "s", "files": {"f": "gone.txt"}}\n', "1: files.f: no file at gone.txt"),
    ],
)
def test_a_bad_line_is_named(tmp_path, text, reason):
    path = tmp_path / "jobs.jsonl"
    path.write_text(text)
    with pytest.raises(BadLine) as bad:
        read_batch(path)
    assert f"jobs.jsonl:{reason}" in str(bad.value)


def test_a_csv_row_with_more_cells_than_its_header_is_a_bad_line(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("key,skill_id,input.text\na,s,hello, world\nb,s,x,,\n")  # b: empty cells
    with pytest.raises(BadLine) as bad:
        read_batch(path)
    assert "jobs.csv:2: more cells than the header's 3 columns" in str(bad.value)
    assert "[' world']" in str(bad.value)  # not input.text "hello", the rest dropped unread
    path.write_text("key,skill_id,input.text\nb,s,x,,\n")
    assert read_batch(path)[0].input == {"text": "x"}


def test_csv_columns_build_objects(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text(
        'key,skill_id,parameter.n,parameter.name,input,runtime_options\na,s,3,x,"{""t"": 1}",\n'
    )
    (job,) = read_batch(path)
    assert job.parameter == {"n": 3, "name": "x"}
    assert job.input == {"t": 1} and job.runtime_options == {}


def test_the_summary_drops_a_torn_line_and_refused_jobs(tmp_path):
    lines = [
        {"key": "a", "status": "succeeded"},
        {"key": "b", "status": "rejected"},
        {"key": "c", "status": "failed"},
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines) + '{"key": "d", "sta'
    (tmp_path / "summary.jsonl").write_text(body)
    assert sorted(read_summary(tmp_path)) == ["a", "c"]
    kept = (tmp_path / "summary.jsonl").read_text().splitlines()
    assert [json.loads(line)["key"] for line in kept] == ["a", "c"]


def test_retry_after_as_seconds_or_a_date():
    assert retry_after_sec("5", 1.0) == 5.0
    assert retry_after_sec(None, 1.5) == 1.5
    assert retry_after_sec("soon", 2.0) == 2.0
    assert 0.0 <= retry_after_sec(formatdate(usegmt=True), 9.0) <= 1.0


class Scripted(BaseHTTPRequestHandler):
    """Answers each request with the next (status, headers, body) of the server's script, or
    drops the connection for a None."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        step = self.server.script.pop(0)  # type: ignore[attr-defined]
        self.server.seen.append(self.path)  # type: ignore[attr-defined]
        self.server.tokens.append(self.headers.get("Authorization"))  # type: ignore[attr-defined]
        if step is None:  # the connection drops before any answer
            self.close_connection = True
            return
        status, headers, body = step
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        data = json.dumps(body).encode()
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.do_GET()

    def log_message(self, *_args) -> None:
        pass


@pytest.fixture
def scripted():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    server.script, server.seen, server.tokens = [], [], []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def busy(status: int) -> tuple[int, dict, dict]:
    code = "QUEUE_FULL" if status == 429 else "DATABASE_UNAVAILABLE"
    error = {"code": code, "message": "later", "details": {}, "request_id": "r"}
    return status, {"Retry-After": "0"}, {"error": error}


def test_429_and_503_are_retried_then_answered(scripted):
    scripted.script += [busy(429), busy(503), (200, {}, [{"id": "s"}])]
    with Client(f"http://127.0.0.1:{scripted.server_port}") as client:
        assert client.skills() == [{"id": "s"}]
    assert scripted.seen == ["/v1/skills"] * 3


def test_retries_end_with_the_last_error_body(scripted):
    scripted.script += [busy(503), busy(503)]
    with Client(f"http://127.0.0.1:{scripted.server_port}", max_retries=1) as client:
        with pytest.raises(SkillRunnerError) as error:
            client.skills()
    assert (error.value.status, error.value.code, error.value.request_id) == (
        503,
        "DATABASE_UNAVAILABLE",
        "r",
    )


@pytest.mark.parametrize(
    "url", ["localhost:8000", "ftp://host", "http://", "http://[::1", "http://host:99999"]
)
def test_a_server_url_that_is_not_http_is_refused_by_name(url):
    with pytest.raises(ValueError, match=f"server URL '{re.escape(url)}': expected http"):
        Client(url)


def test_a_base_url_with_a_path_prefixes_every_route(scripted):
    scripted.script.append((200, {}, []))
    with Client(f"http://127.0.0.1:{scripted.server_port}/runner/") as client:
        assert client.skills() == []
    assert scripted.seen == ["/runner/v1/skills"]


def test_an_answer_that_is_not_the_error_body_is_still_one_error(scripted):
    scripted.script.append((502, {}, "bad gateway"))
    with Client(f"http://127.0.0.1:{scripted.server_port}") as client:
        with pytest.raises(SkillRunnerError) as error:
            client.skills()
    assert (error.value.status, error.value.code) == (502, "UNEXPECTED_RESPONSE")


def test_the_client_package_imports_neither_flask_nor_celery():
    root = Path(__file__).resolve().parents[2] / "client" / "skill_runner_client"
    assert {line.split(": ")[1].split(".")[0] for line in outside_stdlib(root)} == {"urllib3"}


def test_a_multipart_body_streams_files_from_their_position_with_its_length(tmp_path):
    from io import BytesIO

    from werkzeug.formparser import parse_form_data

    from skill_runner_client import multipart

    upload = tmp_path / "inputs.zip"
    upload.write_bytes(b"skip" + bytes(range(256)) * 1000)
    with upload.open("rb") as fh:
        fh.seek(4)  # a body that starts mid-file (a zip spooled after other data)
        body, content_type = multipart.encode(
            {"request": '{"a": "é"}'}, {"file": ('in "x".zip', fh, "application/zip")}
        )
        sent = b"".join(iter(lambda: body.read(7000), b""))
    assert len(sent) == body.length
    environ = {
        "REQUEST_METHOD": "POST",
        "CONTENT_TYPE": content_type,
        "CONTENT_LENGTH": str(len(sent)),
        "wsgi.input": BytesIO(sent),
    }
    _stream, form, files = parse_form_data(environ)
    assert form["request"] == '{"a": "é"}'
    assert files["file"].read() == bytes(range(256)) * 1000
    assert files["file"].mimetype == "application/zip"


def test_the_progress_line_adds_up_the_tokens_and_cost_jobs_reported():
    out = io.StringIO()
    progress = Progress(3, stream=out)
    assert "tokens" not in progress.line()  # nothing reported yet: nothing shown
    progress.ended(True, "a", usage={"input_tokens": 40_000, "output_tokens": 50, "cost_usd": 0.1})
    progress.ended(True, "b", usage={"input_tokens": 2_000, "output_tokens": 3, "cost_usd": 0.05})
    progress.ended(False, "c", usage=None)
    line = progress.line()
    assert "42,000 tokens in, 53 out, $0.1500" in line, line
    assert "2 succeeded, 1 failed" in line


def not_found(noun: str) -> tuple[int, dict, dict]:
    message = f"no {noun} with request_id 'nope'"
    error = {"code": "REQUEST_NOT_FOUND", "message": message, "details": {}, "request_id": "nope"}
    return 404, {}, {"error": error}


@pytest.mark.parametrize("args", [["status"], ["wait"], ["logs"], ["cancel"]])
def test_an_unknown_id_is_neither_a_job_nor_a_one_off_run(scripted, capsys, args):
    scripted.script += [not_found("job"), not_found("one-off run")]
    code = cli_main([*args, "nope", "--server", f"http://127.0.0.1:{scripted.server_port}"])
    assert code == 1
    assert capsys.readouterr().err == (
        "skill-runner-client: REQUEST_NOT_FOUND: no job or one-off run has the id 'nope'\n"
    )
    assert scripted.seen == ["/v1/jobs/nope", "/v1/temp-skill-runs/nope"]


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["submit", "s", "--wait", "--timeout", "-5"], "--timeout: must be a number of seconds"),
        (["wait", "x", "--timeout", "-0.5"], "--timeout: must be a number of seconds"),
        (["result", "x", "--wait", "--timeout", "nan"], "--timeout: must be a number of seconds"),
        (["reply", "x", "--text", "t", "--interaction-id", "0"], "--interaction-id: must be at"),
        (["list", "--limit", "ten"], "--limit: 'ten' is not a whole number"),
    ],
)
def test_a_number_out_of_range_is_a_usage_error(capsys, args, reason):
    with pytest.raises(SystemExit) as exit:
        cli_main([*args, "--server", "http://127.0.0.1:9"])  # nothing is sent
    assert exit.value.code == 2
    assert f"error: argument {reason}" in capsys.readouterr().err


def test_result_wait_gives_up_after_its_timeout(scripted, capsys):
    scripted.script += [(200, {}, {"request_id": "x", "status": "running"})] * 3
    url = f"http://127.0.0.1:{scripted.server_port}"
    assert cli_main(["result", "x", "--wait", "--timeout", "0", "--server", url]) == 1
    assert capsys.readouterr().err == "skill-runner-client: x still running after 0.0 s\n"


def test_install_of_a_file_that_is_not_there_names_it(tmp_path, capsys):
    code = cli_main(["install", str(tmp_path / "nofile.zip"), "--server", "http://127.0.0.1:9"])
    assert code == 2
    assert capsys.readouterr().err == (
        f"skill-runner-client: install: no package zip or skill folder at {tmp_path / 'nofile.zip'}\n"
    )


def test_a_batch_over_an_earlier_one_without_resume_is_a_usage_error(tmp_path, capsys):
    jobs = tmp_path / "good.jsonl"
    jobs.write_text('{"skill_id": "s"}\n')
    out = tmp_path / "good.out"
    out.mkdir()
    (out / "summary.jsonl").write_text('{"key": "1", "status": "succeeded"}\n')
    args = ["batch", str(jobs), "--out", str(out), "--server", "http://127.0.0.1:9"]
    assert cli_main(args) == 2
    assert capsys.readouterr().err == (
        f"skill-runner-client: {out / 'summary.jsonl'} holds an earlier batch: "
        "--resume continues it\n"
    )


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["submit", "s", "--parameters", "{n: 1}"], "--parameters"),
        (["submit", "s", "--input-json", "nope"], "--input-json"),
        (["reply", "x", "--response", "{"], "--response"),
    ],
)
def test_an_option_that_is_not_json_is_named_before_anything_is_sent(capsys, args, option):
    assert cli_main([*args, "--server", "http://127.0.0.1:9"]) == 2
    assert capsys.readouterr().err.startswith(f"skill-runner-client: {option} is not JSON: ")


def test_a_batch_file_that_is_not_there_is_named(tmp_path, capsys):
    args = ["batch", str(tmp_path / "nofile.jsonl"), "--server", "http://127.0.0.1:9"]
    assert cli_main(args) == 2
    assert capsys.readouterr().err == (
        f"skill-runner-client: no batch file at {tmp_path / 'nofile.jsonl'}\n"
    )


def test_a_missing_input_file_is_named_before_any_job_is_created(tmp_path):
    missing = tmp_path / "missing.txt"
    package = tmp_path / "pkg.zip"
    package.write_bytes(b"PK")
    # nothing listens there: any request would fail as CONNECTION_FAILED instead
    with Client("http://127.0.0.1:9", max_retries=0) as client:
        with pytest.raises(FileNotFoundError, match="no file for input 'input_file'"):
            client.jobs.create("demo-prime-number", files={"input_file": missing})
        with pytest.raises(FileNotFoundError, match=str(missing)):
            client.temp_runs.create(package, files={"input_file": str(missing)})


def unwritable(tmp_path: Path, where: str) -> tuple[Path, str]:
    """A path a file cannot be written at, and the reason the command line gives."""
    (tmp_path / "file.txt").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    return {
        "under /proc": (Path("/proc/no-such-dir/b.zip"), "No such file or directory"),
        "under a file": (tmp_path / "file.txt" / "b.zip", "Not a directory"),
        "a directory": (tmp_path, "Is a directory"),
        "a fifo": (tmp_path / "fifo", "Not a regular file"),
    }[where]


@pytest.mark.parametrize("where", ["under /proc", "under a file", "a directory", "a fifo"])
def test_a_bundle_path_that_cannot_be_written_is_named_with_exit_2(
    scripted, capsys, tmp_path, where
):
    path, reason = unwritable(tmp_path, where)
    scripted.script += [(200, {}, {"request_id": "x", "status": "succeeded"}), (200, {}, {})]
    url = f"http://127.0.0.1:{scripted.server_port}"
    assert cli_main(["bundle", "x", "-o", str(path), "--server", url]) == 2
    assert capsys.readouterr().err == f"skill-runner-client: cannot write {path}: {reason}\n"
    assert stat.S_ISFIFO((tmp_path / "fifo").stat().st_mode)  # never replaced by the download
    assert not list(tmp_path.glob("*.part"))


@pytest.mark.parametrize("where", ["under /proc", "under a file"])
def test_a_batch_out_that_cannot_be_written_is_named_and_nothing_is_sent(
    scripted, capsys, tmp_path, where
):
    out, reason = unwritable(tmp_path, where)
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"skill_id": "s"}\n')
    url = f"http://127.0.0.1:{scripted.server_port}"
    assert cli_main(["batch", str(jobs), "--out", str(out), "--server", url]) == 2
    assert capsys.readouterr().err == f"skill-runner-client: cannot write {out}: {reason}\n"
    assert scripted.seen == []


def test_a_result_that_cannot_be_written_stops_the_batch_naming_it(scripted, capsys, tmp_path):
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"key": "a", "skill_id": "s"}\n')
    out = tmp_path / "out"
    (out / "results" / "a.json").mkdir(parents=True)  # where the result file goes
    result = {"request_id": "r", "result": {"status": "succeeded", "data": {}}}
    scripted.script += [(200, {}, {"request_id": "r", "status": "queued"}), (200, {}, result)]
    url = f"http://127.0.0.1:{scripted.server_port}"
    assert cli_main(["batch", str(jobs), "--out", str(out), "--server", url]) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    path = out / "results" / "a.json"
    assert last == (
        f"skill-runner-client: the batch stopped: cannot write {path}: Is a directory; "
        "--resume continues it"
    )


def test_a_resumed_batch_waits_for_its_own_jobs_whatever_else_the_summary_holds(
    scripted, capsys, tmp_path
):
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(f'{{"key": "k{i}", "skill_id": "s"}}\n' for i in range(3)))
    out = tmp_path / "out"
    out.mkdir()
    # lines of keys the file no longer has (it was edited since): they finish none of its jobs
    stale = [{"key": f"old{i}", "status": "succeeded"} for i in range(3)]
    (out / "summary.jsonl").write_text("".join(json.dumps(line) + "\n" for line in stale))
    created = [(200, {}, {"request_id": f"r{i}", "status": "queued"}) for i in range(3)]
    results = [
        (200, {}, {"request_id": f"r{i}", "result": {"status": "succeeded", "data": {}}})
        for i in range(3)
    ]
    scripted.script += created + results
    url = f"http://127.0.0.1:{scripted.server_port}"
    args = ["batch", str(jobs), "--out", str(out), "--resume", "--concurrency", "1"]
    assert cli_main([*args, "--server", url]) == 0
    assert sorted(p.name for p in (out / "results").iterdir()) == ["k0.json", "k1.json", "k2.json"]
    assert "3/3 done: 3 succeeded, 0 failed, 0 running" in capsys.readouterr().err


def test_an_edited_job_gets_a_new_idempotency_key_and_an_unchanged_one_keeps_its_own(tmp_path):
    (tmp_path / "a.txt").write_text("10\n")
    path = tmp_path / "jobs.jsonl"
    path.write_text(
        '{"key": "a", "skill_id": "s", "parameter": {"n": 1}, "files": {"f": "a.txt"}}\n'
    )
    first = read_batch(path)[0].idempotency_key(path)
    assert read_batch(path)[0].idempotency_key(path) == first  # a rerun, a --resume
    (tmp_path / "a.txt").write_text("30\n")  # the input file fixed: not the old upload's result
    second = read_batch(path)[0].idempotency_key(path)
    assert second != first
    path.write_text(
        '{"key": "a", "skill_id": "s", "parameter": {"n": 2}, "files": {"f": "a.txt"}}\n'
    )
    assert read_batch(path)[0].idempotency_key(path) not in (first, second)  # the line edited


class NotTheService(BaseHTTPRequestHandler):
    """Another web server at the URL: a page for every path, and an empty 404 (a proxy's)."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b"" if self.path.startswith("/empty") else b"<html>Welcome to nginx!</html>"
        self.send_response(404 if self.path.startswith("/empty") else 200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *_args) -> None:
        pass


@pytest.mark.parametrize(
    ("args", "prefix", "message"),
    [
        (["status", "x"], "", "HTTP 200 that is not JSON: <html>Welcome to nginx!</html>"),
        (["submit", "s"], "", "HTTP 200 that is not JSON: <html>Welcome to nginx!</html>"),
        (["list"], "/empty", "HTTP 404 with an empty body"),
    ],
)
def test_a_server_that_is_not_the_service_is_one_line_saying_what_it_answered(
    capsys, args, prefix, message
):
    server = ThreadingHTTPServer(("127.0.0.1", 0), NotTheService)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}{prefix}"
        assert cli_main([*args, "--server", url]) == 1
    finally:
        server.shutdown()
        server.server_close()
    assert capsys.readouterr().err == f"skill-runner-client: UNEXPECTED_RESPONSE: {message}\n"


def test_a_request_id_is_sent_as_one_path_segment_or_refused(scripted, capsys):
    url = f"http://127.0.0.1:{scripted.server_port}"
    for rid in ("x/artifacts", ""):  # a / reaches another route even as %2F
        assert cli_main(["status", rid, "--server", url]) == 2
        assert capsys.readouterr().err == f"skill-runner-client: '{rid}' is not a request id\n"
    assert scripted.seen == []
    scripted.script += [not_found("job"), not_found("one-off run")]
    assert cli_main(["cancel", "x?y#z", "--server", url]) == 1  # never job x's cancel
    assert scripted.seen == ["/v1/jobs/x%3Fy%23z", "/v1/temp-skill-runs/x%3Fy%23z"]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("jobs.csv", "key,skill_id,parameter.n\r\na,s,3\r\n"),  # Excel's "CSV UTF-8"
        ("jobs.jsonl", '{"key": "a", "skill_id": "s", "parameter": {"n": 3}}\n'),
    ],
)
def test_a_batch_file_that_starts_with_a_byte_order_mark_is_read(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    (job,) = read_batch(path)
    assert (job.key, job.skill_id, job.parameter) == ("a", "s", {"n": 3})


def test_a_batch_job_waits_while_the_service_queue_is_full_instead_of_being_rejected(
    scripted, tmp_path
):
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"key": "a", "skill_id": "s"}\n')
    out = tmp_path / "out"
    full = {"code": "QUEUE_FULL", "message": "queue full", "details": {}, "request_id": None}
    # more 429s than the SDK's own 5 retries: the queue stays full a while, then takes the job
    scripted.script += [(429, {"Retry-After": "0"}, {"error": full})] * 8
    result = {"request_id": "r", "result": {"status": "succeeded", "data": {}}}
    scripted.script += [(200, {}, {"request_id": "r", "status": "queued"}), (200, {}, result)]
    url = f"http://127.0.0.1:{scripted.server_port}"
    assert cli_main(["batch", str(jobs), "--out", str(out), "--server", url]) == 0
    (entry,) = [json.loads(line) for line in (out / "summary.jsonl").read_text().splitlines()]
    assert (entry["status"], entry["request_id"]) == ("succeeded", "r")


def test_resume_never_continues_the_batch_of_another_file_in_the_same_out(
    scripted, capsys, tmp_path
):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):  # both default to ./jobs.out; their keys are line numbers
        (tmp_path / folder / "jobs.jsonl").write_text(f'{{"skill_id": "{folder}"}}\n')
    out = tmp_path / "jobs.out"
    result = {"request_id": "r", "result": {"status": "succeeded", "data": {}}}
    scripted.script += [(200, {}, {"request_id": "r", "status": "queued"}), (200, {}, result)]
    url = f"http://127.0.0.1:{scripted.server_port}"
    first = ["batch", str(tmp_path / "a" / "jobs.jsonl"), "--out", str(out), "--server", url]
    assert cli_main(first) == 0
    capsys.readouterr()
    other = ["batch", str(tmp_path / "b" / "jobs.jsonl"), "--out", str(out), "--resume"]
    assert cli_main([*other, "--server", url]) == 2  # a's line 1 is not b's line 1
    assert capsys.readouterr().err == (
        f"skill-runner-client: {out} holds the batch of {tmp_path / 'a' / 'jobs.jsonl'}: "
        f"give {tmp_path / 'b' / 'jobs.jsonl'} an --out of its own\n"
    )
    assert len(scripted.seen) == 2
    scripted.script += [(200, {}, result)]  # the same file resumes as before
    assert cli_main([*first, "--resume"]) == 0


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["status", ""], "BAD_ARGUMENT", "'' is not a request id"),
        (["wait", "x", "--timeout", "0"], "TIMEOUT", "x still running after 0.0 s"),
    ],
)
def test_with_json_a_failure_of_the_client_own_is_an_error_body_too(
    scripted, capsys, args, code, message
):
    scripted.script += [(200, {}, {"request_id": "x", "status": "running"})] * 2
    url = f"http://127.0.0.1:{scripted.server_port}"
    assert cli_main([*args, "--json", "--server", url]) in (1, 2)
    error = json.loads(capsys.readouterr().err)["error"]
    assert error == {"code": code, "message": message, "details": {}, "request_id": None}


def test_nan_and_infinity_are_not_json_so_values_typed_so_stay_text(tmp_path):
    assert pairs(["t=NaN", "u=-Infinity", "n=3"], "-i", True) == {
        "t": "NaN",
        "u": "-Infinity",
        "n": 3,
    }
    path = tmp_path / "jobs.csv"
    path.write_text("key,skill_id,input.text,parameter.n\na,s,NaN,Infinity\n")
    assert read_batch(path)[0].input == {"text": "NaN"}
    assert read_batch(path)[0].parameter == {"n": "Infinity"}
    path = tmp_path / "jobs.jsonl"
    path.write_text('{"skill_id": "s", "parameter": {"n": NaN}}\n')
    with pytest.raises(BadLine, match="jobs.jsonl:1: not JSON: NaN is not JSON"):
        read_batch(path)
    with Client("http://127.0.0.1:9", max_retries=0) as client:  # refused before it is sent
        with pytest.raises(ValueError, match="not JSON compliant"):
            client.jobs.create("s", parameter={"n": float("nan")})


class HoldsTheWait(BaseHTTPRequestHandler):
    """Creates the job, then holds its long poll open: the run goes on and on."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"request_id": "job-1", "status": "queued"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.waited.set()  # type: ignore[attr-defined]
        time.sleep(30)

    def log_message(self, *_args) -> None:
        pass


def test_ctrl_c_in_submit_wait_names_the_job_it_leaves_running():
    server = ThreadingHTTPServer(("127.0.0.1", 0), HoldsTheWait)
    server.waited = threading.Event()
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    cli = [sys.executable, "-m", "skill_runner_client.cli", "submit", "s", "--wait"]
    proc = subprocess.Popen([*cli, "--server", url], stderr=subprocess.PIPE, text=True)
    try:
        assert server.waited.wait(30)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        server.shutdown()
        server.server_close()
    assert proc.returncode == 130
    assert err.splitlines()[-1] == (
        "skill-runner-client: interrupted; job job-1 goes on (wait job-1 follows it)"
    )


def test_ctrl_c_in_a_batch_says_how_to_continue_it(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), HoldsTheWait)
    server.waited = threading.Event()
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"skill_id": "s"}\n')
    cli = [sys.executable, "-m", "skill_runner_client.cli", "batch", str(jobs)]
    cli += ["--out", str(tmp_path / "out")]
    url = f"http://127.0.0.1:{server.server_port}"
    proc = subprocess.Popen([*cli, "--server", url], stderr=subprocess.PIPE, text=True)
    try:
        assert server.waited.wait(30)  # its result is being waited for
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        server.shutdown()
        server.server_close()
    assert proc.returncode == 130
    assert err.splitlines()[-1] == (
        "skill-runner-client: interrupted; --resume continues the batch"
    )


def test_a_token_the_service_refuses_stops_the_batch_instead_of_rejecting_every_job(
    scripted, capsys, tmp_path
):
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(f'{{"key": "k{i}", "skill_id": "s"}}\n' for i in range(50)))
    out = tmp_path / "out"
    message = "the API token is not valid"
    error = {"code": "UNAUTHORIZED", "message": message, "details": {}, "request_id": "h"}
    scripted.script += [(401, {}, {"error": error})] * 50
    url = f"http://127.0.0.1:{scripted.server_port}"
    args = ["batch", str(jobs), "--out", str(out), "--concurrency", "1", "--server", url]
    assert cli_main(args) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"skill-runner-client: the batch stopped: 401 UNAUTHORIZED: {message}; "
        "--resume continues it"
    )
    assert len(scripted.seen) == 1  # not one refusal per job
    assert (out / "summary.jsonl").read_text() == ""


def test_a_batch_job_that_asks_a_question_ends_waiting_and_resume_collects_it(
    scripted, capsys, tmp_path
):
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"key": "a", "skill_id": "s"}\n')
    out = tmp_path / "out"
    asks = {
        "code": "RUN_NOT_FINISHED",
        "message": "the run is waiting_user; poll its status",
        "details": {"status": "waiting_user", "waiting_for_upload": False},
        "request_id": "r",
    }
    created = (200, {}, {"request_id": "r", "status": "queued"})
    scripted.script += [created, (409, {}, {"error": asks})]
    url = f"http://127.0.0.1:{scripted.server_port}"
    args = ["batch", str(jobs), "--out", str(out), "--server", url]
    assert cli_main(args) == 1  # it used to ask for the result every half second, for ever
    (entry,) = [json.loads(line) for line in (out / "summary.jsonl").read_text().splitlines()]
    assert (entry["status"], entry["request_id"]) == ("waiting_user", "r")
    assert "skill-runner reply r" in capsys.readouterr().err
    # answered meanwhile: --resume sends the job again (its key answers the same job)
    result = {"request_id": "r", "result": {"status": "succeeded", "data": {}}}
    scripted.script += [created, (200, {}, result)]
    assert cli_main([*args, "--resume"]) == 0
    (entry,) = [json.loads(line) for line in (out / "summary.jsonl").read_text().splitlines()]
    assert entry["status"] == "succeeded" and (out / "results" / "a.json").is_file()


def test_a_bundle_path_ending_in_a_slash_names_a_folder_and_is_refused(scripted, capsys, tmp_path):
    given = f"{tmp_path}/new/"  # Path() drops the slash: a file named `new` was written
    scripted.script += [(200, {}, {"request_id": "x", "status": "succeeded"}), (200, {}, {})]
    url = f"http://127.0.0.1:{scripted.server_port}"
    assert cli_main(["bundle", "x", "-o", given, "--server", url]) == 2
    assert capsys.readouterr().err == f"skill-runner-client: cannot write {given}: Is a directory\n"
    assert not (tmp_path / "new").exists()


def test_a_batch_job_without_the_files_its_skill_takes_fails_instead_of_waiting_a_day(
    scripted, capsys, tmp_path
):
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"key": "a", "skill_id": "s"}\n')  # the skill takes an input file
    out = tmp_path / "out"
    waits = {
        "code": "RUN_NOT_FINISHED",
        "message": "the run waits for its input upload (POST .../upload)",
        "details": {"status": "queued", "waiting_for_upload": True},
        "request_id": "r",
    }
    error = {"code": "INPUT_FILE_MISSING", "message": "Missing required input files: f"}
    result = {"request_id": "r", "result": {"status": "failed", "data": None, "error": error}}
    scripted.script += [
        (200, {}, {"request_id": "r", "status": "queued"}),
        (409, {}, {"error": waits}),
        (200, {}, {"request_id": "r", "status": "queued", "extracted_files": []}),
        (200, {}, result),
    ]
    url = f"http://127.0.0.1:{scripted.server_port}"
    assert cli_main(["batch", str(jobs), "--out", str(out), "--server", url]) == 1
    assert scripted.seen[2] == "/v1/jobs/r/upload"  # an empty zip: the service checks the inputs
    (entry,) = [json.loads(line) for line in (out / "summary.jsonl").read_text().splitlines()]
    assert (entry["status"], entry["error_code"]) == ("failed", "INPUT_FILE_MISSING")
    assert "failed: a failed INPUT_FILE_MISSING" in capsys.readouterr().err


def test_submit_without_the_files_its_skill_takes_sends_the_empty_upload(scripted, capsys):
    waiting = {"request_id": "r", "status": "queued", "waiting_for_upload": True}
    scripted.script += [
        (200, {}, {"request_id": "r", "status": "queued"}),
        (200, {}, waiting),
        (200, {}, {"request_id": "r", "status": "queued", "extracted_files": []}),
    ]
    url = f"http://127.0.0.1:{scripted.server_port}"
    assert cli_main(["submit", "s", "--server", url]) == 0
    assert scripted.seen == ["/v1/jobs", "/v1/jobs/r", "/v1/jobs/r/upload"]
    assert capsys.readouterr().out == "r\n"


def test_a_batch_waits_out_a_service_that_stops_answering_and_sends_the_job_again(
    scripted, capsys, tmp_path
):
    (tmp_path / "in.txt").write_text("1\n")
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"key": "a", "skill_id": "s", "files": {"f": "in.txt"}}\n')
    out = tmp_path / "out"
    created = (200, {}, {"request_id": "r", "status": "queued"})
    result = {"request_id": "r", "result": {"status": "succeeded", "data": {}}}
    # the service restarts while the upload is sent: no answer, then its proxy's 502
    scripted.script += [created, None, created, (502, {}, "bad gateway"), created]
    scripted.script += [(200, {}, {"request_id": "r", "status": "queued"}), (200, {}, result)]
    url = f"http://127.0.0.1:{scripted.server_port}"
    assert cli_main(["batch", str(jobs), "--out", str(out), "--server", url]) == 0
    sent = ["/v1/jobs", "/v1/jobs/r/upload"] * 3  # its key answers the same job each time
    assert scripted.seen == [*sent, "/v1/jobs/r/result?wait_sec=20.0"]
    err = capsys.readouterr().err
    assert "the service does not answer (CONNECTION_FAILED: POST /v1/jobs/r/upload" in err
    assert "the service answers again after" in err
    (entry,) = [json.loads(line) for line in (out / "summary.jsonl").read_text().splitlines()]
    assert (entry["status"], entry["request_id"]) == ("succeeded", "r")


def test_a_batch_stops_once_the_service_has_not_answered_for_its_outage_limit(
    scripted, capsys, tmp_path, monkeypatch
):
    monkeypatch.setattr("skill_runner_client.batch.OUTAGE_SEC", 0.0)
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"key": "a", "skill_id": "s"}\n')
    scripted.script += [(502, {}, "bad gateway")]
    url = f"http://127.0.0.1:{scripted.server_port}"
    assert cli_main(["batch", str(jobs), "--out", str(tmp_path / "out"), "--server", url]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "skill-runner-client: the batch stopped: 502 UNEXPECTED_RESPONSE: HTTP 502: "
        '"bad gateway"; --resume continues it'
    )


def test_batch_artifacts_never_land_outside_the_job_folder_whatever_their_names(
    scripted, capsys, tmp_path
):
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"key": "a", "skill_id": "s"}\n')
    out = tmp_path / "out"
    absolute = str(tmp_path / "absolute.md")
    names = ["artifacts/../../../escaped.md", absolute, "artifacts/sub/odd name?.md"]
    result = {"request_id": "r", "result": {"status": "succeeded", "artifacts": names}}
    scripted.script += [
        (200, {}, {"request_id": "r", "status": "queued"}),
        (200, {}, result),
        (200, {}, {"artifacts": [{"path": name} for name in names]}),
        (200, {}, "the report"),
        (200, {}, "the report"),  # asked for only when a name leading outside is followed
        (200, {}, "the report"),
    ]
    url = f"http://127.0.0.1:{scripted.server_port}"
    args = ["batch", str(jobs), "--out", str(out), "--artifacts", "--server", url]
    assert cli_main(args) == 0
    assert scripted.seen[-1] == "/v1/jobs/r/artifacts/artifacts/sub/odd%20name%3F.md"
    assert (out / "artifacts" / "a" / "sub" / "odd name?.md").read_text() == '"the report"'
    assert not (tmp_path / "escaped.md").exists() and not Path(absolute).exists()
    err = capsys.readouterr().err
    assert "skipped artifact 'artifacts/../../../escaped.md' of a: not a path under" in err
    assert f"skipped artifact '{absolute}' of a" in err


class AnswersLate(BaseHTTPRequestHandler):
    """A long poll: the run ends (and the answer comes) after a second and a half."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        time.sleep(1.5)
        body = json.dumps({"request_id": "r", "status": "succeeded"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args) -> None:
        pass


def test_a_long_poll_outlasts_a_client_timeout_shorter_than_its_wait():
    server = ThreadingHTTPServer(("127.0.0.1", 0), AnswersLate)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        with Client(url, timeout=0.5, max_retries=0) as client:
            assert client.jobs.wait("r", timeout=10)["status"] == "succeeded"
            assert client.jobs.get("r", wait_sec=5)["status"] == "succeeded"
            with pytest.raises(SkillRunnerError) as error:  # no long poll: the timeout holds
                client.jobs.get("r")
            assert error.value.code == "CONNECTION_FAILED"
    finally:
        server.shutdown()
        server.server_close()


def test_a_token_read_with_its_line_end_is_sent_without_it_and_a_bad_one_never_printed(
    scripted, capsys
):
    scripted.script.append((200, {}, []))
    url = f"http://127.0.0.1:{scripted.server_port}"
    with Client(url, token="s3cret-token-0123\n") as client:  # $(cat token.txt) in Python
        assert client.skills() == []
    assert scripted.tokens == ["Bearer s3cret-token-0123"]
    assert cli_main(["skills", "--server", url, "--token", "s3cret\ntoken-0123"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "skill-runner-client: the token holds a character a header cannot carry (a line break?)\n"
    )


def test_output_piped_into_a_reader_that_stops_ends_quietly(scripted):
    scripted.script.append((200, {}, {"items": [], "next_cursor": None}))
    url = f"http://127.0.0.1:{scripted.server_port}"
    cli = [sys.executable, "-m", "skill_runner_client.cli", "list", "--json", "--server", url]
    proc = subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # `| head -0`: gone before anything is printed
    err = proc.stderr.read().decode()
    assert (proc.wait(30), err) == (141, "")


@pytest.mark.parametrize("name", ["jobs.jsonl", "jobs.csv"])
def test_a_line_that_is_not_utf8_is_named(tmp_path, name):
    path = tmp_path / name
    head = "key,skill_id,input.text\n" if name.endswith(".csv") else ""
    good = "a,s,x\n" if head else '{"key": "a", "skill_id": "s"}\n'
    bad = (
        b"b,s,caf\xe9\n" if head else b'{"key": "b", "skill_id": "s", "input": {"t": "caf\xe9"}}\n'
    )
    path.write_bytes((head + good).encode() + bad)
    line = 3 if head else 2
    with pytest.raises(BadLine, match=rf"{name}:{line}: not UTF-8 \(byte 0xe9 at column \d+\)"):
        read_batch(path)


class GoesSilent(BaseHTTPRequestHandler):
    """An event stream whose first connection sends one event and then nothing, never closing
    (its host gone); the reconnect, after Last-Event-ID 1, gets the terminal event."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.asked.append(self.headers.get("Last-Event-ID"))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        if len(self.server.asked) == 1:  # type: ignore[attr-defined]
            event = {"seq": 1, "type": "raw.stdout", "data": {}}
            self.wfile.write(f"event: chat_event\nid: 1\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
            time.sleep(20)
            return
        data = {"terminal": True, "to": "succeeded"}
        event = {"seq": 2, "type": "conversation.state.changed", "data": data}
        self.wfile.write(f"event: chat_event\nid: 2\ndata: {json.dumps(event)}\n\n".encode())

    def log_message(self, *_args) -> None:
        pass


def test_an_event_stream_gone_silent_is_resumed_after_the_last_event():
    server = ThreadingHTTPServer(("127.0.0.1", 0), GoesSilent)
    server.asked, server.daemon_threads = [], True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with Client(f"http://127.0.0.1:{server.server_port}") as client:
            seqs = [event["seq"] for event in client.jobs.events("r", idle_sec=1.0)]
    finally:
        server.shutdown()
        server.server_close()
    assert (seqs, server.asked) == ([1, 2], ["0", "1"])


class ClosesEarly(BaseHTTPRequestHandler):
    """The first event stream ends after one event while the run goes on (the service
    restarting); the reconnect, after Last-Event-ID 1, gets the terminal event."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if not self.path.endswith("/events"):  # the run's status
            body = json.dumps({"request_id": "r", "status": "running"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.server.asked.append(self.headers.get("Last-Event-ID"))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        if len(self.server.asked) == 1:  # type: ignore[attr-defined]
            event = {"seq": 1, "type": "raw.stdout", "data": {}}
        else:
            data = {"terminal": True, "to": "succeeded"}
            event = {"seq": 2, "type": "conversation.state.changed", "data": data}
        self.wfile.write(f"event: chat_event\ndata: {json.dumps(event)}\n\n".encode())
        self.close_connection = True

    def log_message(self, *_args) -> None:
        pass


def test_an_event_stream_closed_while_the_run_goes_on_is_resumed():
    server = ThreadingHTTPServer(("127.0.0.1", 0), ClosesEarly)
    server.asked, server.daemon_threads = [], True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with Client(f"http://127.0.0.1:{server.server_port}") as client:
            seqs = [event["seq"] for event in client.jobs.events("r")]
    finally:
        server.shutdown()
        server.server_close()
    assert (seqs, server.asked) == ([1, 2], ["0", "1"])


def test_a_refusal_names_the_fields_the_service_lists_in_its_details(scripted, capsys, tmp_path):
    errors = [
        {"message": "'text' is a required property", "path": "", "validator": "required"},
        {"message": "5 is not of type 'string'", "path": "title", "validator": "type"},
    ]
    refused = {
        "code": "SCHEMA_VALIDATION_FAILED",
        "message": "input does not match the skill's input schema",
        "details": {"schema": "input", "errors": errors},
        "request_id": "h",
    }
    scripted.script += [(400, {}, {"error": refused})] * 2
    url = f"http://127.0.0.1:{scripted.server_port}"
    assert cli_main(["submit", "s", "-i", "title=5", "--server", url]) == 1
    explained = (
        "SCHEMA_VALIDATION_FAILED: input does not match the skill's input schema: "
        "(root): 'text' is a required property; title: 5 is not of type 'string'"
    )
    assert capsys.readouterr().err == f"skill-runner-client: {explained}\n"
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"key": "a", "skill_id": "s", "input": {"title": 5}}\n')
    assert cli_main(["batch", str(jobs), "--out", str(tmp_path / "out"), "--server", url]) == 1
    assert f"failed: a {explained}" in capsys.readouterr().err
    message = "parameter does not match: n: 0 is less than the minimum of 1"  # named already
    error = SkillRunnerError(
        400, "X", message, {"errors": [{"message": "0 is less than the minimum of 1", "path": "n"}]}
    )
    assert error.explained() == message


def test_a_batch_reads_its_jobs_from_stdin_and_resumes_with_them_piped_again(
    scripted, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "n.txt").write_text("7\n")  # relative to where the command runs
    lines = (
        b'{"key": "a", "skill_id": "s", "files": {"f": "n.txt"}}\n{"key": "b", "skill_id": "s"}\n'
    )
    created = [(200, {}, {"request_id": f"r{i}", "status": "queued"}) for i in range(2)]
    upload = (200, {}, {"request_id": "r0", "status": "queued", "extracted_files": ["f.txt"]})
    result = {"request_id": "r1", "result": {"status": "succeeded", "data": {}}}
    scripted.script += [created[0], upload, created[1], (200, {}, result), (200, {}, result)]
    url = f"http://127.0.0.1:{scripted.server_port}"
    args = ["batch", "-", "--out", "out", "--concurrency", "1", "--server", url]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines)))
    assert cli_main(args) == 0
    assert sorted(p.name for p in (tmp_path / "out" / "results").iterdir()) == ["a.json", "b.json"]
    assert (tmp_path / "out" / "stdin.jsonl").read_bytes() == lines
    seen = len(scripted.seen)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines)))
    assert cli_main([*args, "--resume"]) == 0  # the same lines piped again: both are done
    assert len(scripted.seen) == seen
    assert cli_main(["batch", "-", "--server", url]) == 2
    assert capsys.readouterr().err.endswith("batch - (the jobs on stdin) needs --out DIR\n")


def test_a_post_that_could_not_connect_is_sent_again_once_the_service_is_back():
    probe = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    port = probe.server_port
    probe.server_close()  # nothing listens there: the service is restarting
    answer = {"request_id": "r", "accepted": True, "status": "canceled"}
    started: list[ThreadingHTTPServer] = []

    def come_back() -> None:
        time.sleep(0.7)
        server = ThreadingHTTPServer(("127.0.0.1", port), Scripted)
        server.script, server.seen, server.tokens = [(200, {}, answer)], [], []
        started.append(server)
        server.serve_forever()

    threading.Thread(target=come_back, daemon=True).start()
    try:
        with Client(f"http://127.0.0.1:{port}") as client:  # cancel is a POST without a key
            assert client.jobs.cancel("r")["accepted"] is True
        assert started[0].seen == ["/v1/jobs/r/cancel"]
    finally:
        for server in started:
            server.shutdown()
            server.server_close()


class CutsTheFirstDownload(BaseHTTPRequestHandler):
    """A bundle of 100 bytes whose first download stops after 10 (the service restarting)."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.asked += 1  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/zip")
        self.send_header("Content-Length", "100")
        self.end_headers()
        self.wfile.write(b"z" * (10 if self.server.asked == 1 else 100))  # type: ignore[attr-defined]
        self.close_connection = True

    def log_message(self, *_args) -> None:
        pass


def test_a_download_cut_off_mid_body_starts_over_and_is_written_whole(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), CutsTheFirstDownload)
    server.asked, server.daemon_threads = 0, True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with Client(f"http://127.0.0.1:{server.server_port}") as client:
            path = client.jobs.download_bundle("r", tmp_path / "bundle.zip")
    finally:
        server.shutdown()
        server.server_close()
    assert (path.read_bytes(), server.asked) == (b"z" * 100, 2)
    assert not list(tmp_path.glob("*.part"))


def test_a_second_batch_in_the_same_out_is_refused_while_the_first_runs(scripted, capsys, tmp_path):
    import fcntl

    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"key": "a", "skill_id": "s"}\n')
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.jsonl").write_text('{"key": "old", "status": "succeeded"}\n')
    result = {"request_id": "r", "result": {"status": "succeeded", "data": {}}}
    scripted.script += [(200, {}, {"request_id": "r", "status": "queued"}), (200, {}, result)]
    url = f"http://127.0.0.1:{scripted.server_port}"
    with (out / "batch.lock").open("ab") as running:  # the first batch, still going
        fcntl.flock(running, fcntl.LOCK_EX | fcntl.LOCK_NB)
        args = ["batch", str(jobs), "--out", str(out), "--resume", "--server", url]
        assert cli_main(args) == 2
    assert capsys.readouterr().err == (
        f"skill-runner-client: another batch is running in {out}: let it end (or stop it) first\n"
    )
    assert scripted.seen == []
    assert (out / "summary.jsonl").read_text() == '{"key": "old", "status": "succeeded"}\n'


def test_a_result_is_on_disk_before_it_is_named_and_counted_done(scripted, tmp_path, monkeypatch):
    from skill_runner_client import batch

    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"key": "a", "skill_id": "s"}\n')
    out = tmp_path / "out"
    steps: list[str] = []
    fsync, replace = os.fsync, os.replace

    def synced(fd: int) -> None:
        steps.append(f"fsync {Path(os.readlink(f'/proc/self/fd/{fd}')).name}")
        fsync(fd)

    def renamed(src, dst) -> None:
        steps.append(f"replace {Path(dst).name}")
        replace(src, dst)

    monkeypatch.setattr(batch.os, "fsync", synced)
    monkeypatch.setattr(batch.os, "replace", renamed)
    result = {"request_id": "r", "result": {"status": "succeeded", "data": {}}}
    scripted.script += [(200, {}, {"request_id": "r", "status": "queued"}), (200, {}, result)]
    url = f"http://127.0.0.1:{scripted.server_port}"
    assert cli_main(["batch", str(jobs), "--out", str(out), "--server", url]) == 0
    assert steps[-2:] == ["fsync a.json.part", "replace a.json"]
