"""Fixtures for the engine tier: real agent CLIs against the fake LLM server.

Every test here is marked `engines`. The repository root is put on sys.path so the tier runs
with a plain `pytest` too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.engines.harness import ScenarioResult, run_scenario  # noqa: E402


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test of this folder as an engine test."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.engines)


@pytest.fixture
def scenario(tmp_path: Path) -> Callable[..., ScenarioResult]:
    """`scenario(adapter, script, **kw)`: run_scenario bound to this test's tmp dir."""

    def run(adapter: Any, script: Any, **kwargs: Any) -> ScenarioResult:
        return run_scenario(adapter, tmp_path, script, **kwargs)

    return run
