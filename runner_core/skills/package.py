"""A skill package: a zip of ONE skill directory, unpacked safely and validated as a new upload.

The zip holds either the skill's files at its root (SKILL.md, assets/, ...) or a single
top-level folder containing them. Extraction goes through `runner_core.uploads` (zip slip,
symlinks, bombs); validation is the loader's with `strict=True`, plus a semver version.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from runner_core.error_codes import ErrorCode
from runner_core.openevo.spec import SKILL_JSON, is_openevo_dir
from runner_core.semver import MAX_VERSION_CHARS, is_semver
from runner_core.skills.files import SkillFileError, read_json
from runner_core.skills.loader import load_skill
from runner_core.skills.model import SkillPackage
from runner_core.uploads import UploadLimits, extract_upload

PACKAGE_LIMITS = UploadLimits(max_total_bytes=256 * 1024**2, max_entries=5_000)
SKILL_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
OPENEVO_NAME = re.compile(
    r"^[a-z][a-z0-9_]{0,127}$"
)  # skill.json `name`: snake_case, as the meta-schema
IGNORED_TOP_LEVEL = ("__MACOSX", ".DS_Store")
UNNAMED = "unnamed-skill"


class PackageError(Exception):
    """A package was refused; `errors` lists every problem found."""

    def __init__(
        self, code: str, message: str, errors: list[str], details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.errors = code, message, errors
        self.details = {"errors": errors, **(details or {})}


def unpack_package(zip_path: Path, workdir: Path) -> SkillPackage:
    """Extract `zip_path` under `workdir` and load it as `workdir/skill/<skill_id>`.

    Raises UploadError for an unsafe or broken zip, PackageError for an invalid skill.
    What an earlier call cut short left in `workdir` is replaced, and `extracted` never outlives
    the call, so a package refused or failed part-way can be unpacked again.
    """
    extracted = workdir / "extracted"
    shutil.rmtree(extracted, ignore_errors=True)
    try:
        extract_upload(zip_path, extracted, PACKAGE_LIMITS)
        root = _skill_root(extracted)
        errors: list[str] = []
        name = root.name if root != extracted else _declared_id(root, errors)
        dest = workdir / "skill" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(dest, ignore_errors=True)  # os.rename cannot replace a folder with files
        os.rename(root, dest)
    finally:
        shutil.rmtree(extracted, ignore_errors=True)
    pkg = load_skill(dest, strict=True)
    errors.extend(package_problems(pkg))
    if errors:
        summary = f"the skill package is invalid ({len(errors)} problem(s)): " + "; ".join(errors)
        raise PackageError(
            ErrorCode.SKILL_PACKAGE_INVALID,
            summary,
            errors,
            {"skill_id": pkg.id, "warnings": pkg.warnings},
        )
    return pkg


def package_problems(pkg: SkillPackage) -> list[str]:
    """What makes a skill loaded with `strict=True` refused as a new package (its own files
    only; `check_calls` checks it against the installed skills)."""
    problems = list(pkg.errors)
    if pkg.manifest is not None and pkg.version and not is_runner_version(pkg.version):
        problems.append(
            f"runner.json: version '{pkg.version}' is not a valid version "
            "(a semver such as 1.2.0 or 1.2.0-rc.1)"
        )
    return problems


def is_runner_version(text: str) -> bool:
    """A runner.json version: a semver, or, as the Skill-Runner packages it shares take, a
    PEP 440 version such as 1.2 or 1.2.0rc1 (at most 64 characters either way)."""
    return is_semver(text) or (len(text) <= MAX_VERSION_CHARS and pep440(text) is not None)


def pep440(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def check_calls(pkg: SkillPackage, skills_dir: Path) -> None:
    """A skill.json package must fit the installed skills: what it calls is installed and
    valid, its name is no SKILL.md skill's id, and no call cycle; else PackageError."""
    from runner_core.skills.registry import SkillRegistry  # (the registry imports the loader)

    errors = SkillRegistry(skills_dir).graph_errors(pkg)
    if errors:
        summary = f"the skill package is invalid ({len(errors)} problem(s)): " + "; ".join(errors)
        raise PackageError(
            ErrorCode.SKILL_PACKAGE_INVALID,
            summary,
            errors,
            {"skill_id": pkg.id, "warnings": pkg.warnings},
        )


def _skill_root(extracted: Path) -> Path:
    """The files at the zip root, or its single top-level folder."""
    if any((extracted / name).exists() for name in ("SKILL.md", "assets", SKILL_JSON)):
        return extracted
    entries = [p for p in extracted.iterdir() if p.name not in IGNORED_TOP_LEVEL]
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    found = sorted(p.name for p in entries)
    raise PackageError(
        ErrorCode.SKILL_PACKAGE_INVALID,
        "the zip must hold one skill: its files at the root, or a single top-level folder",
        [
            "the zip must hold one skill: SKILL.md at the root or a single "
            f"top-level folder (found: {', '.join(found) or 'nothing'})"
        ],
    )


def _declared_id(root: Path, errors: list[str]) -> str:
    """The directory name for files zipped at the root: runner.json `id` (skill.json `name`)."""
    if is_openevo_dir(root):
        try:
            name = read_json(root / SKILL_JSON, SKILL_JSON).get("name")
        except (SkillFileError, AttributeError):
            return UNNAMED  # the loader reports the broken skill.json
        return name if isinstance(name, str) and OPENEVO_NAME.match(name) else UNNAMED
    try:
        declared = read_json(root / "assets" / "runner.json", "assets/runner.json").get("id")
    except (SkillFileError, AttributeError):
        return UNNAMED  # the loader reports the missing or broken runner.json
    if isinstance(declared, str) and len(declared) <= 64 and SKILL_NAME.match(declared):
        return declared
    errors.append(
        f"runner.json: id {declared!r} is not a valid skill name "
        "(1-64 lowercase letters, digits and single hyphens)"
    )
    return UNNAMED
