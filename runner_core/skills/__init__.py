"""Skill packages: the model, the loader and the registry of installed skills."""

from runner_core.skills.loader import load_skill
from runner_core.skills.model import RunnerManifest, SkillPackage
from runner_core.skills.registry import SkillRegistry

__all__ = ["load_skill", "RunnerManifest", "SkillPackage", "SkillRegistry"]
