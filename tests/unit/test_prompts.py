"""Prompt rendering: template selection, sandbox, strict variables, output contract."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from runner_core.prompts import (
    PATCH_MARKER,
    PromptContext,
    PromptError,
    SkillMdError,
    patch_skill_md,
    render_prompt,
)
from runner_core.settings import REPO_ROOT
from runner_core.skills import load_skill

CTX = PromptContext(
    {"input_file": "/run/uploads/input_file.txt"}, {"divisor": 3}, Path("/run"), "gemini"
)


@pytest.fixture
def skill(tmp_path):
    dest = tmp_path / "demo-prime-number"
    shutil.copytree(REPO_ROOT / "skills" / "demo-prime-number", dest)
    return dest


def with_entrypoint(root: Path, **entry) -> None:
    path = root / "assets" / "runner.json"
    data = json.loads(path.read_text())
    data["entrypoint"] = {"type": "prompt", **entry}
    path.write_text(json.dumps(data))


def test_default_template_lists_inputs_parameters_and_contract(skill):
    with_entrypoint(skill)
    text = render_prompt(load_skill(skill), CTX)
    assert "- input_file: /run/uploads/input_file.txt" in text
    assert "- divisor: 3" in text
    assert "/run/result/result.json" in text and '"primes"' in text
    assert "artifacts/primes.md" in text


def test_the_contract_names_an_artifact_field_written_as_a_ref(skill):
    path = skill / "assets" / "output.schema.json"
    schema = json.loads(path.read_text())
    schema["$defs"] = {"report": schema["properties"]["report"]}
    schema["properties"]["report"] = {"$ref": "#/$defs/report"}
    path.write_text(json.dumps(schema))
    with_entrypoint(skill)
    text = render_prompt(load_skill(skill), CTX)
    assert "Field `report` is a file: write it to `/run/artifacts/primes.md`" in text


def test_engine_specific_template_wins_and_gets_the_contract(skill):
    with_entrypoint(
        skill, prompts={"gemini": "first `{{ input.input_file }}` by {{ parameter.divisor }}"}
    )
    text = render_prompt(load_skill(skill), CTX)
    assert text.startswith("first `/run/uploads/input_file.txt` by 3")
    assert "# Output contract" in text


def test_template_file_is_used_for_other_engines(skill):
    (skill / "assets" / "prompt.txt").write_text("file template {{ skill.id }}")
    with_entrypoint(skill, prompt={"template": "assets/prompt.txt"}, prompts={"codex": "x"})
    assert render_prompt(load_skill(skill), CTX).startswith("file template demo-prime-number")


def test_undefined_variable_is_a_prompt_error(skill):
    with_entrypoint(skill, prompts={"gemini": "{{ input.missing_field }}"})
    with pytest.raises(PromptError) as err:
        render_prompt(load_skill(skill), CTX)
    assert err.value.code == "PROMPT_TEMPLATE_ERROR"


def test_sandbox_blocks_python_internals(skill):
    with_entrypoint(skill, prompts={"gemini": "{{ ''.__class__.__mro__[1].__subclasses__() }}"})
    with pytest.raises(PromptError):
        render_prompt(load_skill(skill), CTX)


@pytest.mark.parametrize(
    ("template", "words"),
    [
        # sizes a test can bear made without the bounds; range(100000) twice, or 10**10, would
        # take the worker's memory
        (
            "{% for a in range(3000) %}{% for b in range(3000) %}x{% endfor %}{% endfor %}",
            "rendered text passed",
        ),
        ("{{ 'x' * 100000000 }}", "repeating 1 items"),
        ("{{ input.input_file * 1000000 }}", "repeating"),
        ("{{ 7 ** 100000 }}", "too large to compute"),
    ],
    ids=["nested-loops", "repeat", "repeat-input", "power"],
)
def test_a_template_cannot_make_a_text_too_large_for_the_worker(skill, template, words):
    with_entrypoint(skill, prompts={"gemini": template})
    with pytest.raises(PromptError, match=words) as err:
        render_prompt(load_skill(skill), CTX)
    assert err.value.code == "PROMPT_TEMPLATE_ERROR"


def test_a_template_looping_without_output_is_stopped_at_its_time(skill, monkeypatch):
    import runner_core.template_limits as limits

    monkeypatch.setattr(limits, "MAX_SECONDS", 0.3)
    loops = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
    with_entrypoint(skill, prompts={"gemini": loops})
    with pytest.raises(PromptError, match="longer than 0.3 s"):
        render_prompt(load_skill(skill), CTX)


def test_a_skill_md_too_large_to_render_is_a_skill_md_error(skill):
    write_body(skill, "{{ 'x' * 100000000 }}")
    with pytest.raises(SkillMdError, match="repeating"):
        patch_skill_md(skill, load_skill(skill), CTX)


def test_template_outside_the_skill_is_refused(skill):
    with_entrypoint(skill, prompt={"template": "../../etc/hosts"})
    with pytest.raises(PromptError):
        render_prompt(load_skill(skill), CTX)


def test_skill_md_is_patched_once(skill):
    pkg = load_skill(skill)
    patch_skill_md(skill, pkg, CTX)
    patch_skill_md(skill, pkg, CTX)
    text = (skill / "SKILL.md").read_text()
    assert text.count(PATCH_MARKER) == 1 and "/run/result/result.json" in text


def test_patching_a_linked_snapshot_touches_only_that_run(tmp_path, skill):
    """An engine run's snapshot links the shared read-only copy of the skill version: the
    patched SKILL.md must be the run's own file, never a write through the link."""
    from runner_core.skill_copy import SkillCopies
    from runner_core.skills.memo import tree_signature

    copies, signature = SkillCopies(tmp_path / "copies"), tree_signature(skill)
    first, second = (
        tmp_path / r / ".gemini" / "skills" / "demo-prime-number" for r in ("r1", "r2")
    )
    assert copies.snapshot(skill, "demo-prime-number", signature, first)
    assert copies.snapshot(skill, "demo-prime-number", signature, second)
    original = (second / "SKILL.md").read_text()
    patch_skill_md(first, load_skill(first), replace(CTX, run_dir=tmp_path / "r1"))
    assert "r1/result/result.json" in (first / "SKILL.md").read_text()
    assert (second / "SKILL.md").read_text() == original  # the other run's link
    assert (first / "SKILL.md").stat().st_ino != (second / "SKILL.md").stat().st_ino
    third = tmp_path / "r3" / ".gemini" / "skills" / "demo-prime-number"
    assert copies.snapshot(skill, "demo-prime-number", signature, third)
    assert (third / "SKILL.md").read_text() == original
    assert (third / "SKILL.md").stat().st_ino == (second / "SKILL.md").stat().st_ino  # not rebuilt


