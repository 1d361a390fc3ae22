"""Fixtures shared by every tier (their logic is in tests.helpers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import copy_skills


@pytest.fixture
def skills_root(tmp_path: Path) -> Path:
    return copy_skills(tmp_path / "skills")
