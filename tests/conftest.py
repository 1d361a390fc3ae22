"""Fixtures shared by every tier."""
from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pytest

from runner_core.settings import REPO_ROOT, Settings, load_settings

TEST_SKILLS = Path(__file__).parent / "skills"


def copy_skills(dest: Path) -> Path:
    """The built-in skills plus the test skills, in one directory of their own."""
    dest.mkdir(parents=True, exist_ok=True)
    for source in (REPO_ROOT / "skills", TEST_SKILLS):
        for skill in source.iterdir():
            if skill.is_dir():
                shutil.copytree(skill, dest / skill.name, dirs_exist_ok=True)
    return dest


def make_settings(root: Path, **env: str) -> Settings:
    base = {"SKILL_RUNNER_DATA_DIR": str(root / "data"),
            "SKILL_RUNNER_SKILLS_DIR": str(root / "skills")}
    base.update(env)
    return load_settings(base)


def zip_bytes(files: dict[str, bytes | str]) -> bytes:
    """An in-memory zip of name -> content."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():
            zf.writestr(name, content)
    return buf.getvalue()


@pytest.fixture
def skills_root(tmp_path: Path) -> Path:
    return copy_skills(tmp_path / "skills")
