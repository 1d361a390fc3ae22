"""Where a run's files come from and where they go: the skill's source, the snapshot folder
the engine's CLI discovers skills in, and the ready-made run directories of the run pool."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from runner_core.engines import engine_skill_dirs
from runner_core.in_run import remove_in_run, run_folder
from runner_core.run_pool import pool_key
from runner_core.settings import Settings
from runner_core.skill_copy import SkillCopies
from runner_core.skills import SkillPackage, SkillRegistry
from runner_core.skills.memo import tree_signature
from runner_core.store.models import Run
from runner_core.workspace import (
    SNAPSHOT_DIR,
    RunPaths,
    create_run_dir,
    snapshot_skill,
    write_git_marker,
)


@dataclass(frozen=True)
class PoolLayout:
    """What a run directory of one skill version holds before the run starts: the run
    directory's folders, the skill snapshot at `rel_dir`, and for engine runs the git marker."""

    source: Path
    skill_id: str
    rel_dir: str
    git: bool
    signature: tuple
    copies: SkillCopies | None = field(default=None, compare=False)  # None: copy every file

    @property
    def key(self) -> str:
        return pool_key(self.skill_id, f"{self.rel_dir}|git={self.git}", self.signature)

    def snapshot_in(self, run_dir: Path) -> Path:
        return run_dir / self.rel_dir / self.skill_id

    def snapshot(self, paths: RunPaths) -> tuple[Path, bool]:
        """Put the skill's snapshot into the run: linked from the copy of exactly `signature`
        (True), or copied from the skill's folder as it is now (False)."""
        dest = paths.root / self.rel_dir / self.skill_id
        # a retry's directory had the skill's processes in it: the folders on the way are made
        # the run's own (a link there removed), what is at the snapshot's place removed
        os.close(run_folder(paths.root, self.rel_dir))
        remove_in_run(paths.root, f"{self.rel_dir}/{self.skill_id}")
        if self.copies is not None and self.copies.snapshot(
            self.source, self.skill_id, self.signature, dest
        ):
            return dest, True
        return snapshot_skill(self.source, paths, self.skill_id, self.rel_dir), False

    def build(self, path: Path) -> bool:
        """Make the directory at `path`; False when the skill changed since `signature`."""
        paths = create_run_dir(path.parent, path.name)
        _snapshot, exact = self.snapshot(paths)
        if self.git:
            write_git_marker(path)
        return exact or tree_signature(self.source) == self.signature


_copies: dict[Path, SkillCopies] = {}


def skill_copies(settings: Settings) -> SkillCopies | None:
    """This process's view of the skill copies runs link from; None when every run copies."""
    if settings.snapshot_mode != "link":
        return None
    root = settings.skill_copies_dir
    if root not in _copies:
        _copies[root] = SkillCopies(root)
    return _copies[root]


def is_engine_run(pkg: SkillPackage) -> bool:
    return pkg.manifest is not None and pkg.manifest.entrypoint.type != "script"


def snapshot_dir(run: Run, pkg: SkillPackage) -> str:
    """Run-relative folder of the skill's snapshot: for an engine run the first folder its CLI
    discovers skills in (e.g. `.gemini/skills/<skill_id>/`), else `.skill`."""
    entry = pkg.manifest.entrypoint.type if pkg.manifest else "script"
    engine_dirs = engine_skill_dirs(run.engine) if entry != "script" else ()
    return engine_dirs[0] if engine_dirs else SNAPSHOT_DIR


def skill_source(settings: Settings, run: Run) -> Path:
    """Where a run's skill comes from: installed skills, or the package of a one-off run
    (`data/requests/<request_id>/skill/<skill_id>`, kind 'temp')."""
    if run.kind == "temp":
        return settings.requests_dir / run.request_id / "skill" / run.skill_id
    source = settings.skills_dir / run.skill_id
    if (source / "SKILL.md").is_file():
        return source
    # a skill.json skill: its folder is found by its name (possibly inside a category folder)
    return SkillRegistry(settings.skills_dir).root_of(run.skill_id) or source


def run_relative(path: str, root: Path) -> str:
    """Paths shown to clients are relative to the run directory."""
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path