FRONTMATTER = '---\nname: demo-prime-number\ndescription: "Literal {{ braces }} stay."\n---\n'


def write_body(skill: Path, body: str) -> None:
    (skill / "SKILL.md").write_text(FRONTMATTER + body, encoding="utf-8")


def test_skill_md_references_are_rendered_in_the_run_copy_only(tmp_path, skill):
    write_body(skill, "Read `{{ input.input_file }}`, divide by {{ parameter.divisor }}.\n")
    installed = (skill / "SKILL.md").read_text()
    run_copy = tmp_path / "run" / ".gemini" / "skills" / skill.name
    shutil.copytree(skill, run_copy)
    patch_skill_md(run_copy, load_skill(run_copy), CTX)
    text = (run_copy / "SKILL.md").read_text()
    assert "Read `/run/uploads/input_file.txt`, divide by 3." in text
    assert text.startswith(FRONTMATTER)  # the frontmatter is never rendered
    assert (skill / "SKILL.md").read_text() == installed


def test_skill_md_is_rendered_once_so_input_text_is_never_a_template(skill):
    write_body(skill, "Text: {{ input.text }}\n")
    ctx = replace(CTX, input={"text": "{{ parameter.divisor }}"})
    patch_skill_md(skill, load_skill(skill), ctx)
    patch_skill_md(skill, load_skill(skill), ctx)  # a retried run finds its copy patched
    assert "Text: {{ parameter.divisor }}" in (skill / "SKILL.md").read_text()


