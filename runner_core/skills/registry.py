"""The registry of installed skills: a scan of the skills directory.

A folder holding SKILL.md (or anything else but skill.json) is a SKILL.md skill named by the
folder; a folder holding skill.json is an openEvo skill named by its `name`, either directly
under the skills directory or one level down (openEvo's `<category>/<name>/` layout).
"""

from __future__ import annotations

import builtins
from pathlib import Path

from runner_core.openevo.graph import check_graph
from runner_core.openevo.spec import SKILL_JSON, is_openevo_dir
from runner_core.skills.files import SkillFileError, read_json
from runner_core.skills.memo import load_skill_cached
from runner_core.skills.model import SkillPackage

MAX_SKILL_ID = 128  # characters, as a job's skill_id (api.schemas)


class SkillRegistry:
    """Scans `skills_dir`; a broken skill is listed with health 'invalid', never raised."""

    def __init__(self, skills_dir: Path) -> None:
        self.skills_dir = skills_dir

    def list(self) -> list[SkillPackage]:
        """Every skill, sorted by id."""
        skill_md, openevo = _scan(self.skills_dir)
        pkgs = [load_skill_cached(p) for p in skill_md] + _checked(openevo, skill_md)
        return sorted(pkgs, key=lambda p: (p.id, str(p.root)))

    def get(self, skill_id: str) -> SkillPackage | None:
        """The skill `skill_id`, or None when there is none."""
        if not _plausible(skill_id):
            return None
        root = self.skills_dir / skill_id
        if root.is_dir() and not is_openevo_dir(root) and not _category(root):
            return load_skill_cached(root)
        skill_md, openevo = _scan(self.skills_dir)
        return next((p for p in _checked(openevo, skill_md) if p.id == skill_id), None)

    def root_of(self, skill_id: str) -> Path | None:
        """The folder of an installed skill (a skill.json skill's folder need not be its id).
        Asked for every step of a composite: it reads the skill.json names only (cached while
        those files are unchanged), never loads or checks the skills."""
        if not _plausible(skill_id):
            return None
        root = self.skills_dir / skill_id
        if root.is_dir() and not is_openevo_dir(root) and not _category(root):
            return root
        hit = _roots.get((self.skills_dir, skill_id))
        if (
            hit is not None
            and hit[0] == _dir_key(self.skills_dir, hit[1])
            and _declared_name(hit[1]) == skill_id
        ):
            return hit[1]  # no folder added or removed there, and it still declares the name
        _, openevo = _scan(self.skills_dir)
        found = next((p for p in openevo if _declared_name(p) == skill_id), None)
        if found is not None:
            if len(_roots) > 4096:
                _roots.clear()
            _roots[(self.skills_dir, skill_id)] = (_dir_key(self.skills_dir, found), found)
        return found

    def format_at(self, root: Path) -> str:
        """The format of the skill in the folder `root`: "skill.json" also for a category
        folder of skill.json skills, else "SKILL.md"."""
        return "skill.json" if is_openevo_dir(root) or _category(root) else "SKILL.md"

    def id_at(self, root: Path) -> str | None:
        """The id of the skill in the folder `root` (None for a category folder, or a
        skill.json whose name does not read)."""
        if is_openevo_dir(root):
            return _declared_name(root)
        return None if _category(root) else root.name

    def graph_errors(self, pkg: SkillPackage) -> builtins.list[str]:
        """What the checks across skills (calls, names, cycles) find wrong with a skill.json
        `pkg` were it installed, replacing an installed skill of its name."""
        if pkg.openevo is None:
            return []
        skill_md, openevo = _scan(self.skills_dir)
        others = [p for p in (load_skill_cached(root) for root in openevo) if p.id != pkg.id]
        checked = check_graph([*others, pkg], {p.name for p in skill_md})
        return [e for e in checked[-1].errors if e not in pkg.errors]


_names: dict[Path, tuple[tuple[int, int, int], str | None]] = {}
_roots: dict[tuple[Path, str], tuple[tuple[int, ...], Path]] = {}


def _dir_key(skills_dir: Path, root: Path | None) -> tuple[int, ...]:
    """The mtimes of the skills directory and of the folder holding `root` (a category
    folder, or the skills directory again): a folder added, removed or renamed there moves it."""
    try:
        return (skills_dir.stat().st_mtime_ns, root.parent.stat().st_mtime_ns if root else 0)
    except OSError:
        return ()


def _declared_name(root: Path) -> str | None:
    """skill.json's `name` (the skill's id; None when unreadable), re-read when the file
    changed (its inode, size and mtime)."""
    path = root / SKILL_JSON
    try:
        st = path.stat()
    except OSError:
        return None
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _names.get(root)
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        name = read_json(path, SKILL_JSON).get("name")
    except (SkillFileError, AttributeError):
        name = None
    if len(_names) > 4096:
        _names.clear()
    _names[root] = (key, name if isinstance(name, str) else None)
    return _names[root][1]


def _checked(openevo: list[Path], skill_md: list[Path]) -> list[SkillPackage]:
    """The skill.json skills with the errors of the checks across skills."""
    return check_graph([load_skill_cached(p) for p in openevo], {p.name for p in skill_md})


def _scan(skills_dir: Path) -> tuple[list[Path], list[Path]]:
    """(SKILL.md skill folders, skill.json skill folders)."""
    skill_md: list[Path] = []
    openevo: list[Path] = []
    if not skills_dir.is_dir():
        return skill_md, openevo
    for path in sorted(skills_dir.iterdir()):
        if not path.is_dir() or path.name.startswith((".", "_")):
            continue
        if is_openevo_dir(path):
            openevo.append(path)
        elif inner := _category(path):
            openevo.extend(inner)
        else:
            skill_md.append(path)
    return skill_md, openevo


def _category(path: Path) -> list[Path]:
    """The skill.json folders inside `path` when it is an openEvo category folder (no SKILL.md,
    no assets/, no skill.json of its own), else []."""
    if (path / "SKILL.md").exists() or (path / "assets").exists() or (path / SKILL_JSON).exists():
        return []
    return [
        p
        for p in sorted(path.iterdir())
        if p.is_dir() and not p.name.startswith((".", "_")) and is_openevo_dir(p)
    ]


def _plausible(skill_id: str) -> bool:
    """A name an installed skill could have: one path part, not hidden, no longer than a job's
    skill_id may be (a longer one would be a file name the file system refuses)."""
    return (
        0 < len(skill_id) <= MAX_SKILL_ID and "/" not in skill_id and not skill_id.startswith(".")
    )
