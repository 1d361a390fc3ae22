"""Import rules: runner_core is the pure domain (no Flask, Celery, api, worker or launcher),
api never imports worker, the web UI imports no route module, the launcher (`skill-runner`)
starts api and worker as processes and imports neither (nor do they import it), fake_llm
(offered to skill authors) needs nothing but the standard library, worker.execution (one
run's execution) imports runner_core and itself only, no Celery and no other worker package, the example client
(e2e_client) talks to the service through the SDK only, and no module of api, worker,
runner_core, launcher or bench imports itself in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

from runner_core.settings import REPO_ROOT
from tests.imports import imported_modules, outside_stdlib

FORBIDDEN = ("flask", "flask_smorest", "celery", "kombu", "api", "worker", "launcher")
PACKAGES = ("api", "worker", "runner_core", "launcher", "bench")


def test_runner_core_imports_no_framework():
    leaks = []
    for path in (REPO_ROOT / "runner_core").rglob("*.py"):
        for module in imported_modules(path):
            if module.split(".")[0] in FORBIDDEN:
                leaks.append(f"{path.relative_to(REPO_ROOT)}: {module}")
    assert leaks == []


def test_api_never_imports_worker():
    leaks = [
        f"{p.relative_to(REPO_ROOT)}: {m}"
        for p in (REPO_ROOT / "api").rglob("*.py")
        for m in imported_modules(p)
        if m.split(".")[0] == "worker"
    ]
    assert leaks == []


def test_worker_execution_imports_runner_core_only():
    """What executes a run knows no Celery app, task or broker: the tasks hand it what it
    needs (a watch, the resume, the exceptions that unwind)."""
    leaks = [
        f"{p.relative_to(REPO_ROOT)}: {m}"
        for p in (REPO_ROOT / "worker" / "execution").rglob("*.py")
        for m in imported_modules(p)
        if m.split(".")[0] in ("celery", "kombu", "flask", "api", "launcher")
        or (m.split(".")[0] == "worker" and not m.startswith("worker.execution"))
    ]
    assert leaks == []


def test_the_ui_draws_from_services_not_route_modules():
    """api/ui calls what the routes call (api.catalog, api.jobs, runner_core), never a route
    module of api.resources."""
    graph = import_graph()
    leaks = [
        f"{name}: {target}"
        for name, targets in graph.items()
        if name == "api.ui" or name.startswith("api.ui.")
        for target in targets
        if target == "api.resources" or target.startswith("api.resources.")
    ]
    assert leaks == []


def test_launcher_starts_api_and_worker_only_through_their_entry_points():
    """The launcher names `api.wsgi:app` and `worker.celery_app` to gunicorn and Celery, or
    imports just those two to serve in one process; the service's packages never reach back
    into the launcher."""
    entry_points = {"api.wsgi", "worker.celery_app"}
    leaks = [
        f"{p.relative_to(REPO_ROOT)}: {m}"
        for p in (REPO_ROOT / "launcher").rglob("*.py")
        for m in imported_modules(p)
        if m.split(".")[0] in ("api", "worker") and m not in entry_points
    ] + [
        f"{p.relative_to(REPO_ROOT)}: {m}"
        for pkg in ("api", "worker", "runner_core")
        for p in (REPO_ROOT / pkg).rglob("*.py")
        for m in imported_modules(p)
        if m.split(".")[0] == "launcher"
    ]
    assert leaks == []


def test_fake_llm_imports_only_the_standard_library():
    assert outside_stdlib(REPO_ROOT / "fake_llm") == []


def test_e2e_client_uses_the_sdk_not_the_service_s_modules():
    """The example client imports Flask (its web pages), the SDK and the standard library only."""
    allowed = {"flask", "werkzeug", "skill_runner_client"}
    leaks = [
        m
        for m in outside_stdlib(REPO_ROOT / "e2e_client")
        if m.split(": ")[1].split(".")[0] not in allowed
    ]
    assert leaks == []


def test_outside_stdlib_reports_a_third_party_import(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("import json\nfrom pkg import b\nfrom . import c\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    import requests\n")
    assert outside_stdlib(tmp_path / "pkg") == ["pkg/b.py: requests"]


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = REPO_ROOT) -> dict[str, set[str]]:
    """module -> the project modules it imports, at the top or inside functions; relative
    imports resolved; `from pkg import name` points at `pkg.name` when that is a module."""
    files = {module_name(p, root): p for pkg in PACKAGES for p in (root / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names
                ]
            else:
                continue
            graph[name].update(t for t in targets if t in files and t != name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_find_cycle_reports_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_import_graph_follows_relative_and_nested_imports(tmp_path):
    (tmp_path / "worker" / "sub").mkdir(parents=True)
    for name, text in {
        "__init__.py": "",
        "a.py": "from . import b\n",
        "b.py": "def f():\n    from .sub.c import g\n",
        "sub/__init__.py": "",
        "sub/c.py": "from ..a import x\n",
    }.items():
        (tmp_path / "worker" / name).write_text(text)
    for pkg in ("api", "runner_core", "launcher", "bench"):
        (tmp_path / pkg).mkdir()
    graph = import_graph(tmp_path)
    assert graph["worker.a"] == {"worker.b"}
    assert graph["worker.b"] == {"worker.sub.c"}
    assert find_cycle(graph) == ["worker.a", "worker.b", "worker.sub.c", "worker.a"]
