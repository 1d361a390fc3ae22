"""`skill-runner test DIR`: the example skills' own test files played through a throw-away
service (embedded broker, SQLite, API, worker) with the real codex CLI against the fake LLM."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from runner_core.engines import get_adapter
from runner_core.settings import REPO_ROOT
from tests.engines.harness import require_binary


def skill_test(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "launcher.cli", "test", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
    )


def test_the_example_skills_pass_their_own_test_files():
    require_binary(get_adapter("codex"))
    echo = skill_test(str(REPO_ROOT / "skills" / "demo-echo"))
    assert echo.returncode == 0, echo.stdout + echo.stderr
    assert echo.stdout.splitlines() == [
        "PASS the agent writes its note and answers the schema's shape",
        "PASS an answer off the schema fails with what to fix",
        "2 of 2 case(s) passed",
    ]
    primes = skill_test(str(REPO_ROOT / "skills" / "demo-prime-number"))
    assert primes.returncode == 0, primes.stdout + primes.stderr
    # an interactive case: the reply answers the question and the next turn finishes
    choose = skill_test(str(REPO_ROOT / "skills" / "demo-choose-summary"))
    assert choose.returncode == 0, choose.stdout + choose.stderr
    assert choose.stdout.splitlines()[-1] == "2 of 2 case(s) passed"


def test_a_new_skill_of_each_kind_passes_its_own_test_cases(tmp_path):
    """`new` then `test`, as docs/skills.md's first block runs them: each kind comes with a
    case its skill passes as written (a prompt skill's through codex and a scripted answer)."""
    require_binary(get_adapter("codex"))
    for name, kind in [
        ("made-prompt", "prompt"),
        ("made-script", "script"),
        ("made_code", "skill.json"),
    ]:
        made = subprocess.run(
            [sys.executable, "-m", "launcher.cli", "new", name, "--kind", kind, "--dir", str(tmp_path)],
            capture_output=True, text=True, timeout=60, cwd=REPO_ROOT,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        assert f"skill-runner test {tmp_path / name}" in made.stdout
        done = skill_test(str(tmp_path / name))
        assert done.returncode == 0, (kind, done.stdout + done.stderr)
        assert done.stdout.splitlines() == [
            "PASS a summary and the word count",
            "1 of 1 case(s) passed",
        ], kind


def test_a_case_that_does_not_hold_fails_with_each_difference(tmp_path):
    case = {
        "name": "wrong bound",
        "parameter": {"divisor": 3},
        "files": {"input_file": "tests/numbers.txt"},
        "expect": {"data": {"bound": 11}, "artifacts": ["artifacts/nope.md"]},
    }
    (tmp_path / "case.json").write_text(json.dumps(case))
    done = skill_test(
        str(REPO_ROOT / "skills" / "demo-prime-number"), "--file", str(tmp_path / "case.json")
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "FAIL wrong bound",
        "  - data.bound: expected 11, got 10",
        "  - artifacts missing: artifacts/nope.md",
        "0 of 1 case(s) passed",
    ]


def test_a_bad_test_file_is_exit_2_with_one_line(tmp_path):
    (tmp_path / "case.json").write_text('{"name": "x", "expected": {}}')
    done = skill_test(
        str(REPO_ROOT / "skills" / "demo-echo"), "--file", str(tmp_path / "case.json")
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"skill-runner test: {tmp_path / 'case.json'}: case 1: unknown keys ['expected']\n"
    )


def test_a_skill_json_skill_is_run_by_its_name_with_the_skills_it_calls(tmp_path):
    """A skill.json skill's id is its `name`, not its folder's; a composite is tested with the
    installed skills it calls (--skills-dir), its own folder holding none of them."""
    code = tmp_path / "sleep-ms"  # named sleep_ms
    shutil.copytree(REPO_ROOT / "tests" / "openevo_skills" / "misc" / "sleep-ms", code)
    case = {
        "name": "a short nap",
        "input": {"ms": 10, "tag": "x"},
        "expect": {"data": {"tag": "x"}},
    }
    (code / "tests").mkdir()
    (code / "tests" / "skill-test.json").write_text(json.dumps(case))
    done = skill_test(str(code))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["PASS a short nap", "1 of 1 case(s) passed"]

    report = tmp_path / "report"
    shutil.copytree(REPO_ROOT / "skills" / "workflow" / "text_report", report)
    text = "tide moon tide. moon rises."
    case = {"name": "keywords", "input": {"text": text}, "expect": {"data": {"words": 5}}}
    (report / "tests").mkdir()
    (report / "tests" / "skill-test.json").write_text(json.dumps(case))
    done = skill_test(str(report), "--skills-dir", str(REPO_ROOT / "skills"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["PASS keywords", "1 of 1 case(s) passed"]
    # without the skills it calls, the refusal names what is missing
    done = skill_test(str(report), "--skills-dir", str(tmp_path / "none"))
    assert done.returncode == 1
    assert "calls unknown skill 'word_stats'" in done.stdout, done.stdout
