"""Scoped tokens (SKILL_RUNNER_TOKENS_FILE): every route asks for its scope, the OpenAPI
document states it, a token without it is 403 FORBIDDEN, and the file is re-read while the app
runs (rotation without a restart)."""

from __future__ import annotations

import dataclasses
import os
import re

import pytest

from api import create_app
from api.auth import is_public
from api.auth.scopes import required_scope
from launcher.cli import main as cli_main
from runner_core.api_tokens import ADMIN, READ, SUBMIT, TokenFileError, parse_entries
from tests.helpers import TOKENS, bearer, write_tokens_file

RANK = {READ: 0, SUBMIT: 1, ADMIN: 2}


def routes(app):
    """(path with placeholder values, method, endpoint) of every route that asks a token."""
    for rule in app.url_map.iter_rules():
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", "x", rule.rule)
        if is_public(path) or rule.endpoint in ("static", "ui.static"):
            continue
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            yield path, method, rule.endpoint


def test_every_route_refuses_a_token_below_its_scope_with_403(scoped, scoped_app, queue):
    checked = {READ: 0, SUBMIT: 0, ADMIN: 0}
    for path, method, endpoint in routes(scoped_app):
        scope = required_scope(endpoint, method)
        assert scope in RANK, (path, method)
        checked[scope] += 1
        for name, held in (("reader", READ), ("alice", SUBMIT)):
            if RANK[held] >= RANK[scope]:
                continue
            resp = scoped.open(path, method=method, headers=bearer(name))
            assert resp.status_code == 403, (path, method, name, resp.status_code)
            error = resp.json["error"]
            assert error["code"] == "FORBIDDEN" and error["details"]["required_scope"] == scope
            assert name in error["message"]
    assert queue.sent == []  # every refusal came before the view
    # the families: reads, creating and acting on runs, and the service-wide routes
    assert checked[READ] > 30 and checked[SUBMIT] > 10
    assert required_scope("skill_packages.SkillPackages", "POST") == ADMIN
    assert required_scope("management.Audit", "GET") == ADMIN
    assert required_scope("metrics", "GET") == ADMIN
    assert required_scope("jobs.Cancel", "POST") == SUBMIT
    assert required_scope("management.Runs", "GET") == READ


def test_the_openapi_document_states_each_operations_scope(scoped, scoped_app):
    spec = scoped.get("/openapi.json").json
    assert spec["security"] == [{"bearerAuth": []}]
    documented = 0
    for rule in scoped_app.url_map.iter_rules():
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule.rule)
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            operation = spec["paths"].get(path, {}).get(method.lower())
            if operation is None:  # /metrics, the UI and the docs are not in the document
                assert not path.startswith("/v1/"), path
                continue
            documented += 1
            if path == "/healthz":
                assert operation["security"] == [] and "x-required-scope" not in operation
            else:
                expected = required_scope(rule.endpoint, method)
                assert operation["x-required-scope"] == expected, (path, method)
    assert documented > 40


def test_the_document_names_scopes_without_tokens_too(client):
    spec = client.get("/openapi.json").json
    assert spec["paths"]["/v1/jobs"]["post"]["x-required-scope"] == "submit"
    assert "security" not in spec


def test_a_submit_token_creates_and_reads_and_a_reader_only_reads(scoped, queue):
    body = {"skill_id": "fenced-json", "input": {"text": "hi"}}
    created = scoped.post("/v1/jobs", json=body, headers=bearer("alice"))
    assert created.status_code == 200
    assert scoped.get(f"/v1/jobs/{created.json['request_id']}", headers=bearer("alice")).json
    assert scoped.get("/v1/skills", headers=bearer("reader")).status_code == 200
    assert scoped.post("/v1/jobs", json=body, headers=bearer("reader")).status_code == 403
    assert len(queue.sent) == 1


@pytest.mark.parametrize(
    "headers, message",
    [({}, "needs an API token"), (bearer("not-a-token-0123456789"), "not valid")],
)
def test_401_without_a_valid_token(scoped, headers, message):
    resp = scoped.get("/v1/jobs", headers=headers)
    assert resp.status_code == 401
    assert resp.json["error"]["code"] == "UNAUTHORIZED" and message in resp.json["error"]["message"]
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")


def test_the_env_token_is_an_admin_named_env_token(settings, queue, tokens_file):
    configured = dataclasses.replace(
        settings, tokens_file=tokens_file, api_tokens=("an-env-token-0123456789",)
    )
    client = create_app({"SETTINGS": configured, "QUEUE": queue, "TESTING": True}).test_client()
    assert client.get("/v1/management/audit", headers=bearer("an-env-token-0123456789")).json
    client.post("/v1/jobs/cleanup", json={}, headers=bearer("an-env-token-0123456789"))
    audit = client.get("/v1/management/audit", headers=bearer("root")).json
    assert audit["items"][0]["token_name"] == "env-token"
    assert client.get("/v1/jobs", headers=bearer("alice")).status_code == 200  # both sources


