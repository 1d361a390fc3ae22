"""Skill packages: unpacking a zip of one skill, version rules, archive, atomic swap, lock."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from runner_core.settings import REPO_ROOT
from runner_core.skills import load_skill
from runner_core.skills.installer import check_version_increase, installer_for, swap_in
from runner_core.skills.locks import locks_dir, skill_lock
from runner_core.skills.package import PackageError, unpack_package
from runner_core.uploads import UploadError
from tests.helpers import zip_bytes
from tests.packages import echo_skill

DEMO = REPO_ROOT / "skills" / "demo-prime-number"


def demo_files(prefix: str = "", **runner_changes) -> dict[str, bytes]:
    files = {}
    for path in DEMO.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            files[prefix + path.relative_to(DEMO).as_posix()] = path.read_bytes()
    runner = json.loads(files[prefix + "assets/runner.json"])
    for key, value in runner_changes.items():
        if value is None:
            runner.pop(key, None)
        else:
            runner[key] = value
    files[prefix + "assets/runner.json"] = json.dumps(runner).encode()
    return files


def write_zip(tmp_path: Path, files: dict) -> Path:
    path = tmp_path / f"pkg-{len(list(tmp_path.glob('pkg-*')))}.zip"
    path.write_bytes(zip_bytes(files))
    return path


def unpack(tmp_path: Path, files: dict):
    workdir = tmp_path / f"work-{len(list(tmp_path.glob('work-*')))}"
    workdir.mkdir()
    return unpack_package(write_zip(tmp_path, files), workdir)


@pytest.mark.parametrize("prefix", ["", "demo-prime-number/"])
def test_files_at_root_or_one_folder_unpack_to_the_skill_id(tmp_path, prefix):
    pkg = unpack(tmp_path, demo_files(prefix))
    assert pkg.health == "ok" and pkg.root.name == "demo-prime-number"
    assert pkg.root.parent.name == "skill"
    assert not (pkg.root.parent.parent / "extracted").exists()


def test_two_top_level_folders_are_refused(tmp_path):
    files = {**demo_files("a/"), "b/readme.txt": "x"}
    with pytest.raises(PackageError) as exc:
        unpack(tmp_path, files)
    assert exc.value.code == "SKILL_PACKAGE_INVALID"
    assert "found: a, b" in exc.value.errors[0]


def test_every_validation_error_is_listed(tmp_path):
    files = demo_files(execution_modes=None, version="one")
    files.pop("assets/parameter.schema.json")
    schema = json.loads(files["assets/output.schema.json"])
    schema["properties"]["report"]["x-filename"] = "a/b.md"
    files["assets/output.schema.json"] = json.dumps(schema)
    with pytest.raises(PackageError) as exc:
        unpack(tmp_path, files)
    errors = exc.value.errors
    assert any("'execution_modes' is required" in e for e in errors)
    assert any("schemas.parameter file not found" in e for e in errors)
    assert any("x-filename must be a plain file name" in e for e in errors)
    assert any("version 'one' is not a valid version" in e for e in errors)
    assert exc.value.details["errors"] == errors


@pytest.mark.parametrize("version", ["abc", "1.0.0-", "x1.2", "1.0.0+", "9" * 65])
def test_a_runner_json_version_that_is_no_version_is_refused(tmp_path, version):
    with pytest.raises(PackageError) as exc:
        unpack(tmp_path, demo_files(version=version))
    assert exc.value.errors == [
        f"runner.json: version '{version}' is not a valid version "
        "(a semver such as 1.2.0 or 1.2.0-rc.1)"
    ]


@pytest.mark.parametrize("version", ["1.0", "1.0.0rc1", "v2.0.0", "1.0.0-rc.1+b.5"])
def test_a_runner_json_version_in_pep_440_is_taken_as_skill_runner_takes_it(tmp_path, version):
    assert unpack(tmp_path, demo_files(version=version)).version == version


def test_invalid_id_at_root_is_reported(tmp_path):
    with pytest.raises(PackageError) as exc:
        unpack(tmp_path, demo_files(id="../evil"))
    assert any("is not a valid skill name" in e for e in exc.value.errors)


def test_unsafe_zip_is_an_upload_error(tmp_path):
    with pytest.raises(UploadError) as exc:
        unpack(tmp_path, {"../SKILL.md": "x"})
    assert exc.value.code == "UPLOAD_UNSAFE_PATH"


@pytest.mark.parametrize(
    "installed,new,ok",
    [
        ("1.0.0", "1.0.1", True),
        ("1.2.0", "1.10.0", True),
        ("1.0.0-rc.1", "1.0.0", True),
        ("1.0.0", "1.0.0", False),
        ("2.0.0", "1.9.9", False),
        ("1.0.0", "1.0.0-rc.1", False),
        ("not-a-version", "1.0.0", True),
        ("1.0.0-alpha.beta", "1.0.0-beta", True),
        ("1.0.0-2", "1.0.0-10", True),
        ("1.0.0-alpha", "1.0.0-alpha.1", True),
        ("1.0.0-beta.11", "1.0.0-rc.1", True),
        ("1.0.0-x.7.z.92", "1.0.0", True),
        ("1.0.0-rc.1", "1.0.0-11", False),
        ("1.0.0+build.1", "1.0.0+build.2", False),
        ("1.0", "1.1", True),  # PEP 440, as Skill-Runner packages may carry
        ("1.1", "1.0.5", False),
        ("1.0.0rc1", "1.0.0", True),
    ],
)
def test_version_must_increase(installed, new, ok):
    if ok:
        check_version_increase("s", installed, new)
    else:
        with pytest.raises(PackageError) as exc:
            check_version_increase("s", installed, new)
        assert exc.value.code == "SKILL_VERSION_NOT_INCREASED"


@pytest.fixture
def installer(tmp_path):
    return installer_for(tmp_path / "data", tmp_path / "skills")


def stage(installer, tmp_path, version: str, marker: str):
    files = demo_files(version=version)
    files["assets/marker.txt"] = marker
    workdir = installer.new_workdir()
    return unpack_package(write_zip(tmp_path, files), workdir)


def test_install_then_update_archives_the_previous_version(installer, tmp_path):
    first = installer.install(stage(installer, tmp_path, "1.0.0", "one"))
    assert first.action == "installed" and first.archive_path is None
    live = installer.skills_dir / "demo-prime-number"
    second = installer.install(stage(installer, tmp_path, "1.1.0", "two"))
    assert second.action == "updated" and second.previous_version == "1.0.0"
    assert (live / "assets" / "marker.txt").read_text() == "two"
    archived = installer.archive_dir / "demo-prime-number" / "1.0.0"
    assert second.archive_path == archived
    assert (archived / "assets" / "marker.txt").read_text() == "one"
    assert load_skill(live).version == "1.1.0"


def test_refused_update_leaves_the_installed_skill(installer, tmp_path):
    installer.install(stage(installer, tmp_path, "1.1.0", "one"))
    with pytest.raises(PackageError):
        installer.install(stage(installer, tmp_path, "1.0.0", "old"))
    live = installer.skills_dir / "demo-prime-number"
    assert (live / "assets" / "marker.txt").read_text() == "one"
    assert not installer.archive_dir.exists()


SHOUT = {
    "name": "shout",
    "description": "Upper-cases a text",
    "category": "text",
    "input": {"type": "object", "properties": {"text": {"type": "string"}}},
    "output": {"type": "object"},
    "mode": "code",
    "version": "1.0.0",
}
SHOUT_PY = "def execute(input, ctx):\n    return {'text': input['text'].upper()}\n"


@pytest.mark.parametrize("first", ["skill.json", "SKILL.md"])
def test_a_package_never_replaces_a_skill_of_the_other_format(installer, tmp_path, first):
    skill_json = {"skill.json": json.dumps(SHOUT), "index.py": SHOUT_PY}
    skill_md = echo_skill("shout", version="9.0.0")
    installed, other = (skill_json, skill_md) if first == "skill.json" else (skill_md, skill_json)
    installer.install(unpack_package(write_zip(tmp_path, installed), installer.new_workdir()))
    pkg = unpack_package(write_zip(tmp_path, other), installer.new_workdir())
    with pytest.raises(PackageError) as exc:
        installer.install(pkg)
    assert exc.value.code == "SKILL_ID_CONFLICT"
    assert exc.value.details["installed_format"] == first
    assert load_skill(installer.skills_dir / "shout").format == first
    assert not installer.archive_dir.exists()


def test_a_skill_md_package_never_replaces_a_category_folder(installer, tmp_path):
    folder = installer.skills_dir / "shout" / "loud"
    folder.mkdir(parents=True)
    (folder / "skill.json").write_text(json.dumps({**SHOUT, "name": "loud"}))
    (folder / "index.py").write_text(SHOUT_PY)
    pkg = unpack_package(write_zip(tmp_path, echo_skill("shout")), installer.new_workdir())
    with pytest.raises(PackageError) as exc:
        installer.install(pkg)
    assert exc.value.code == "SKILL_ID_CONFLICT"
    assert (folder / "skill.json").is_file()


def test_a_skill_json_package_never_replaces_a_folder_holding_another_skill(installer, tmp_path):
    folder = installer.skills_dir / "shout"
    folder.mkdir(parents=True)
    (folder / "skill.json").write_text(json.dumps({**SHOUT, "name": "bar"}))
    (folder / "index.py").write_text(SHOUT_PY)
    package = {"skill.json": json.dumps(SHOUT), "index.py": SHOUT_PY}
    pkg = unpack_package(write_zip(tmp_path, package), installer.new_workdir())
    with pytest.raises(PackageError) as exc:
        installer.install(pkg)
    assert exc.value.code == "SKILL_ID_CONFLICT"
    assert "holds skill 'bar'" in exc.value.message
    assert json.loads((folder / "skill.json").read_text())["name"] == "bar"


def test_a_skill_json_package_never_replaces_a_category_folder(installer, tmp_path):
    folder = installer.skills_dir / "shout" / "loud"
    folder.mkdir(parents=True)
    (folder / "skill.json").write_text(json.dumps({**SHOUT, "name": "loud"}))
    (folder / "index.py").write_text(SHOUT_PY)
    package = {"skill.json": json.dumps(SHOUT), "index.py": SHOUT_PY}
    pkg = unpack_package(write_zip(tmp_path, package), installer.new_workdir())
    with pytest.raises(PackageError) as exc:
        installer.install(pkg)
    assert exc.value.code == "SKILL_ID_CONFLICT"
    assert "a category of skill.json skills" in exc.value.message
    assert (folder / "skill.json").is_file()


def test_swap_replaces_a_directory_without_leftovers(tmp_path):
    live, staged = tmp_path / "live", tmp_path / "staged"
    live.mkdir(), staged.mkdir()
    (live / "old.txt").write_text("old")
    (staged / "new.txt").write_text("new")
    swap_in(staged, live)
    assert [p.name for p in live.iterdir()] == ["new.txt"]
    assert not staged.exists()


def test_install_waits_for_the_skill_lock(installer, tmp_path):
    pkg = stage(installer, tmp_path, "1.0.0", "one")
    done = threading.Event()
    with skill_lock(locks_dir(tmp_path / "data"), "demo-prime-number", shared=True):
        worker = threading.Thread(target=lambda: (installer.install(pkg), done.set()))
        worker.start()
        time.sleep(0.3)
        assert not done.is_set()  # a reader holds the lock: the install must wait
    worker.join(5)
    assert done.is_set()


def test_concurrent_installs_of_one_version_succeed_once(installer, tmp_path):
    installer.install(stage(installer, tmp_path, "1.0.0", "one"))
    staged = [stage(installer, tmp_path, "1.1.0", f"copy-{i}") for i in range(4)]
    barrier, outcomes = threading.Barrier(len(staged)), []

    def install(pkg):
        barrier.wait()
        try:
            outcomes.append(installer.install(pkg).action)
        except PackageError as exc:
            outcomes.append(exc.code)

    threads = [threading.Thread(target=install, args=(pkg,)) for pkg in staged]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(outcomes) == ["SKILL_VERSION_NOT_INCREASED"] * 3 + ["updated"]
    assert [p.name for p in (installer.archive_dir / "demo-prime-number").iterdir()] == ["1.0.0"]


def test_a_skill_json_package_zipped_at_its_root_unpacks_under_a_128_character_name(tmp_path):
    name = "s" * 128  # the longest name the skill.json meta-schema takes
    package = {"skill.json": json.dumps({**SHOUT, "name": name}), "index.py": SHOUT_PY}
    pkg = unpack_package(write_zip(tmp_path, package), tmp_path / "work")
    assert pkg.id == name
    assert pkg.root.name == name
