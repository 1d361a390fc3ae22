"""`skill-runner test`'s report of a case (launcher.skill_test.expectation_problems): what a
skill author reads to fix the skill."""

from __future__ import annotations

from launcher.skill_test import expectation_problems

FAILED = {"status": "failed", "error": {"code": "SKILL_SCRIPT_FAILED", "message": "exited 1"}}


def test_a_run_that_failed_shows_the_end_of_its_stderr_and_nothing_about_missing_data():
    stderr = "".join(f"line {n}\n" for n in range(1, 9)) + "ValueError: no text\n\n"
    result = {"data": None, "error": {**FAILED["error"], "stderr": stderr}}
    assert expectation_problems({"data": {"words": 6}}, FAILED, result) == [
        "status failed, expected succeeded: SKILL_SCRIPT_FAILED exited 1",
        "stderr ends: \n      line 5\n      line 6\n      line 7\n      line 8"
        "\n      ValueError: no text",
    ]


def test_a_run_that_failed_without_stderr_says_only_its_status():
    result = {"data": None, "error": FAILED["error"]}
    assert expectation_problems({}, FAILED, result) == [
        "status failed, expected succeeded: SKILL_SCRIPT_FAILED exited 1"
    ]


def test_a_run_that_succeeded_is_compared_field_by_field():
    state = {"status": "succeeded"}
    result = {"data": {"words": 5, "summary": "x"}, "artifacts": ["artifacts/a.md"]}
    expect = {"data": {"words": 6}, "artifacts": ["artifacts/a.md", "artifacts/b.md"]}
    assert expectation_problems(expect, state, result) == [
        "data.words: expected 6, got 5",
        "artifacts missing: artifacts/b.md",
    ]
