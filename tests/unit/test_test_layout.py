"""Layout of the test tree: shared logic comes from tests.helpers, never from a conftest (pytest
loads conftest files itself; importing one runs it a second time under another name)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def conftest_imports(root: Path) -> list[str]:
    """`file:line` of every import of a conftest module by a Python file under `root`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [f"{node.module or ''}.{alias.name}" for alias in node.names]
            else:
                continue
            if any("conftest" in name.split(".") for name in names):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_test_module_imports_from_a_conftest():
    assert conftest_imports(TESTS) == []


def test_conftest_imports_are_found_in_every_spelling(tmp_path):
    spellings = [
        "from tests.conftest import x",
        "from .conftest import x",
        "from . import conftest",
        "import tests.api.conftest",
        "def f():\n    from tests.integration.conftest import Stack",
    ]
    for i, code in enumerate(spellings):
        (tmp_path / f"test_{i}.py").write_text(code + "\n")
    (tmp_path / "test_fine.py").write_text("from tests.helpers import wait_for\n")
    assert [found.split(":")[0] for found in conftest_imports(tmp_path)] == [
        f"test_{i}.py" for i in range(len(spellings))
    ]
