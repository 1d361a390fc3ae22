"""`skill-runner validate`: a skill directory checked offline by the rules a package upload is
checked by (runner_core.skills.package), without a server."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from runner_core.skills.loader import load_skill
from runner_core.skills.package import package_problems
from runner_core.skills.registry import SkillRegistry


@dataclass
class SkillCheck:
    """The problems (the skill would be refused) and warnings of one skill directory."""

    path: Path
    skill_id: str | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "skill_id": self.skill_id,
            "valid": self.valid,
            "errors": self.errors,
            "warnings": self.warnings,
        }


def check_skill_dir(root: Path, skills_dir: Path | None = None) -> SkillCheck:
    """Check the skill at `root` as an upload would be, and a skill.json skill's calls against
    the skills installed in `skills_dir` (default, or when it does not exist: the folder
    holding `root`, where its sibling skills are)."""
    if not root.is_dir():
        return SkillCheck(root, errors=[f"{root}: not a directory"])
    pkg = load_skill(root, strict=True)
    check = SkillCheck(root, pkg.id, package_problems(pkg), list(pkg.warnings))
    installed = skills_dir if skills_dir is not None and skills_dir.is_dir() else None
    registry = SkillRegistry(installed or root.resolve().parent)
    check.errors.extend(e for e in registry.graph_errors(pkg) if e not in check.errors)
    return check