def test_skill_md_without_template_marks_is_kept_as_written(skill):
    body = 'Answer `{"primes": [2, 3]}`; a lone { or } is text.\n'
    write_body(skill, body)
    patch_skill_md(skill, load_skill(skill), CTX)
    assert (skill / "SKILL.md").read_text().startswith(FRONTMATTER + body.rstrip())


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("Use {{ input.no_such_field }}.\n", "no_such_field"),
        ("line one\n{% if parameter.divisor %}unclosed\n", "line 2"),
    ],
)
def test_skill_md_that_does_not_render_is_a_skill_md_error(skill, body, words):
    write_body(skill, body)
    with pytest.raises(SkillMdError) as err:
        patch_skill_md(skill, load_skill(skill), CTX)
    assert err.value.code == "SKILL_MD_TEMPLATE_ERROR"
    assert "SKILL.md does not render" in str(err.value) and words in str(err.value)
    assert PATCH_MARKER not in (skill / "SKILL.md").read_text()


def test_the_contract_names_the_skills_result_file(skill):
    with_entrypoint(skill, prompt={"result_file": "out/answer.json"})
    prompt = render_prompt(load_skill(skill), CTX)
    assert "to `/run/out/answer.json`" in prompt and "result/result.json" not in prompt


def test_result_mode_stdout_asks_for_the_result_in_the_final_message(skill):
    with_entrypoint(skill, prompt={"result_mode": "stdout"})
    prompt = render_prompt(load_skill(skill), CTX)
    assert "Do not write a result file" in prompt and "result.json" not in prompt


@pytest.mark.parametrize("path", ["/etc/result.json", "../result.json", "result/", ""])
def test_a_result_file_outside_the_run_is_refused(skill, path):
    with_entrypoint(skill, prompt={"result_file": path})
    errors = load_skill(skill).errors
    assert any("entrypoint.prompt.result_file" in e for e in errors), errors


def test_a_common_prompt_serves_every_engine_without_its_own(skill):
    """The Zotero plugin's skills (skills_builtin/*/assets/runner.json) give their prompt as
    `entrypoint.prompts.common`, Skill-Runner's prompt for any engine; it was ignored here and
    the built-in template sent instead."""
    with_entrypoint(skill, prompts={"common": "common {{ parameter.divisor }}", "codex": "own"})
    text = render_prompt(load_skill(skill), CTX)  # gemini: no prompt of its own
    assert text.startswith("common 3") and "# Output contract" in text
    codex = render_prompt(load_skill(skill), replace(CTX, engine="codex"))
    assert codex.startswith("own")


def test_a_declared_field_left_out_renders_empty_and_a_misspelled_one_is_still_an_error(skill):
    """Skill-Runner renders an optional field the request left out as empty (the plugin's
    prompts name optional parameters, e.g. `{{ parameter.targetCollection }}`); here it was a
    PROMPT_TEMPLATE_ERROR that failed the run."""
    with_entrypoint(skill, prompts={"common": "[{{ parameter.divisor }}][{{ input.input_file }}]"})
    empty = replace(CTX, input={}, parameter={})
    assert render_prompt(load_skill(skill), empty).startswith("[][]")
    with_entrypoint(skill, prompts={"common": "{{ parameter.divisr }}"})
    with pytest.raises(PromptError) as err:
        render_prompt(load_skill(skill), empty)
    assert "'dict object' has no attribute 'divisr'" in str(err.value)


def test_without_declared_fields_any_missing_name_renders_empty(skill):
    """The plugin's tag-bootstrapper has no parameter schema yet names
    `{{ parameter.tag_note_language }}`: with no field list to check a name against, a missing
    one renders empty (as in Skill-Runner) instead of failing the run."""
    with_entrypoint(skill, prompts={"common": "[{{ parameter.tag_note_language }}]"})
    (skill / "assets" / "parameter.schema.json").write_text('{"type": "object"}')
    empty = replace(CTX, parameter={})
    assert render_prompt(load_skill(skill), empty).startswith("[]")
