"""Layout of the test tree: shared logic comes from tests.helpers, never from a conftest (pytest
loads conftest files itself; importing one runs it a second time under another name); the unit
tier tests runner_core alone and starts no process (tests/README.md)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.imports import imported_modules

TESTS = Path(__file__).resolve().parents[1]
# Not in tests/unit: the service's other packages and frameworks (their tests are in
# tests/component or the tier named for the service they need), the other tiers' code, and what
# starts processes.
NOT_IN_UNIT = {
    "api",
    "worker",
    "launcher",
    "bench",
    "fake_llm",
    "e2e_client",
    "skill_runner_client",
    "flask",
    "flask_smorest",
    "celery",
    "kombu",
    "gunicorn",
    "subprocess",
    "multiprocessing",
    "tests.api",
    "tests.browser",
    "tests.chaos",
    "tests.component",
    "tests.engines",
    "tests.integration",
}
STARTS_A_PROCESS = {"fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp"}


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


def unit_rule_breaks(root: Path) -> list[str]:
    """`file: what` for each import of NOT_IN_UNIT and each os call that starts a process in
    the Python files under `root`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root)
        for module in imported_modules(path):
            parts = module.split(".")
            if parts[0] in NOT_IN_UNIT or ".".join(parts[:2]) in NOT_IN_UNIT:
                found.append(f"{name}: {module}")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
                and (node.attr in STARTS_A_PROCESS or node.attr.startswith(("spawn", "exec")))
            ):
                found.append(f"{name}: os.{node.attr}")
    return found


def test_unit_tests_import_runner_core_only_and_start_no_process():
    assert unit_rule_breaks(TESTS / "unit") == []


def test_unit_rule_breaks_are_found_in_every_spelling(tmp_path):
    spellings = [
        "from api import create_app",
        "import worker.tasks",
        "def f():\n    from worker.execution.lease import Heartbeat",
        "import subprocess",
        "from fake_llm import FakeLLM",
        "from tests.integration.services import Stack",
        "import os\nos.fork()",
        "import os\nos.execv('x', [])",
    ]
    for i, code in enumerate(spellings):
        (tmp_path / f"test_{i}.py").write_text(code + "\n")
    (tmp_path / "test_fine.py").write_text(
        "import os\nfrom runner_core.events import EventLog\nfrom tests.helpers import wait_for\n"
        "os.getpid()\n"
    )
    assert [found.split(":")[0] for found in unit_rule_breaks(tmp_path)] == [
        f"test_{i}.py" for i in range(len(spellings))
    ]


def session_paths() -> list[list[str]]:
    """The paths and globs of each session of tests/run.sh (its SESSIONS array)."""
    script = (TESTS / "run.sh").read_text(encoding="utf-8")
    block = script.split("SESSIONS=(", 1)[1].split("\n)", 1)[0]
    return [line.strip().strip('"').split() for line in block.splitlines() if line.strip()]


def test_the_whole_suite_runs_every_test_file_once() -> None:
    """tests/run.sh runs the suite as sessions side by side: a test file in none of them would
    never run in CI, one in two would run twice."""
    root = TESTS.parent
    files = sorted(str(p.relative_to(root)) for p in TESTS.glob("*/test_*.py"))
    claimed: list[str] = []
    for paths in session_paths():
        for path in paths:
            if (root / path).is_dir():
                claimed += [str(p.relative_to(root)) for p in (root / path).glob("test_*.py")]
            else:
                matched = [str(p.relative_to(root)) for p in root.glob(path)]
                assert matched, f"{path} matches no file"
                claimed += matched
    assert len(session_paths()) >= 2
    assert sorted(set(files) - set(claimed)) == []
    assert sorted(p for p in claimed if claimed.count(p) > 1) == []


def test_test_files_outside_packages_have_names_of_their_own():
    """pytest imports a test file of a folder without __init__.py by its bare name: two such
    files of one name fail the collection of any session holding both."""
    loose = [
        path
        for path in TESTS.rglob("test_*.py")
        if not (path.parent / "__init__.py").exists() and "__pycache__" not in path.parts
    ]
    names = [path.name for path in loose]
    assert sorted({n for n in names if names.count(n) > 1}) == []
