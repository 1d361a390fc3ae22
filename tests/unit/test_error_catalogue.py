"""The error catalogue (runner_core/error_codes.py) is the one list of codes: docs/api.md's error
table lists exactly its error codes with the same HTTP statuses / `run`, the docs name every
warning code, and the code names every code it emits through it (no bare string where an error
code goes)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

from runner_core.error_codes import CATALOGUE, RUN, UPGRADE, WARNING, ErrorCode
from runner_core.settings import REPO_ROOT

SOURCES = ("api", "worker", "runner_core")
CATALOGUE_FILE = REPO_ROOT / "runner_core" / "error_codes.py"
TABLE_ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]+)` \| ([^|]+) \|", flags=re.M)

# Calls that take an error code, by name -> the position of the code among the arguments.
CODE_ARGUMENT = {
    "ApiError": 1,
    "error_response": 1,
    "check_process": 1,
    "process_failure": 1,
    "RunFailed": 0,
    "EngineError": 0,
    "InputError": 0,
    "UploadError": 0,
    "PackageError": 0,
}
CODE_KEYWORDS = ("code", "error_code")
# Calls whose code becomes a run's error.code (RUN in the catalogue).
RUN_CALLS = ("RunFailed", "EngineError", "check_process", "process_failure")


def table_rows() -> dict[str, set[int | str]]:
    """The error table of docs/api.md: code -> its HTTP statuses and `run`."""
    text = (REPO_ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    rows: dict[str, set[int | str]] = {}
    for code, where in TABLE_ROW.findall(text):
        rows[code] = {int(w) if w.strip().isdigit() else w.strip() for w in where.split(",")}
    return rows


def source_files() -> Iterator[Path]:
    for package in SOURCES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            if path != CATALOGUE_FILE:
                yield path


def call_name(node: ast.Call) -> str | None:
    func = node.func
    return (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else None
    )


def code_expressions(tree: ast.AST) -> Iterator[ast.expr]:
    """Every value the code puts where an error code goes; a local name passed there stands for
    the values assigned to it in its function."""
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for expr in _code_positions(tree):
        for leaf in leaves(expr):
            if isinstance(leaf, ast.Name):
                yield from _assigned(_scope(leaf, parents), leaf.id)
            else:
                yield leaf


def _code_positions(tree: ast.AST) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            position = CODE_ARGUMENT.get(call_name(node) or "")
            if position is not None and len(node.args) > position:
                yield node.args[position]
            yield from (k.value for k in node.keywords if k.arg in CODE_KEYWORDS)
        elif isinstance(node, ast.Dict):
            yield from (
                value
                for key, value in zip(node.keys, node.values)
                if isinstance(key, ast.Constant) and key.value == "code"
            )
        elif isinstance(node, ast.ClassDef):  # an exception class's `code = ...`
            yield from (
                s.value
                for s in node.body
                if isinstance(s, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "code" for t in s.targets)
            )


def _scope(node: ast.AST, parents: dict[int, ast.AST]) -> ast.AST:
    while id(node) in parents and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node = parents[id(node)]
    return node


def _assigned(scope: ast.AST, name: str) -> Iterator[ast.expr]:
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            yield from leaves(node.value)


def leaves(expr: ast.expr) -> Iterator[ast.expr]:
    """The values an expression can take: both branches of `a if c else b`."""
    if isinstance(expr, ast.IfExp):
        yield from leaves(expr.body)
        yield from leaves(expr.orelse)
    else:
        yield expr


def catalogue_member(expr: ast.expr) -> str | None:
    """NAME for `ErrorCode.NAME`, else None."""
    if (
        isinstance(expr, ast.Attribute)
        and isinstance(expr.value, ast.Name)
        and expr.value.id == "ErrorCode"
    ):
        return expr.attr
    return None


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(REPO_ROOT)}:{getattr(node, 'lineno', '?')}"


def test_every_code_has_one_catalogue_entry_of_a_known_kind():
    assert set(CATALOGUE) == set(ErrorCode)
    for code, use in CATALOGUE.items():
        assert code.value == code.name, code
        assert use.where and use.meaning, code
        assert all(
            w in (RUN, UPGRADE, WARNING) or isinstance(w, int) and 400 <= w < 600 for w in use.where
        ), code
        assert use.where == (WARNING,) or WARNING not in use.where, code


def test_the_docs_error_table_lists_exactly_the_catalogue_error_codes():
    documented = table_rows()
    errors = {code.value: set(use.where) for code, use in CATALOGUE.items() if use.is_error}
    assert sorted(set(errors) - set(documented)) == [], "codes missing from docs/api.md"
    assert sorted(set(documented) - set(errors)) == [], "documented codes not in the catalogue"
    differ = {
        code: (documented[code], errors[code])
        for code in errors
        if documented[code] != errors[code]
    }
    assert differ == {}, "docs/api.md (left) and the catalogue (right) disagree"


def test_every_warning_code_is_named_in_the_docs():
    docs = "".join(p.read_text(encoding="utf-8") for p in (REPO_ROOT / "docs").glob("*.md"))
    warnings = [code.value for code, use in CATALOGUE.items() if WARNING in use.where]
    assert len(warnings) > 5
    assert [code for code in warnings if f"`{code}`" not in docs] == []


def test_no_error_code_is_a_bare_string_in_the_code():
    bare, unknown = [], []
    for path in source_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for leaf in code_expressions(tree):
            if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str):
                bare.append(f"{where(path, leaf)} {leaf.value!r}")
            member = catalogue_member(leaf)
            if member is not None and member not in ErrorCode.__members__:
                unknown.append(f"{where(path, leaf)} {member}")
    assert bare == [], "use ErrorCode.<NAME> (add the code to runner_core/error_codes.py)"
    assert unknown == []


def test_every_catalogue_code_is_emitted_somewhere():
    named = set()
    for path in source_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            member = catalogue_member(node) if isinstance(node, ast.expr) else None
            if member is not None:
                named.add(member)
    assert sorted(set(ErrorCode.__members__) - named) == [], "catalogued but never emitted"


def test_the_code_raises_each_code_with_a_status_the_catalogue_gives_it():
    """`ApiError(409, ErrorCode.X)` means X is a 409; `RunFailed(ErrorCode.X)` means X ends runs;
    api/errors.py's HTTP_CODES maps werkzeug's statuses."""
    wrong = []
    for path in source_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            uses: list[tuple[ast.expr, int | str]] = []
            if (
                isinstance(node, ast.Call)
                and call_name(node) in ("ApiError", "error_response")
                and len(node.args) > 1
                and isinstance(node.args[0], ast.Constant)
            ):
                uses = [(leaf, node.args[0].value) for leaf in leaves(node.args[1])]
            elif (
                isinstance(node, ast.Call)
                and call_name(node) in RUN_CALLS
                and len(node.args) > CODE_ARGUMENT[call_name(node)]
            ):
                uses = [(leaf, RUN) for leaf in leaves(node.args[CODE_ARGUMENT[call_name(node)]])]
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "HTTP_CODES" for t in node.targets
            ):
                assert isinstance(node.value, ast.Dict)
                uses = [
                    (v, k.value)
                    for k, v in zip(node.value.keys, node.value.values)
                    if isinstance(k, ast.Constant)
                ]
            for leaf, status in uses:
                member = catalogue_member(leaf)
                if (
                    member in ErrorCode.__members__
                    and status not in CATALOGUE[ErrorCode[member]].where
                ):
                    wrong.append(f"{where(path, leaf)} {member} as {status}")
    assert wrong == []


def test_catalogue_values_are_plain_strings_on_the_wire():
    assert json.dumps({"code": ErrorCode.QUEUE_FULL}) == '{"code": "QUEUE_FULL"}'
    assert f"{ErrorCode.TIMEOUT}" == "TIMEOUT" and ErrorCode.TIMEOUT == "TIMEOUT"
