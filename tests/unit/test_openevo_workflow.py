"""The composite planner: order, depends, condition, foreach within maxConcurrency, retry after
its delay, continueOnError, and the step names of the child runs."""

from __future__ import annotations

from runner_core.openevo.steps import (
    Attempt,
    call_name,
    child_name,
    in_run_attempt,
    parse_child_name,
    run_attempt_of,
)
from runner_core.openevo.workflow import StepState, final_output, next_moves, stopped_steps

FANOUT = [
    {"step": "list", "skill": "lister", "input": {}},
    {
        "step": "each",
        "skill": "worker",
        "foreach": "{{steps.list.items}}",
        "maxConcurrency": 2,
        "input": {"value": "{{item}}", "at": "{{index}}"},
    },
]


def done(step, output=None, index=None, attempt=1, status="succeeded", error=None, at=0.0):
    return Attempt(step, index, attempt, status, output, error, at)


def test_child_names_round_trip():
    for args in [("a", None, 1), ("a", 3, 1), ("a", None, 2), ("step_x-1", 12, 4)]:
        assert parse_child_name(child_name(*args)) == args
    assert child_name("a", 3, 2) == "a[3]#2"
    assert parse_child_name(call_name("memory_search", 2)) is None


def test_a_composite_attempt_prefixes_its_childrens_names():
    for args in [("a", None, 1), ("a", 3, 2)]:
        name = child_name(*args)
        assert in_run_attempt(name, 1) == in_run_attempt(name, None) == name
        again = in_run_attempt(name, 3)
        assert again.startswith("3:") and parse_child_name(again) == args
        assert (run_attempt_of(name), run_attempt_of(again)) == (1, 3)
    call = in_run_attempt(call_name("memory_search", 2), 2)
    assert parse_child_name(call) is None and run_attempt_of(call) == 2


def test_sequential_steps_start_one_after_another():
    pipeline = [
        {"step": "a", "skill": "s", "input": {"x": "{{input.x}}"}},
        {"step": "b", "skill": "s", "input": {"y": "{{steps.a.y}}"}},
    ]
    moves = next_moves(pipeline, {"x": 1}, [])
    assert [(launch.name, launch.input) for launch in moves.start] == [("a", {"x": 1})]
    moves = next_moves(pipeline, {"x": 1}, [done("a", {"y": 5})])
    assert [(launch.name, launch.input) for launch in moves.start] == [("b", {"y": 5})]
    moves = next_moves(pipeline, {"x": 1}, [done("a", {"y": 5}), done("b", {"z": 6})])
    assert moves.done and final_output(pipeline, None, {}, moves.states) == {"z": 6}


def test_foreach_keeps_at_most_max_concurrency_in_flight_and_orders_outputs():
    listed = done("list", {"items": ["p", "q", "r", "s", "t"]})
    moves = next_moves(FANOUT, {}, [listed])
    assert [launch.name for launch in moves.start] == ["each[0]", "each[1]"]
    assert moves.start[1].input == {"value": "q", "at": 1}
    running = [listed, done("each", index=0, status="running"), done("each", {"v": 1}, index=1)]
    assert [launch.name for launch in next_moves(FANOUT, {}, running).start] == ["each[2]"]
    # items end out of order: the output is still in item order
    ended = [listed] + [done("each", {"v": i}, index=i) for i in (4, 2, 0, 3, 1)]
    moves = next_moves(FANOUT, {}, ended)
    assert moves.done
    assert moves.states["each"].output == [{"v": i} for i in range(5)]


def test_foreach_over_an_empty_array_is_an_empty_output_and_a_non_array_fails():
    moves = next_moves(FANOUT, {}, [done("list", {"items": []})])
    assert moves.done and moves.states["each"].output == []
    moves = next_moves(FANOUT, {}, [done("list", {"items": "nope"})])
    assert moves.failed["step"] == "each" and "array" in moves.failed["message"]


