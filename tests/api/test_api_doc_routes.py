"""docs/api.md's endpoint tables and the app's routes agree: every API route (and method) has a
row, every row names a route that exists with the methods it says, and the scope table says
which scope each route asks for."""

from __future__ import annotations

import re
from pathlib import Path

from api.auth.scopes import required_scope
from runner_core.api_tokens import ADMIN, READ, SUBMIT

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
ROW = re.compile(r"^\| ([A-Z]+(?:, [A-Z]+)*) \| ([^|]+) \|", flags=re.M)
PARAM = re.compile(r"\{[^}]*\}|<[^>]*>")


def shape(path: str) -> str:
    """A path with its parameters blanked: `/v1/jobs/{request_id}` and Flask's
    `/v1/jobs/<request_id>` are both `/v1/jobs/{}`."""
    return PARAM.sub("{}", path.partition("?")[0].rstrip("/") or "/")


def documented_rows() -> list[tuple[set[str], list[str]]]:
    """(methods, paths) per table row. A cell may name more paths after the first one: `/x` is
    then under the first one's last parameter (`/v1/jobs/{request_id}/chat`, `/chat/history`),
    or under the first path itself when it has none."""
    rows = []
    for methods, cell in ROW.findall(API_DOC.read_text(encoding="utf-8")):
        spans = [s for s in re.findall(r"`([^`]+)`", cell) if s.startswith("/")]
        if not spans or "*" in spans[0]:
            continue  # a group of routes with a section of its own
        first = spans[0].partition("?")[0]
        cut = first.rfind("}")
        anchor = first[: cut + 1] if cut >= 0 else first
        paths = [first, *(anchor + s.partition("?")[0] for s in spans[1:])]
        rows.append(({m.strip() for m in methods.split(",")}, [shape(p) for p in paths]))
    return rows


def app_routes(app) -> dict[str, set[str]]:
    routes: dict[str, set[str]] = {}
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/v1/") or rule.rule in ("/healthz", "/metrics"):
            routes.setdefault(shape(rule.rule), set()).update(rule.methods - {"OPTIONS"})
    return routes


def test_every_route_and_method_has_a_row_in_the_api_doc(app):
    rows = documented_rows()
    assert len(rows) > 40
    missing = sorted(
        f"{method} {path}"
        for path, methods in app_routes(app).items()
        for method in methods - {"HEAD"}
        if not any(path in paths and method in said for said, paths in rows)
    )
    assert not missing, f"routes docs/api.md does not list: {missing}"


def test_every_row_of_the_api_doc_names_a_route_with_its_methods(app):
    routes = app_routes(app)
    wrong = []
    for said, paths in documented_rows():
        for path in paths:
            if path not in routes or not said & routes[path]:
                wrong.append(f"{', '.join(sorted(said))} {path}")
        for method in said:
            if not any(method in routes.get(path, set()) for path in paths):
                wrong.append(f"{method} {' '.join(paths)}")
    assert not wrong, f"rows of docs/api.md with no such route or method: {sorted(set(wrong))}"


def test_the_admin_row_of_the_scope_table_names_every_admin_route(app):
    row = re.search(r"^\| `admin` \|[^|]+\| (.+) \|$", API_DOC.read_text(encoding="utf-8"), re.M)
    assert row, "the scope table's admin row"
    said = {
        (method, shape(path)) for method, path in re.findall(r"`([A-Z]+) (/[^`]+)`", row.group(1))
    }
    admin = {
        (method, shape(rule.rule))
        for rule in app.url_map.iter_rules()
        for method in rule.methods - {"HEAD", "OPTIONS"}
        if required_scope(rule.endpoint, method) == ADMIN
    }
    assert said == admin


def test_the_other_routes_ask_the_scope_the_read_and_submit_rows_say(app):
    for rule in app.url_map.iter_rules():
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            scope = required_scope(rule.endpoint, method)
            if scope == ADMIN:
                continue
            # read: every GET, and the handshake; submit: every other POST, and DELETE
            reads = method == "GET" or (method, rule.rule) == ("POST", "/v1/system/handshake")
            assert scope == (READ if reads else SUBMIT), (method, rule.rule)
