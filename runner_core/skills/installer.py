"""Install or update a validated skill package in the skills directory, atomically.

The package is staged under `<skills dir>/.staging/` (same filesystem, ignored by the
registry), the installed version is archived to `<archive dir>/<id>/<version>/` (with a
timestamp suffix when that version was archived before), and the new directory is swapped in
with one rename, so a half-written skill is never visible. An exclusive per-skill lock
serialises installs of one id; workers take it shared while they copy a skill.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from runner_core.error_codes import ErrorCode
from runner_core.semver import semver_key
from runner_core.skills.loader import load_skill
from runner_core.skills.locks import locks_dir, skill_lock
from runner_core.skills.model import SkillPackage
from runner_core.skills.package import PackageError, pep440
from runner_core.skills.registry import SkillRegistry

STAGING = ".staging"
ARCHIVE_DIR = "skill_archive"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@dataclass(frozen=True)
class InstallResult:
    """What an install did."""

    skill_id: str
    version: str
    previous_version: str | None
    archive_path: Path | None
    replaced: bool = False

    @property
    def action(self) -> str:
        return "updated" if self.replaced else "installed"


class SkillInstaller:
    """Installs packages into `skills_dir`; archives replaced versions under `archive_dir`."""

    def __init__(self, skills_dir: Path, archive_dir: Path, locks_dir: Path) -> None:
        self.skills_dir, self.archive_dir, self.locks_dir = skills_dir, archive_dir, locks_dir

    def new_workdir(self) -> Path:
        """A private staging directory on the skills directory's filesystem."""
        staging = self.skills_dir / STAGING
        staging.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix="install-", dir=staging))

    def install(self, pkg: SkillPackage) -> InstallResult:
        """Move the staged `pkg` into place; an update must raise the version and keep the
        format."""
        live = self.live_path(pkg.id)
        with skill_lock(self.locks_dir, pkg.id):
            self.check_format(pkg)  # again under the lock: another install may have come first
            previous = load_skill(live) if live.is_dir() else None
            old_version = previous.version if previous else None
            if previous is not None:
                check_version_increase(pkg.id, old_version, pkg.version)
            archived = self._archive(live, pkg.id, old_version) if previous else None
            swap_in(pkg.root, live)
        return InstallResult(pkg.id, pkg.version or "", old_version, archived, previous is not None)

    def live_path(self, skill_id: str) -> Path:
        """The folder the skill `skill_id` is (or would be) installed in: a skill.json skill
        may live in a category folder, and an update replaces it there."""
        return SkillRegistry(self.skills_dir).root_of(skill_id) or self.skills_dir / skill_id

    def check_format(self, pkg: SkillPackage) -> None:
        """Raise SKILL_ID_CONFLICT when the folder `pkg` would replace holds a skill of the
        other format: replacing it would silently drop that skill (and break its callers)."""
        live = self.live_path(pkg.id)
        if not live.is_dir():
            return
        registry = SkillRegistry(self.skills_dir)
        installed, held = registry.format_at(live), registry.id_at(live)
        if installed == pkg.format and held == pkg.id:
            return
        where = live.relative_to(self.skills_dir).as_posix()
        if installed != pkg.format:
            taken = (
                f"is taken by the installed {installed} skill in '{where}'; a {pkg.format} package"
            )
        else:  # the folder of that name holds another skill, or a category of them
            what = f"skill '{held}'" if held else "a category of skill.json skills"
            taken = f"names the folder '{where}', which holds {what}; the package"
        message = (
            f"'{pkg.id}' {taken} may not replace it: delete that skill first or choose another id"
        )
        raise PackageError(
            ErrorCode.SKILL_ID_CONFLICT,
            message,
            [message],
            {"skill_id": pkg.id, "format": pkg.format, "installed_format": installed},
        )

    def uninstall(self, pkg: SkillPackage) -> Path:
        """Archive the installed `pkg` and take it out of the skills directory (renamed away
        first, so a half-deleted skill is never listed); the archive's path."""
        (self.skills_dir / STAGING).mkdir(parents=True, exist_ok=True)
        retired = Path(tempfile.mkdtemp(prefix="delete-", dir=self.skills_dir / STAGING))
        try:
            with skill_lock(self.locks_dir, pkg.id):
                archived = self._archive(pkg.root, pkg.id, pkg.version)
                os.rename(pkg.root, retired / "skill")
        finally:
            shutil.rmtree(retired, ignore_errors=True)
        return archived

    def _archive(self, live: Path, skill_id: str, version: str | None) -> Path:
        """Copy the installed skill to `<archive>/<id>/<version>/` (complete or not at all);
        an earlier archive of the same version is kept: this one then gets a UTC timestamp
        suffix (`<version>.<YYYYmmddTHHMMSSffffffZ>`, `-2`, `-3`... if that is taken too)."""
        parent = self.archive_dir / skill_id
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".archiving-", dir=parent))
        try:
            shutil.copytree(live, tmp / "copy", ignore=shutil.ignore_patterns("__pycache__"))
            # the skill's lock is held: no other archive of this id is written meanwhile
            dest = _free_name(parent, version or "unversioned")
            os.rename(tmp / "copy", dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return dest


def _free_name(parent: Path, name: str) -> Path:
    """`parent/name`, or when that exists `parent/name.<UTC timestamp>` (then `-2`, `-3`...)."""
    dest = parent / name
    if not dest.exists():
        return dest
    stamped = f"{name}.{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}"
    dest, n = parent / stamped, 1
    while dest.exists():
        n += 1
        dest = parent / f"{stamped}-{n}"
    return dest


def installer_for(data_dir: Path, skills_dir: Path) -> SkillInstaller:
    """The installer of a service: archive and locks under its data directory."""
    return SkillInstaller(skills_dir, data_dir / ARCHIVE_DIR, locks_dir(data_dir))


def check_version_increase(skill_id: str, installed: str | None, new: str | None) -> None:
    """Raise SKILL_VERSION_NOT_INCREASED unless `new` > `installed`: by semver precedence
    when both are semvers, else by PEP 440 order (a runner.json such as 1.2); an installed
    version that neither reads cannot be compared and does not block the update."""
    old_v, new_v = semver_key(installed), semver_key(new)
    if old_v is None or new_v is None:
        old_v, new_v = pep440(installed), pep440(new)  # type: ignore[assignment]
    if old_v is None or (new_v is not None and new_v > old_v):
        return
    problem = "is the installed version" if new_v == old_v else "is below the installed version"
    message = f"version {new} of '{skill_id}' {problem} {installed}; an update must raise it"
    raise PackageError(
        ErrorCode.SKILL_VERSION_NOT_INCREASED,
        message,
        [message],
        {"skill_id": skill_id, "installed_version": installed, "version": new},
    )


def swap_in(staged: Path, live: Path) -> None:
    """Make `staged` the directory at `live` with renames only; the old one is deleted."""
    if not live.exists():
        os.rename(staged, live)
        return
    if _exchange(staged, live):
        shutil.rmtree(staged)  # now holds the previous version
        return
    retired = staged.with_name(staged.name + ".old")
    os.rename(live, retired)  # no atomic exchange here: a brief gap, never a half-written skill
    os.rename(staged, live)
    shutil.rmtree(retired)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths with renameat2(RENAME_EXCHANGE) where the OS offers it."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return result == 0
