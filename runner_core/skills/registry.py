"""The registry of installed skills: a scan of the skills directory."""
from __future__ import annotations

from pathlib import Path

from runner_core.skills.memo import load_skill_cached
from runner_core.skills.model import SkillPackage


class SkillRegistry:
    """Scans `skills_dir`; a broken skill is listed with health 'invalid', never raised."""

    def __init__(self, skills_dir: Path) -> None:
        self.skills_dir = skills_dir

    def list(self) -> list[SkillPackage]:
        """Every skill directory, sorted by id."""
        if not self.skills_dir.is_dir():
            return []
        return [load_skill_cached(p) for p in sorted(self.skills_dir.iterdir())
                if p.is_dir() and not p.name.startswith((".", "_"))]

    def get(self, skill_id: str) -> SkillPackage | None:
        """The skill `skill_id`, or None when no such directory exists."""
        if not skill_id or "/" in skill_id or skill_id.startswith("."):
            return None
        root = self.skills_dir / skill_id
        return load_skill_cached(root) if root.is_dir() else None
