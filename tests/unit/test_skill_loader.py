"""Loading skill packages: the demo is healthy; each broken rule is reported, never raised."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runner_core.inputs import file_fields
from runner_core.settings import REPO_ROOT
from runner_core.skills import SkillRegistry, load_skill

DEMO = REPO_ROOT / "skills" / "demo-prime-number"


@pytest.fixture
def skill(tmp_path) -> Path:
    dest = tmp_path / "demo-prime-number"
    shutil.copytree(DEMO, dest)
    return dest


def edit_runner(root: Path, **changes) -> None:
    path = root / "assets" / "runner.json"
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(json.dumps(data))


def test_demo_skill_is_healthy_with_artifacts_registered(skill):
    pkg = load_skill(skill, strict=True)
    assert pkg.health == "ok", pkg.errors
    assert list(file_fields(pkg.input_schema)) == ["input_file"]
    assert any(a.pattern == "primes.md" and a.role == "report" for a in pkg.artifacts)


def test_directory_name_must_match_skill_name(tmp_path):
    dest = tmp_path / "other-name"
    shutil.copytree(DEMO, dest)
    pkg = load_skill(dest)
    assert pkg.health == "invalid"
    assert any("must match skill name" in e for e in pkg.errors)


def test_overlapping_engine_lists_are_an_error(skill):
    edit_runner(skill, engines=["codex", "gemini"], unsupported_engines=["gemini"])
    assert any("overlap" in e for e in load_skill(skill).errors)


def test_empty_effective_engine_set_is_an_error(skill):
    edit_runner(skill, engines=["codex"], unsupported_engines=["gemini", "codex"])
    pkg = load_skill(skill)
    assert any("effective engine set is empty" in e for e in pkg.errors)


def test_an_engine_without_an_adapter_is_a_warning_and_not_effective(skill):
    edit_runner(skill, engines=["codex", "nova"])
    pkg = load_skill(skill, strict=True)
    assert pkg.health == "ok", pkg.errors
    assert pkg.effective_engines == ["codex"]
    assert any("no adapter for engine nova" in w for w in pkg.warnings), pkg.warnings


def test_the_demo_skill_has_no_warnings(skill):
    assert load_skill(skill, strict=True).warnings == []


def test_a_key_nobody_reads_is_a_warning_naming_where_it_belongs(skill):
    edit_runner(skill, timeout=30, timeot=30, enigne="codex", description="kept: Skill-Runner's")
    pkg = load_skill(skill, strict=True)
    assert pkg.health == "ok", pkg.errors
    assert pkg.warnings == [
        "runner.json: unknown key 'enigne' is ignored (did you mean engines?)",
        "runner.json: unknown key 'timeot' is ignored (did you mean automation.timeout_sec?)",
        "runner.json: unknown key 'timeout' is ignored (did you mean automation.timeout_sec?)",
    ]


def test_a_script_a_command_names_that_the_skill_lacks_is_a_warning(skill):
    edit_runner(
        skill,
        entrypoint={"type": "script", "script": {"command": "python scripts/nope.py --n 3"}},
        normalizer={"command": "sh ./fix.sh", "enabled": True},
        fallback={"command": "python scripts/gone.py", "enabled": False},  # never run: no word
    )
    pkg = load_skill(skill, strict=True)
    assert pkg.health == "ok", pkg.errors
    assert pkg.warnings == [
        "runner.json: entrypoint.script.command runs scripts/nope.py, which the skill does not have",
        "runner.json: normalizer.command runs ./fix.sh, which the skill does not have",
    ]
    (skill / "scripts" / "nope.py").write_text("")
    (skill / "fix.sh").write_text("")
    assert load_skill(skill, strict=True).warnings == []


def test_a_skill_only_for_engines_without_an_adapter_is_listed_with_none_effective(skill):
    edit_runner(skill, engines=["nova"])
    pkg = load_skill(skill)
    assert pkg.health == "ok", pkg.errors  # listed; its runs are refused (tests/api)
    assert pkg.effective_engines == []
    assert any("nova" in w for w in pkg.warnings)


def test_missing_execution_modes_is_legacy_auto_or_rejected_when_strict(skill):
    edit_runner(skill, execution_modes=None)
    legacy = load_skill(skill)
    assert legacy.health == "ok" and legacy.manifest.execution_modes == ("auto",)
    assert any("deprecated" in w for w in legacy.warnings)
    assert load_skill(skill, strict=True).health == "invalid"


def test_unknown_execution_mode_is_an_error(skill):
    edit_runner(skill, execution_modes=["auto", "batch"])
    assert any("unknown execution_modes" in e for e in load_skill(skill).errors)


def test_script_entrypoint_needs_a_command(skill):
    edit_runner(skill, entrypoint={"type": "script"})
    assert any("script.command is required" in e for e in load_skill(skill).errors)


@pytest.mark.parametrize(
    ("entrypoint", "problem"),
    [
        ({"type": "script", "script": {"command": 5}}, "script.command must be a command line"),
        ({"type": "script", "script": {"command": ""}}, "script.command must be a command line"),
        ({"type": "hybrid", "script": {"command": "python 'x"}}, "script.command must be"),
        ({"type": "script", "script": "python scripts/run.py"}, "entrypoint.script must be"),
        ({"type": "prompt", "prompt": "do it"}, "entrypoint.prompt must be an object"),
        ({"type": "prompt", "prompt": []}, "entrypoint.prompt must be an object"),
        ({"type": "prompt", "prompt": {"template": 5}}, "prompt.template must be a file path"),
        ({"type": "prompt", "prompts": []}, "entrypoint.prompts must map"),
    ],
)
def test_every_entrypoint_field_of_the_wrong_type_is_an_error(skill, entrypoint, problem):
    edit_runner(skill, entrypoint=entrypoint)
    pkg = load_skill(skill, strict=True)  # never raises
    assert pkg.health == "invalid"
    assert any(problem in e for e in pkg.errors), pkg.errors


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("retries", "abc", "'retries' must be an integer >= 0"),
        ("retries", -1, "'retries' must be an integer >= 0"),
        ("schemas", {"input": 5}, "schemas.input must be a file path"),
        ("automation", {"network": "maybe"}, "automation.network must be off, allowlist or on"),
        ("automation", {"network": "allowlist", "allowlist": "api.example.com"}, "allowlist must"),
        ("automation", {"fs_scope": 1}, "automation.fs_scope must be a string"),
        ("artifacts", [{"role": 1, "pattern": "a.txt"}], "artifacts[0].role and .pattern must"),
        ("runtime", {"language": ["python"]}, "runtime.language and runtime.version must"),
    ],
)
def test_every_runner_json_field_of_the_wrong_type_is_an_error(skill, field, value, problem):
    edit_runner(skill, **{field: value})
    pkg = load_skill(skill, strict=True)  # never raises
    assert pkg.health == "invalid"
    assert any(problem in e for e in pkg.errors), pkg.errors


def test_network_on_is_a_valid_automation_network(skill):
    edit_runner(skill, automation={"network": "on"})
    pkg = load_skill(skill, strict=True)
    assert pkg.health == "ok", pkg.errors
    assert pkg.manifest.automation.network == "on"


def test_schema_outside_the_skill_is_refused(skill):
    edit_runner(
        skill,
        schemas={
            "input": "../../etc/passwd",
            "parameter": "assets/parameter.schema.json",
            "output": "assets/output.schema.json",
        },
    )
    assert any("outside the skill" in e for e in load_skill(skill).errors)


def test_invalid_json_schema_file_is_reported(skill):
    (skill / "assets" / "output.schema.json").write_text("{not json")
    assert any("invalid JSON" in e for e in load_skill(skill).errors)


def test_registry_lists_broken_skills_without_raising(tmp_path):
    shutil.copytree(DEMO, tmp_path / "demo-prime-number")
    (tmp_path / "empty").mkdir()
    listed = {p.id: p.health for p in SkillRegistry(tmp_path).list()}
    assert listed == {"demo-prime-number": "ok", "empty": "invalid"}
    assert SkillRegistry(tmp_path).get("../x") is None


def test_files_not_in_utf8_are_errors_naming_the_file(skill):
    (skill / "SKILL.md").write_bytes(b"---\nname: demo-prime-number\n\xff---\n")
    (skill / "assets" / "parameter.schema.json").write_bytes(b'{"type": "object"\xfe}')
    pkg = load_skill(skill)
    assert pkg.health == "invalid"
    assert "SKILL.md: not valid UTF-8 (byte 0xff at offset 28)" in pkg.errors
    assert any(e.startswith("assets/parameter.schema.json: not valid UTF-8") for e in pkg.errors)
    (skill / "assets" / "runner.json").write_bytes(b"\xff")
    assert "assets/runner.json: not valid UTF-8 (byte 0xff at offset 0)" in load_skill(skill).errors


def test_a_skill_file_too_large_to_parse_is_an_error_unread(skill):
    from runner_core.skills.files import MAX_FILE_BYTES

    # a schema of `{},` takes about 25 times its size once parsed: refused before
    many = '{"type": "object", "enum": [' + "{}," * (MAX_FILE_BYTES // 3) + "{}]}"
    (skill / "assets" / "parameter.schema.json").write_text(many)
    (skill / "SKILL.md").write_text("x" * (MAX_FILE_BYTES + 1))
    errors = load_skill(skill).errors
    limit = f"larger than the {MAX_FILE_BYTES} bytes a skill file may hold"
    assert f"assets/parameter.schema.json: {limit}" in errors
    assert f"SKILL.md: {limit}" in errors


def test_a_prompt_template_file_too_large_is_a_prompt_error(skill):
    from runner_core.prompts import PromptContext, PromptError, render_prompt
    from runner_core.skills.files import MAX_FILE_BYTES

    manifest = json.loads((skill / "assets" / "runner.json").read_text())
    manifest["entrypoint"] = {"type": "prompt", "prompt": {"template": "assets/prompt.txt"}}
    (skill / "assets" / "runner.json").write_text(json.dumps(manifest))
    (skill / "assets" / "prompt.txt").write_text("x" * (MAX_FILE_BYTES + 1))
    ctx = PromptContext({}, {}, skill.parent / "run", "codex")
    with pytest.raises(PromptError, match="larger than"):
        render_prompt(load_skill(skill), ctx)


def nested_items(levels: int) -> str:
    """A property schema nested `levels` times through "items" (written as text: json.dumps
    recurses too)."""
    return '{"items": ' * levels + "{}" + "}" * levels


@pytest.mark.parametrize("kind", ["input", "parameter", "output"])
def test_a_schema_nested_too_deeply_is_an_error_not_a_recursion(skill, kind):
    path = skill / "assets" / f"{kind}.schema.json"
    for levels, allowed in ((61, True), (62, False), (3000, False)):
        # the object, its properties, the property: 3 levels around the nesting
        path.write_text('{"type": "object", "properties": {"x": ' + nested_items(levels) + "}}")
        pkg = load_skill(skill)
        too_deep = f"assets/{kind}.schema.json: nested deeper than 64 levels"
        assert (too_deep not in pkg.errors) is allowed, (levels, pkg.errors)
        if not allowed:
            assert getattr(pkg, f"{kind}_schema") == {}  # never handed to a validator