def test_rotation_by_editing_the_file_while_the_app_runs(scoped, tokens_file):
    assert scoped.get("/v1/skills", headers=bearer("alice")).status_code == 200
    rotated = {"alice": ("alice-second-token-0123456789", ["read", "submit"])}
    write_tokens_file(tokens_file, {**rotated, "root": TOKENS["root"]})
    st = tokens_file.stat()  # a new mtime even on a coarse clock
    os.utime(tokens_file, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert scoped.get("/v1/skills", headers=bearer("alice")).status_code == 401
    assert scoped.get("/v1/skills", headers=bearer("alice-second-token-0123456789")).json
    # a file that does not parse keeps the tokens read last
    tokens_file.write_text("{not json\n")
    assert scoped.get("/v1/skills", headers=bearer("alice-second-token-0123456789")).json
    tokens_file.unlink()  # no file: no file token is accepted, and nothing is open
    assert (
        scoped.get("/v1/skills", headers=bearer("alice-second-token-0123456789")).status_code == 401
    )
    assert scoped.get("/v1/skills").status_code == 401


def test_a_configured_file_that_is_missing_keeps_the_api_closed(settings, queue, tmp_path):
    configured = dataclasses.replace(settings, tokens_file=tmp_path / "none.jsonl")
    client = create_app({"SETTINGS": configured, "QUEUE": queue, "TESTING": True}).test_client()
    assert client.get("/v1/skills").status_code == 401
    assert client.get("/healthz").status_code == 200


def test_token_add_prints_the_token_once_and_stores_only_its_hash(tmp_path, capsys):
    path = tmp_path / "t" / "tokens.jsonl"
    assert cli_main(["token", "add", "ci", "--scopes", "read,submit", "--file", str(path)]) == 0
    token = capsys.readouterr().out.strip()
    assert token and token not in path.read_text()
    (principal,) = parse_entries(path.read_text()).values()
    assert principal.name == "ci" and principal.scopes == {"read", "submit"}
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert cli_main(["token", "add", "x", "--scopes", "root", "--file", str(path)]) == 2
    assert capsys.readouterr().err == (
        "skill-runner: scopes must be some of read, submit, admin\n"  # not 'line 1: ...'
    )
    assert cli_main(["token", "add", "ci", "--scopes", "admin", "--file", str(path)]) == 0
    capsys.readouterr()
    assert cli_main(["token", "list", "--file", str(path)]) == 0
    listed = [line.split("\t")[:2] for line in capsys.readouterr().out.splitlines()]
    assert listed == [["ci", "read,submit"], ["ci", "admin"]]  # a rotation: two lines, one name


def test_token_add_to_a_file_that_cannot_be_written_is_one_line(tmp_path, capsys):
    (tmp_path / "file.txt").write_text("x")
    for path, reason in (
        ("/proc/no-such-dir/tokens.jsonl", "No such file or directory"),
        (str(tmp_path / "file.txt" / "tokens.jsonl"), "Not a directory"),
        (str(tmp_path), "Is a directory"),
    ):
        assert cli_main(["token", "add", "ci", "--file", path]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == f"skill-runner: cannot write {path}: {reason}\n"


def test_token_list_of_a_file_that_cannot_be_read_is_one_line(tmp_path, capsys):
    (tmp_path / "binary.jsonl").write_bytes(b"\xff\xfe")
    for path, reason in (
        (str(tmp_path), "Is a directory"),
        (str(tmp_path / "binary.jsonl"), "not UTF-8 text"),
    ):
        assert cli_main(["token", "list", "--file", path]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == f"skill-runner: cannot read {path}: {reason}\n"


@pytest.mark.parametrize(
    "line",
    [
        '{"name": "a", "sha256": "00", "scopes": ["read"]}',
        '{"name": "a", "sha256": "' + "0" * 64 + '", "scopes": ["everything"]}',
        '{"name": "", "sha256": "' + "0" * 64 + '", "scopes": ["read"]}',
        '["not", "an", "object"]',
    ],
)
def test_bad_token_lines_are_refused(line):
    with pytest.raises(TokenFileError, match="line 2"):
        parse_entries("# comment\n" + line)


def test_the_lines_logged_for_a_request_name_its_token(scoped_app):
    import logging

    from runner_core.logs import RunContextFilter

    def caller_of_a_line() -> str | None:
        line = logging.LogRecord("api", logging.INFO, __file__, 1, "probe", (), None)
        RunContextFilter().filter(line)  # what the log handlers add to every line
        return line.caller

    scoped_app.add_url_rule("/v1/probe-caller", "probe_caller", lambda: caller_of_a_line() or "")
    client = scoped_app.test_client()
    assert client.get("/v1/probe-caller", headers=bearer("alice")).text == "alice"
    assert client.get("/v1/probe-caller", headers=bearer("bob")).text == "bob"
    assert caller_of_a_line() is None  # nothing carried over once a request ends
    assert (
        client.get(
            "/v1/jobs/00000000-0000-0000-0000-000000000000", headers=bearer("bob")
        ).status_code
        == 404
    )
    assert caller_of_a_line() is None  # nor after a request that ended in an error
    assert (
        client.get("/v1/probe-caller", headers=bearer("not-a-token-0123456789")).status_code == 401
    )
    assert caller_of_a_line() is None  # nothing carried over once a request ends
