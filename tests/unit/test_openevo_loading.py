"""Loading skill.json skills: the meta-schema, the mode's body file, and the checks across
skills (unknown callee, cycle, clash with a SKILL.md skill's id, duplicate names)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runner_core.skills import SkillRegistry
from tests.helpers import TEST_SKILLS

BASE = {
    "description": "d",
    "category": "c",
    "input": {"type": "object", "properties": {"x": {"type": "string"}}},
    "output": {"type": "object"},
    "mode": "code",
}


def write(root: Path, folder: str, files: dict[str, str] | None = None, **fields) -> Path:
    path = root / folder
    path.mkdir(parents=True)
    (path / "skill.json").write_text(json.dumps({**BASE, **fields}))
    for name, text in (files or {"index.py": "def execute(i, c):\n    return {}\n"}).items():
        (path / name).write_text(text)
    return path


def errors(registry: SkillRegistry, skill_id: str) -> list[str]:
    pkg = registry.get(skill_id)
    assert pkg is not None, skill_id
    return pkg.errors


def test_valid_skills_in_both_layouts(tmp_path):
    write(tmp_path, "flat-one", name="flat_one")
    write(tmp_path / "text", "two", name="nested_two")
    registry = SkillRegistry(tmp_path)
    listed = {p.id: p for p in registry.list()}
    assert set(listed) == {"flat_one", "nested_two"}
    assert all(p.health == "ok" and p.format == "skill.json" for p in listed.values())
    assert registry.get("nested_two").root == tmp_path / "text" / "two"
    assert registry.get("two") is None and registry.get("flat-one") is None


def test_meta_schema_and_body_errors_are_all_reported(tmp_path):
    write(tmp_path, "bad", files={}, name="Bad-Name", mode="code", extra=1, timeout="soon")
    (pkg,) = SkillRegistry(tmp_path).list()
    assert pkg.health == "invalid"
    text = " | ".join(pkg.errors)
    assert "does not match '^[a-z][a-z0-9_]*$'" in text
    assert "Additional properties are not allowed ('extra'" in text
    assert "timeout: 'soon' is not of type 'number'" in text
    write(tmp_path, "nobody", files={}, name="nobody", mode="llm")
    write(tmp_path, "bad-schema", name="bad_schema", output={"type": "no-such-type"})
    registry = SkillRegistry(tmp_path)
    assert errors(registry, "nobody") == ["mode 'llm' needs prompt.md next to skill.json"]
    assert errors(registry, "bad_schema") == [
        "skill.json: output/type: 'no-such-type' is not valid under any of the given schemas"
    ]


def test_call_graph_errors(tmp_path):
    step = {"step": "s", "skill": "missing", "input": {}}
    write(tmp_path, "a", files={}, name="a", mode="composite", pipeline=[step])
    write(
        tmp_path,
        "b",
        files={},
        name="b",
        mode="composite",
        calls=["c"],
        pipeline=[{"step": "s", "skill": "c", "input": {}}],
    )
    write(
        tmp_path,
        "c",
        files={},
        name="c",
        mode="composite",
        pipeline=[{"step": "s", "skill": "b", "input": {}}],
    )
    write(
        tmp_path,
        "d",
        files={},
        name="d",
        mode="composite",
        calls=["a"],
        pipeline=[
            {"step": "s", "skill": "a", "input": {}},
            {"step": "t", "skill": "a", "input": {}, "depends": ["later"]},
        ],
    )
    write(
        tmp_path,
        "e",
        files={},
        name="e",
        mode="composite",
        pipeline=[{"step": "s", "skill": "a", "input": {}}],
    )
    registry = SkillRegistry(tmp_path)
    assert errors(registry, "a") == ["calls unknown skill 'missing'"]
    assert errors(registry, "b") == ["call cycle: b -> c -> b"]
    assert errors(registry, "c") == ["call cycle: b -> c -> b"]
    assert errors(registry, "d") == ["pipeline: step 't' depends on 'later', not an earlier step"]
    assert errors(registry, "e") == ["calls invalid skill 'a'"]


def test_a_template_that_does_not_compile_is_an_error_naming_it(tmp_path):
    write(tmp_path, "callee", name="callee")
    step = {"step": "s", "skill": "callee", "input": {"q": "{{input.x}}", "n": ["a {{ 1 + }}"]}}
    pipeline = [
        step,
        {**step, "step": "t", "input": {}, "foreach": "{{ input.x | nope }}"},
        {**step, "step": "u", "input": {}, "condition": "input.x ==="},
        {**step, "step": "v", "input": {}, "condition": "{{ input.x }}"},
    ]
    mapping = {"ok": "{{steps.s.q}}", "bad": "{{ steps.s | size }}"}
    write(tmp_path, "broken", files={}, name="broken", mode="composite", pipeline=pipeline)
    good = {**step, "input": {"q": "{{input.x}}"}}
    write(tmp_path, "mapped", files={}, name="mapped", mode="composite", pipeline=[good])
    write(
        tmp_path,
        "mapped-bad",
        files={},
        name="mapped_bad",
        mode="composite",
        pipeline=[{**step, "input": {}}],
        outputMapping=mapping,
    )
    registry = SkillRegistry(tmp_path)
    found = errors(registry, "broken")
    assert [e.split(": template")[0] for e in found] == [
        "pipeline: step 's'",
        "pipeline: step 't'",
        "pipeline: step 'u'",
    ], found
    assert "'{{1 +}}'" in found[0] and "No filter named 'nope'" in found[1]
    assert errors(registry, "mapped") == []
    (bad,) = errors(registry, "mapped_bad")
    assert bad.startswith("outputMapping: template '{{steps.s | size}}'")


def test_clash_with_a_skill_md_id_and_duplicate_names(tmp_path):
    shutil.copytree(TEST_SKILLS / "echo-prompt", tmp_path / "echo-prompt")
    write(tmp_path, "x1", name="dup")
    write(tmp_path, "x2", name="dup")
    (tmp_path / "echo_prompt").mkdir()
    registry = SkillRegistry(tmp_path)
    listed = registry.list()
    dups = [p for p in listed if p.id == "dup"]
    assert [p.errors for p in dups] == [[], ["name 'dup' is already declared by the skill in 'x1'"]]
    assert registry.get("dup").root == tmp_path / "x1"
    assert registry.get("echo-prompt").format == "SKILL.md"
    write(tmp_path / "cat", "clash", name="echo_prompt")
    shutil.rmtree(tmp_path / "echo_prompt")
    shutil.copytree(TEST_SKILLS / "echo-prompt", tmp_path / "echo_prompt")
    clash = [
        p
        for p in SkillRegistry(tmp_path).list()
        if p.format == "skill.json" and p.id == "echo_prompt"
    ]
    assert clash[0].errors == ["name 'echo_prompt' is already the id of a SKILL.md skill"]


def test_root_of_follows_renames_moves_and_removals(tmp_path):
    skill = write(tmp_path / "text", "two", name="nested_two")
    registry = SkillRegistry(tmp_path)
    assert registry.root_of("nested_two") == skill
    raw = json.loads((skill / "skill.json").read_text())
    (skill / "skill.json").write_text(json.dumps({**raw, "name": "renamed_two"}))
    assert registry.root_of("nested_two") is None
    assert registry.root_of("renamed_two") == skill
    moved = tmp_path / "misc" / "two"
    moved.parent.mkdir()
    skill.rename(moved)
    assert registry.root_of("renamed_two") == moved
    shutil.rmtree(moved)
    assert registry.root_of("renamed_two") is None


def test_skill_json_or_prompt_md_not_in_utf8_is_an_error(tmp_path):
    write(tmp_path, "bad-json", name="bad_json")
    (tmp_path / "bad-json" / "skill.json").write_bytes(b'{"name": "\xff"}')
    write(tmp_path, "bad-prompt", files={"prompt.md": ""}, name="bad_prompt", mode="llm")
    (tmp_path / "bad-prompt" / "prompt.md").write_bytes(b"Say \xfe")
    listed = {p.root.name: p for p in SkillRegistry(tmp_path).list()}
    assert listed["bad-json"].errors == ["skill.json: not valid UTF-8 (byte 0xff at offset 10)"]
    assert listed["bad-prompt"].errors == ["prompt.md: not valid UTF-8 (byte 0xfe at offset 4)"]
    assert listed["bad-prompt"].health == "invalid"


def test_skill_json_nested_too_deeply_is_an_error(tmp_path):
    write(tmp_path, "deep", name="deep")
    deep = '{"items": ' * 3000 + "{}" + "}" * 3000
    (tmp_path / "deep" / "skill.json").write_text('{"name": "deep", "output": ' + deep + "}")
    (pkg,) = SkillRegistry(tmp_path).list()
    assert pkg.errors == ["skill.json: nested deeper than 64 levels"]


def test_a_name_longer_than_a_skill_id_is_an_error_and_a_long_id_is_no_skill(tmp_path):
    write(tmp_path, "long", name="a" * 129)
    (pkg,) = SkillRegistry(tmp_path).list()
    assert pkg.health == "invalid" and any("is too long" in e for e in pkg.errors), pkg.errors
    write(tmp_path, "fits", name="b" * 128)
    assert SkillRegistry(tmp_path).get("b" * 128).health == "ok"
    # an id no skill can have is no skill, not a file name too long for the file system
    assert SkillRegistry(tmp_path).get("a" * 300) is None
    assert SkillRegistry(tmp_path).root_of("a" * 300) is None


@pytest.mark.parametrize("version", ["v2.0.0", "abc", "1.0", "1.02.0", "1.0.0-", "1" * 62 + ".0.0"])
def test_a_version_that_is_no_semver_is_an_error(tmp_path, version):
    write(tmp_path, "bad", name="bad", version=version)
    (pkg,) = SkillRegistry(tmp_path).list()
    assert pkg.health == "invalid"
    problem = "is too long" if len(version) > 64 else "is not a 'semver'"
    assert pkg.errors == [f"skill.json: version: {version!r} {problem}"]


def test_a_semver_version_with_pre_release_and_build_is_valid(tmp_path):
    write(tmp_path, "good", name="good", version="2.10.0-rc.1+build.5")
    assert SkillRegistry(tmp_path).get("good").health == "ok"


def test_a_pattern_that_does_not_compile_is_an_error(tmp_path):
    # the draft-07 meta-schema's `format: regex` is not asserted on skill.json: this check is
    text = {"type": "string", "pattern": "(unclosed"}
    write(tmp_path, "bad", name="bad", output={"type": "object", "properties": {"x": text}})
    found = errors(SkillRegistry(tmp_path), "bad")
    assert len(found) == 1 and found[0].startswith("skill.json: output: properties.x.pattern: ")
    assert "not a regular expression" in found[0]


def test_a_pattern_with_nested_repeats_loads_its_matches_have_a_time_limit(tmp_path):
    text = {"type": "string", "pattern": "^(a+)+$"}
    write(tmp_path, "slow", name="slow", input={"type": "object", "properties": {"x": text}})
    assert errors(SkillRegistry(tmp_path), "slow") == []


def test_a_template_reading_a_step_it_cannot_see_is_an_error_naming_it(tmp_path):
    write(tmp_path, "callee", name="callee")

    def step(name: str, text: str, **more) -> dict:
        return {"step": name, "skill": "callee", "input": {"q": text}, **more}

    pipeline = [
        step("a", "{{ steps.typo.q }}"),
        step("b", "{{ steps.a.q }} {{ steps['c'].q }}"),
        step("c", "{{ steps.c }}"),
        step("d", "x", depends=[], condition="steps.b.q"),
        step("e", "x", depends=["d"], foreach="{{ steps.d.q }}"),
    ]
    mapping = {"ok": "{{ steps.e | map: q }}", "bad": "{{ steps.nope || steps.a }}"}
    write(
        tmp_path,
        "reads",
        files={},
        name="reads",
        mode="composite",
        pipeline=pipeline,
        outputMapping=mapping,
    )
    assert errors(SkillRegistry(tmp_path), "reads") == [
        "pipeline: step 'a': template '{{steps.typo.q}}': no step named 'typo'",
        "pipeline: step 'b': template '{{steps['c'].q}}': step 'c' runs after it (its output is"
        " not there yet)",
        "pipeline: step 'c': template '{{steps.c}}': a step cannot read its own output",
        "pipeline: step 'd': template '{{steps.b.q}}': step 'b' is not among the steps it depends"
        " on, so it may not have run yet: add 'b' to its depends",
        "outputMapping: template '{{steps.nope || steps.a}}': no step named 'nope'",
    ]


def test_a_step_reads_any_step_upstream_of_it(tmp_path):
    write(tmp_path, "callee", name="callee")
    pipeline = [
        {"step": "a", "skill": "callee", "input": {}},
        {"step": "b", "skill": "callee", "input": {}, "depends": []},
        {"step": "c", "skill": "callee", "input": {"q": "{{ steps.a.q }}"}, "depends": ["a"]},
        {"step": "d", "skill": "callee", "input": {"q": "{{ steps.a }}{{ steps.b }}"}},
        {"step": "e", "skill": "callee", "input": {"q": "{{ steps[input.x] }}"}, "depends": []},
    ]
    pipeline[3]["depends"] = ["c", "b"]
    write(tmp_path, "fine", files={}, name="fine", mode="composite", pipeline=pipeline)
    assert errors(SkillRegistry(tmp_path), "fine") == []


def test_a_dashed_step_name_read_as_a_path_is_an_error_saying_how_to_write_it(tmp_path):
    write(tmp_path, "callee", name="callee")
    pipeline = [
        {"step": "fetch-data", "skill": "callee", "input": {}},
        {"step": "use", "skill": "callee", "input": {"q": "{{ steps['fetch-data'].q }}"}},
    ]
    mapping = {"q": "{{ steps.fetch-data.q }}"}
    write(
        tmp_path, "dashed", files={}, name="dashed", mode="composite", pipeline=pipeline,
        outputMapping=mapping,
    )  # fmt: skip
    assert errors(SkillRegistry(tmp_path), "dashed") == [
        "outputMapping: template '{{steps.fetch-data.q}}': no step named 'fetch' (for"
        " 'fetch-data' write steps['fetch-data'])"
    ]


def test_a_step_field_the_service_does_not_know_is_a_warning_naming_it(tmp_path):
    write(tmp_path, "callee", name="callee")
    pipeline = [
        {"step": "a", "skill": "callee", "input": {}, "forEach": "{{ input.x }}"},
        {"step": "b", "skill": "callee", "input": {}, "dependsOn": ["a"], "note": "mine"},
    ]
    write(tmp_path, "typos", files={}, name="typos", mode="composite", pipeline=pipeline)
    pkg = SkillRegistry(tmp_path).get("typos")
    assert pkg.health == "ok" and pkg.warnings == [
        "pipeline: step 'a': 'forEach' is no step field and does nothing (did you mean 'foreach'?)",
        "pipeline: step 'b': 'dependsOn' is no step field and does nothing (did you mean"
        " 'depends'?)",
        "pipeline: step 'b': 'note' is no step field and does nothing",
    ]