def test_a_step_whose_template_fails_is_failed_with_the_reason():
    moves = next_moves(FANOUT, {}, [done("list", {"items": "nope"})])
    error = {"code": "COMPOSITE_STEP_FAILED", "message": "foreach must give an array, got str"}
    assert moves.states["each"].status == "failed" and moves.states["each"].error == error
    assert moves.failed["error"] == error and moves.start == []


def test_a_failed_item_fails_the_step_or_is_marked_with_continue_on_error():
    listed = done("list", {"items": [1, 2]})
    failed = done("each", index=1, status="failed", error={"code": "X", "message": "boom"})
    moves = next_moves(FANOUT, {}, [listed, done("each", {"v": 0}, index=0), failed])
    assert moves.failed["step"] == "each" and moves.failed["error"]["item"] == 1
    tolerant = [FANOUT[0], {**FANOUT[1], "continueOnError": True}]
    moves = next_moves(tolerant, {}, [listed, done("each", {"v": 0}, index=0), failed])
    assert moves.done
    out = final_output(tolerant, {"all": "{{steps.each}}"}, {}, moves.states)
    assert out == {"all": [{"v": 0}, {"_error": "boom", "_failed": True}]}


def test_retry_waits_for_its_delay_then_starts_a_new_attempt():
    pipeline = [{"step": "a", "skill": "s", "input": {}, "retry": 2, "retryDelay": 500}]
    failed = done("a", status="failed", error={"message": "x"}, at=100.0)
    moves = next_moves(pipeline, {}, [failed], now=100.2)
    assert moves.start == [] and not moves.done and abs(moves.wake_in - 0.3) < 1e-6
    moves = next_moves(pipeline, {}, [failed], now=100.5)
    assert [launch.name for launch in moves.start] == ["a#2"]
    third = done("a", attempt=3, status="failed", error={"message": "x"}, at=101.0)
    moves = next_moves(pipeline, {}, [failed, done("a", attempt=2, status="failed"), third])
    assert moves.failed["step"] == "a"  # three tries: the first and two retries
    moves = next_moves(pipeline, {}, [failed, done("a", {"ok": 1}, attempt=2)], now=200)
    assert moves.done and moves.states["a"].output == {"ok": 1}


def test_canceled_children_are_not_retried_and_timeouts_are_passed_on():
    pipeline = [{"step": "a", "skill": "s", "input": {}, "retry": 3, "timeout": 1500}]
    assert next_moves(pipeline, {}, []).start[0].timeout_ms == 1500
    moves = next_moves(pipeline, {}, [done("a", status="canceled")], now=10)
    assert moves.failed["step"] == "a"


def test_a_false_condition_skips_and_dependants_start_in_the_same_call():
    pipeline = [
        {"step": "a", "skill": "s", "input": {}, "condition": "input.go"},
        {"step": "b", "skill": "s", "input": {"was": "{{steps.a || 'skipped'}}"}},
    ]
    moves = next_moves(pipeline, {"go": False}, [])
    assert moves.skip == ["a"] and moves.start[0].input == {"was": "skipped"}
    moves = next_moves(pipeline, {"go": False}, [done("b", {})], skipped={"a"})
    assert moves.done


def test_a_step_input_that_divides_by_zero_fails_the_step_naming_it():
    pipeline = [
        {"step": "a", "skill": "s", "input": {}},
        {"step": "b", "skill": "s", "input": {"x": "{{ steps.a.total / steps.a.count }}"}},
    ]
    moves = next_moves(pipeline, {}, [done("a", {"total": 3, "count": 0})])
    assert moves.failed is not None and moves.start == []
    assert moves.failed["step"] == "b"
    assert moves.failed["message"].startswith("step 'b': template '{{steps.a.total")


def test_a_stopped_composite_cancels_the_steps_left_without_a_running_child():
    states = {"a": StepState("succeeded", {}), "b": StepState("running"), "c": StepState("running")}
    out = stopped_steps(states, {"c"}, {"code": "TIMEOUT"})
    assert [out[name].status for name in "abc"] == ["succeeded", "canceled", "running"]
    assert out["b"].error == {"code": "TIMEOUT"}
