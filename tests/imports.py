"""What Python files import, read from their source (nothing is imported): for the layering rules
of the product's packages and the rules of the test tiers."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path


def imported_modules(path: Path) -> Iterator[str]:
    """Every absolute import of `path`, at the top or inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def outside_stdlib(package: Path) -> list[str]:
    """`file: module` for each import in `package` of neither the standard library nor itself."""
    allowed = sys.stdlib_module_names | {package.name}
    return [
        f"{p.relative_to(package.parent)}: {m}"
        for p in sorted(package.rglob("*.py"))
        for m in imported_modules(p)
        if m.split(".")[0] not in allowed
    ]
