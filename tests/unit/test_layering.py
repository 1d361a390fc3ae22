"""runner_core is the pure domain: it must not import Flask, Celery, api or worker."""
from __future__ import annotations

import ast

from runner_core.settings import REPO_ROOT

FORBIDDEN = ("flask", "flask_smorest", "celery", "kombu", "api", "worker")


def imported_modules(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def test_runner_core_imports_no_framework():
    leaks = []
    for path in (REPO_ROOT / "runner_core").rglob("*.py"):
        for module in imported_modules(path):
            if module.split(".")[0] in FORBIDDEN:
                leaks.append(f"{path.relative_to(REPO_ROOT)}: {module}")
    assert leaks == []


def test_api_never_imports_worker():
    leaks = [f"{p.relative_to(REPO_ROOT)}: {m}" for p in (REPO_ROOT / "api").rglob("*.py")
             for m in imported_modules(p) if m.split(".")[0] == "worker"]
    assert leaks == []
