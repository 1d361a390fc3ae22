"""Prompt rendering: template selection, sandbox, strict variables, output contract."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runner_core.prompts import (
    PATCH_MARKER,
    PromptContext,
    PromptError,
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


def test_template_outside_the_skill_is_refused(skill):
    with_entrypoint(skill, prompt={"template": "../../etc/hosts"})
    with pytest.raises(PromptError):
        render_prompt(load_skill(skill), CTX)


def test_skill_md_is_patched_once(skill):
    pkg = load_skill(skill)
    patch_skill_md(skill, pkg, Path("/run"))
    patch_skill_md(skill, pkg, Path("/run"))
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
    patch_skill_md(first, load_skill(first), tmp_path / "r1")
    assert "r1/result/result.json" in (first / "SKILL.md").read_text()
    assert (second / "SKILL.md").read_text() == original  # the other run's link
    assert (first / "SKILL.md").stat().st_ino != (second / "SKILL.md").stat().st_ino
    third = tmp_path / "r3" / ".gemini" / "skills" / "demo-prime-number"
    assert copies.snapshot(skill, "demo-prime-number", signature, third)
    assert (third / "SKILL.md").read_text() == original
    assert (third / "SKILL.md").stat().st_ino == (second / "SKILL.md").stat().st_ino  # not rebuilt
