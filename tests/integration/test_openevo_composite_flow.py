"""Composite flow control through the API, Redis and a real worker: foreach within
maxConcurrency, a step's retry and timeout, the composite's own timeout (also over a nested
composite and a pending retry), step events in order and once each, and why each canceled
child was canceled (its parent's timeout, fail-fast or cancel, or its user's own cancel).
Children claimed under the cap, retried, canceled by their parent's timeout, and the retries of
a run and of a composite run on SQLite and Postgres; the code composites' calls and a step's
own timeout (the TIMEOUT of any run) on SQLite."""

from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime

import pytest

from runner_core.events import is_terminal, read_events
from tests.helpers import wait_for
from tests.integration.openevo_stack import install_node_runners, openevo_stack, start
from tests.integration.services import SQLITE_ONLY

pytestmark = pytest.mark.integration
TAGS = ["a", "b", "c", "d", "e", "f"]


@pytest.fixture(scope="module", autouse=True)
def node_runners():
    install_node_runners()


# the steps count their calls in a file outside their run and report their own pid: the run
# box (tests/integration/test_sandbox.py) would refuse the one and hide the other
UNBOXED = {"SKILL_RUNNER_SANDBOX": "off"}


@pytest.fixture(scope="module")
def stack(backend, tmp_path_factory):
    """One worker for the module (per database): no test stops or reconfigures it, and no two
    send the same body (the result cache would answer the second; the counter files are each
    test's own)."""
    root = tmp_path_factory.mktemp(backend)
    with openevo_stack(root, backend, concurrency=4, extra_env=UNBOXED) as stack:
        yield stack


def result_of(stack, rid):
    return stack.client.get(f"/v1/jobs/{rid}/result").json["result"]


def events_of(stack, rid):
    run_id = stack.client.get(f"/v1/jobs/{rid}").json["run_id"]
    path = stack.settings.runs_dir / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def events_to_the_end(stack, rid):
    """The run's events once its terminal event is written (just after its status)."""

    def ended():
        events = events_of(stack, rid)
        return events if any(is_terminal(e) for e in events) else None

    return wait_for(ended, 5)


def canceled_for(child, parent_rid, code, parent_code):
    """`child` ended canceled with `code`, its message and details naming the parent and (for
    CANCELED_BY_PARENT) how the parent ended."""
    assert child["status"] == "canceled", child
    error = child["error"]
    assert error["code"] == code, error
    assert parent_rid in error["message"], error
    assert error["details"]["parent_request_id"] == parent_rid, error
    assert error["details"]["parent_error"]["code"] == parent_code, error
    if code == "CANCELED_BY_PARENT":
        assert parent_code in error["message"], error


def stamp(value):
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def test_foreach_runs_one_child_per_item_at_most_max_concurrency_at_once(stack):
    rid = start(stack, "fanout", {"tags": TAGS, "ms": 700})
    assert stack.wait(rid, 90)["status"] == "succeeded"
    result = result_of(stack, rid)
    assert result["data"]["tags"] == [f"{i}:{t}" for i, t in enumerate(TAGS)]  # item order
    (step,) = result["steps"]
    assert step["status"] == "succeeded" and [i["index"] for i in step["items"]] == list(range(6))
    spans = []
    for item in step["items"]:
        child = stack.client.get(f"/v1/jobs/{item['request_id']}").json
        assert child["status"] == "succeeded"
        spans.append((stamp(child["started_at"]), stamp(child["finished_at"])))
    # at any child's start, fewer than two others are running
    for begin, _ in spans:
        overlapping = [s for s in spans if s[0] <= begin < s[1]]
        assert len(overlapping) <= 2, spans
    # the worker has 4 processes: the cap, not the pool, kept it at two, yet two did overlap
    assert any(a[0] < b[1] and b[0] < a[1] for a in spans for b in spans if a is not b)
    started = [e for e in events_of(stack, rid) if e["type"] == "step.started"]
    assert sorted(e["data"]["index"] for e in started) == list(range(6))
    events = events_to_the_end(stack, rid)
    assert is_terminal(events[-1])  # every item's end before it
    ended = [e for e in events if e["type"] == "step.ended"]
    assert len(ended) == 6
    assert all(e["data"]["status"] == "succeeded" for e in ended)
    assert all(e["data"]["duration_ms"] >= 700 and e["data"]["step"] == "each" for e in ended)


def test_a_failed_step_is_retried_as_new_children_after_its_delay(stack, tmp_path):
    counter = tmp_path / "calls.txt"
    rid = start(stack, "retried_step", {"counter_file": str(counter), "fail_times": 2})
    assert stack.wait(rid, 90)["status"] == "succeeded"
    result = result_of(stack, rid)
    assert result["data"] == {"calls": 3}
    (step,) = result["steps"]
    assert step["attempts"] == 3 and step["status"] == "succeeded"
    ended = [e["data"] for e in events_of(stack, rid) if e["type"] == "step.ended"]
    assert [(e["attempt"], e["status"]) for e in ended] == [
        (1, "failed"),
        (2, "failed"),
        (3, "succeeded"),
    ]
    assert ended[0]["error"]["code"] == "SKILL_SCRIPT_FAILED"
    children = [stack.client.get(f"/v1/jobs/{e['request_id']}").json for e in ended]
    for before, after in zip(children, children[1:], strict=False):
        assert stamp(after["started_at"]) - stamp(before["finished_at"]) >= 0.4  # retryDelay


@SQLITE_ONLY
def test_a_step_over_its_timeout_is_killed_and_fails_the_composite(stack):
    rid = start(stack, "slow_step", {})
    status = stack.wait(rid, 60)
    assert status["status"] == "failed"
    assert status["error"]["code"] == "COMPOSITE_STEP_FAILED"
    assert status["error"]["details"]["error"]["code"] == "TIMEOUT"
    (step,) = result_of(stack, rid)["steps"]
    assert step["status"] == "failed" and step["error"]["code"] == "TIMEOUT"
    assert step["duration_ms"] < 20000  # killed, not slept out


def test_the_composite_timeout_cancels_its_running_step_and_fails_the_parent(stack):
    rid = start(stack, "slow_composite", {})
    status = stack.wait(rid, 60)
    assert status["status"] == "failed" and status["error"]["code"] == "TIMEOUT"
    assert stamp(status["finished_at"]) - stamp(status["started_at"]) < 25  # not the 30 s sleep
    (step,) = result_of(stack, rid)["steps"]
    child = stack.wait(step["request_id"], 30)
    canceled_for(child, rid, "CANCELED_BY_PARENT", "TIMEOUT")  # no user asked
    assert result_of(stack, step["request_id"])["error"]["code"] == "CANCELED_BY_PARENT"
    stderr = stack.settings.runs_dir / child["run_id"] / "logs" / "stderr.txt"
    pid = int(re.search(r"pid (\d+)", stderr.read_text()).group(1))
    deadline = time.time() + 10
    while time.time() < deadline and _alive(pid):
        time.sleep(0.1)
    assert not _alive(pid), f"the step's process {pid} outlived its cancel"


def test_the_composite_timeout_cancels_a_nested_composite_and_its_steps(stack):
    rid = start(stack, "nested_slow", {})
    status = stack.wait(rid, 60)
    assert status["status"] == "failed" and status["error"]["code"] == "TIMEOUT"
    (step,) = result_of(stack, rid)["steps"]
    assert step["status"] == "canceled", step  # not left running past the grace
    inner = stack.wait(step["request_id"], 10)
    canceled_for(inner, rid, "CANCELED_BY_PARENT", "TIMEOUT")
    (nap,) = result_of(stack, step["request_id"])["steps"]
    leaf = stack.wait(nap["request_id"], 10)
    canceled_for(leaf, rid, "CANCELED_BY_PARENT", "TIMEOUT")  # the composite that ended
    assert stamp(leaf["finished_at"]) - stamp(leaf["started_at"]) < 15  # not the 30 s sleep


def test_a_step_waiting_for_its_retry_is_canceled_with_the_composite(stack, tmp_path):
    # the step fails at once and would be retried after 30 s: the 3 s timeout comes first
    rid = start(stack, "patient_step", {"counter_file": str(tmp_path / "calls.txt")})
    status = stack.wait(rid, 30)
    assert status["status"] == "failed" and status["error"]["code"] == "TIMEOUT"
    (step,) = result_of(stack, rid)["steps"]
    assert step["status"] == "canceled" and step["error"]["code"] == "TIMEOUT", step
    assert step["attempts"] == 1


def test_a_retry_due_after_the_composite_timeout_waits_for_the_timeout(stack, tmp_path):
    rid = start(stack, "far_retry", {"counter_file": str(tmp_path / "calls.txt")})
    status = stack.wait(rid, 30)
    assert status["status"] == "failed" and status["error"]["code"] == "TIMEOUT", status
    assert stamp(status["finished_at"]) - stamp(status["started_at"]) >= 2.9


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"  # a zombie is gone but not yet reaped
    except OSError:
        return False


@SQLITE_ONLY
def test_an_index_py_composite_calls_skills_as_child_runs(stack):
    rid = start(stack, "research_in_code", {"topic": "queue runs"})
    assert stack.wait(rid, 60)["status"] == "succeeded"
    data = result_of(stack, rid)["data"]
    assert len(data["sources"]) == 3
    assert data["summary"].endswith("first: " + data["sources"][0]["snippet"].splitlines()[0])
    events = events_of(stack, rid)
    started = [e["data"] for e in events if e["type"] == "step.started"]
    ended = [e["data"] for e in events if e["type"] == "step.ended"]
    assert [s["step"] for s in started] == ["memory_search@1", "summarize@2"]
    # the fields of a pipeline step's events, as documented
    assert [(s["attempt"], e["attempt"]) for s, e in zip(started, ended, strict=True)] == [
        (1, 1)
    ] * 2
    assert [(e["step"], e["status"]) for e in ended] == [
        ("memory_search@1", "succeeded"),
        ("summarize@2", "succeeded"),
    ]
    child = stack.client.get(f"/v1/jobs/{started[1]['request_id']}").json
    assert child["status"] == "succeeded" and child["skill_id"] == "summarize"
    stderr = stack.settings.runs_dir / stack.wait(rid, 1)["run_id"] / "logs" / "stderr.txt"
    assert "not in this skill's `calls`" in stderr.read_text()  # sleep_ms was refused


@SQLITE_ONLY
def test_an_index_ts_composite_runs_calls_at_once_and_sees_a_failed_call(stack):
    rid = start(stack, "pair_in_code", {"ms": 1500})
    assert stack.wait(rid, 60)["status"] == "succeeded"
    data = result_of(stack, rid)["data"]
    a, b = data["a"], data["b"]
    assert a["started"] < b["ended"] and b["started"] < a["ended"], data  # both in flight
    assert "ctx.call('wrong_output') failed" in data["failure"]
    ended = {
        e["data"]["step"]: e["data"] for e in events_of(stack, rid) if e["type"] == "step.ended"
    }
    assert ended["wrong_output@3"]["error"]["code"] == "OUTPUT_VALIDATION_FAILED"


@SQLITE_ONLY
def test_a_call_whose_input_is_no_object_is_refused(stack):
    rid = start(stack, "odd_calls", {})
    assert stack.wait(rid, 60)["status"] == "succeeded"
    data = result_of(stack, rid)["data"]
    for label, kind in (("array", "an array"), ("empty_text", "a string"), ("number", "a number")):
        assert data[label] == (
            f"refused: ctx.call('sleep_ms') failed: the input must be an object, not {kind}"
        ), data  # not run with {} instead
    assert data["none"]["tag"] == ""  # no input: the callee's defaults
    started = [e["data"] for e in events_of(stack, rid) if e["type"] == "step.started"]
    assert len(started) == 1


def test_the_skill_retry_runs_a_failed_run_again_up_to_retry_times(stack, tmp_path):
    counter = tmp_path / "calls.txt"
    rid = start(stack, "flaky_retried", {"counter_file": str(counter), "fail_times": 2})
    assert stack.wait(rid, 60)["status"] == "succeeded"
    assert result_of(stack, rid)["data"] == {"calls": 3}
    events = events_of(stack, rid)
    retries = [e for e in events if e["data"].get("trigger") == "retry_after_failure"]
    warnings = [  # (unboxed, the run also warns that its network was not cut)
        e["data"] for e in events if e["type"] == "diagnostic.warning" and "attempt" in e["data"]
    ]
    assert len(retries) == 2 and [w["attempt"] for w in warnings] == [1, 2]
    assert warnings[0]["error"]["code"] == "SKILL_SCRIPT_FAILED"
    counter.unlink()
    rid = start(stack, "flaky_retried", {"counter_file": str(counter), "fail_times": 5})
    status = stack.wait(rid, 60)
    assert status["status"] == "failed" and status["error"]["code"] == "SKILL_SCRIPT_FAILED"
    assert counter.read_text() == "3"  # one run and two retries, no more


@SQLITE_ONLY
def test_an_index_composite_over_its_timeout_cancels_its_running_call(stack):
    rid = start(stack, "slow_in_code", {})
    status = stack.wait(rid, 60)
    assert status["status"] == "failed" and status["error"]["code"] == "TIMEOUT"
    (call,) = [e["data"] for e in events_of(stack, rid) if e["type"] == "step.started"]
    child = stack.wait(call["request_id"], 30)
    canceled_for(child, rid, "CANCELED_BY_PARENT", "TIMEOUT")
    assert stamp(child["finished_at"]) - stamp(child["started_at"]) < 15  # not the 20 s sleep


def test_the_composites_own_retry_runs_all_its_steps_again(stack, tmp_path):
    counter = tmp_path / "calls.txt"
    rid = start(stack, "retried_composite", {"counter_file": str(counter), "fail_times": 2})
    status = stack.wait(rid, 60)
    assert status["status"] == "succeeded" and status["attempt"] == 3, status
    result = result_of(stack, rid)
    assert result["data"] == {"calls": 3, "tag": "first"}
    events = events_of(stack, rid)
    started = [e["data"] for e in events if e["type"] == "step.started"]
    assert [s["step"] for s in started] == ["first", "try"] * 3  # each attempt starts afresh
    tries = [stack.wait(s["request_id"])["status"] for s in started if s["step"] == "try"]
    assert tries == ["failed", "failed", "succeeded"]
    warned = [
        e["data"] for e in events if e["type"] == "diagnostic.warning" and "attempt" in e["data"]
    ]
    assert [w["attempt"] for w in warned] == [1, 2]
    assert warned[0]["error"]["code"] == "COMPOSITE_STEP_FAILED"
    step = {s["step"]: s for s in result["steps"]}["try"]
    assert step["status"] == "succeeded" and step["request_id"] == started[-1]["request_id"]
    counter.unlink()
    rid = start(stack, "retried_composite", {"counter_file": str(counter), "fail_times": 5})
    status = stack.wait(rid, 60)
    assert status["status"] == "failed" and status["attempt"] == 3
    assert status["error"]["code"] == "COMPOSITE_STEP_FAILED"
    assert status["error"]["details"]["step"] == "try"
    assert counter.read_text() == "3"  # one run and two retries, no more


@SQLITE_ONLY
def test_an_index_composites_retry_calls_afresh(stack, tmp_path):
    counter = tmp_path / "calls.txt"
    rid = start(stack, "retried_in_code", {"counter_file": str(counter), "fail_times": 1})
    status = stack.wait(rid, 60)
    assert status["status"] == "succeeded" and status["attempt"] == 2, status
    assert result_of(stack, rid)["data"] == {"calls": 2}  # the second attempt's own call
    ended = [e["data"] for e in events_of(stack, rid) if e["type"] == "step.ended"]
    assert [(e["step"], e["status"]) for e in ended] == [
        ("flaky@1", "failed"),
        ("2:flaky@1", "succeeded"),
    ]


def _started(stack, rid, count):
    deadline = time.time() + 20
    while time.time() < deadline:
        run_id = stack.client.get(f"/v1/jobs/{rid}").json["run_id"]
        events = stack.settings.runs_dir / run_id / "events.jsonl"
        if events.is_file() and events.read_text().count('"step.started"') == count:
            return
        time.sleep(0.1)
    raise AssertionError(f"{count} steps of {rid} did not start")


def test_cancel_of_a_foreach_kills_its_running_items_and_ends_the_parent_at_once(stack):
    # as many items as the worker has processes: no process is free for the parent's advance
    rid = start(stack, "sleepy_fanout", {"items": [15000] * 4})
    _started(stack, rid, 4)
    time.sleep(1.5)  # every item running
    assert stack.client.post(f"/v1/jobs/{rid}/cancel").json["accepted"] is True
    began = time.time()
    status = stack.wait(rid, 20)
    assert status["status"] == "canceled", status
    assert status["error"]["code"] == "CANCELED_BY_USER"
    assert time.time() - began < 5
    (step,) = result_of(stack, rid)["steps"]
    assert [item["status"] for item in step["items"]] == ["canceled"] * 4, step
    for item in step["items"]:
        canceled_for(stack.wait(item["request_id"], 5), rid, "CANCELED_BY_USER", "CANCELED_BY_USER")
    assert time.time() - began < 8


@SQLITE_ONLY
@pytest.mark.parametrize(
    ("skill", "named"),
    [
        ("ratio_step", "step 'ratio': template '{{input.total / input.count}}'"),
        ("ratio_mapping", "outputMapping: template '{{input.total // input.count}}'"),
    ],
)
def test_a_template_dividing_by_zero_fails_the_composite_at_once(stack, skill, named):
    rid = start(stack, skill, {"total": 6, "count": 0})
    status = stack.wait(rid, 20)
    assert status["status"] == "failed", status
    assert status["error"]["code"] == "COMPOSITE_STEP_FAILED"
    assert status["error"]["message"].startswith(named)
    assert "ZeroDivisionError" in status["error"]["message"]
    assert stamp(status["finished_at"]) - stamp(status["started_at"]) < 10
    if skill == "ratio_step":  # the step that failed says so in the result, with why
        steps = {s["step"]: s for s in result_of(stack, rid)["steps"]}
        assert steps["first"]["status"] == "succeeded"
        assert steps["ratio"]["status"] == "failed", steps
        assert "ZeroDivisionError" in steps["ratio"]["error"]["message"]
        assert status["error"]["details"]["error"] == steps["ratio"]["error"]


@SQLITE_ONLY
def test_a_foreach_over_an_empty_array_lists_no_items(stack):
    rid = start(stack, "fanout", {"tags": []})
    assert stack.wait(rid, 20)["status"] == "succeeded"
    result = result_of(stack, rid)
    assert result["data"] == {"runs": [], "tags": []}
    assert result["steps"] == [{"step": "each", "status": "succeeded", "error": None, "items": []}]


def test_a_failing_foreach_ends_its_events_with_the_terminal_event(stack):
    # item 0 fails at once (a negative sleep) while items 1 and 2 run: the parent fails, and
    # the running items, canceled, end after it
    rid = start(stack, "sleepy_fanout", {"items": [-1, 4000, 4000]})
    status = stack.wait(rid, 30)
    assert status["status"] == "failed" and status["error"]["code"] == "COMPOSITE_STEP_FAILED"
    started = [e["data"] for e in events_of(stack, rid) if e["type"] == "step.started"]
    assert len(started) == 3
    children = [stack.wait(item["request_id"], 15) for item in started]
    assert children[0]["status"] == "failed"
    for child in children[1:]:  # killed by the fail-fast, not by a user
        if child["status"] == "canceled":
            canceled_for(child, rid, "CANCELED_BY_PARENT", "COMPOSITE_STEP_FAILED")
        else:
            assert child["status"] == "failed", child
    time.sleep(1.0)  # a late step.ended, written by an item's own worker after its end
    events = events_to_the_end(stack, rid)
    assert is_terminal(events[-1])
    ended = [e["data"] for e in events if e["type"] == "step.ended"]
    assert (ended[0]["index"], ended[0]["status"]) == (0, "failed")


def test_cancel_of_a_foreach_gives_its_queued_items_their_terminal_event(stack):
    # more items than the worker has processes: three are still queued when the cancel comes
    rid = start(stack, "sleepy_fanout", {"items": [15000] * 7})
    _started(stack, rid, 7)
    time.sleep(1.5)
    assert stack.client.post(f"/v1/jobs/{rid}/cancel").json["accepted"] is True
    assert stack.wait(rid, 20)["status"] == "canceled"
    started = [e["data"] for e in events_of(stack, rid) if e["type"] == "step.started"]
    children = [stack.wait(item["request_id"], 10) for item in started]
    assert [c["status"] for c in children] == ["canceled"] * 7
    assert any(c["started_at"] is None for c in children)  # some never started
    for child in children:
        canceled_for(child, rid, "CANCELED_BY_USER", "CANCELED_BY_USER")
    ended = [e["data"] for e in events_to_the_end(stack, rid) if e["type"] == "step.ended"]
    assert len(ended) == 7  # the queued ones' written by the parent, with their error
    assert {e["error"]["code"] for e in ended} == {"CANCELED_BY_USER"}, ended
    assert all(rid in e["error"]["message"] for e in ended), ended
    for child in children:
        run_dir = stack.settings.runs_dir / child["run_id"]
        ended = wait_for(lambda d=run_dir: [e for e in read_events(d) if is_terminal(e)], 5)
        assert [e["data"]["terminal"]["status"] for e in ended] == ["canceled"], child


def test_each_childs_step_started_comes_before_its_step_ended(stack):
    # children that end at once, many of them: one may end while the parent still sends the rest
    rid = start(stack, "sleepy_fanout", {"items": [0] * 100})
    assert stack.wait(rid, 120)["status"] == "succeeded"
    events = events_to_the_end(stack, rid)
    seen: dict[str, list[str]] = {}
    for event in events:
        if event["type"] in ("step.started", "step.ended"):
            seen.setdefault(event["data"]["request_id"], []).append(event["type"])
    assert len(seen) == 100
    out_of_order = [rid for rid, kinds in seen.items() if kinds != ["step.started", "step.ended"]]
    assert out_of_order == [], f"{len(out_of_order)} children: step.ended before step.started"


def test_children_ending_together_each_get_one_step_ended(stack):
    # four children end at the same moment: their parent's advances run side by side
    for round_ in range(4):
        rid = start(stack, "together", {"at": time.time() + 2, "items": list("abcd")})
        assert stack.wait(rid, 30)["status"] == "succeeded"
        assert result_of(stack, rid)["data"] == {"tags": list("abcd")}
        time.sleep(0.5)  # a late duplicate, written after the end
        events = events_to_the_end(stack, rid)
        ended = [e["data"]["request_id"] for e in events if e["type"] == "step.ended"]
        assert len(ended) == 4 and len(set(ended)) == 4, (round_, ended)


def test_a_users_cancel_of_one_child_says_so_and_its_siblings_name_the_failed_parent(stack):
    rid = start(stack, "sleepy_fanout", {"items": [15001, 15001]})
    _started(stack, rid, 2)
    time.sleep(1.5)  # both items running
    first, second = [e["data"] for e in events_of(stack, rid) if e["type"] == "step.started"]
    assert stack.client.post(f"/v1/jobs/{first['request_id']}/cancel").json["accepted"] is True
    child = stack.wait(first["request_id"], 10)
    assert child["status"] == "canceled", child
    assert (child["error"]["code"], child["error"]["message"]) == (
        "CANCELED_BY_USER",
        "canceled by user",
    )
    # the canceled item fails its step, and the composite stops its other item
    status = stack.wait(rid, 20)
    assert status["status"] == "failed" and status["error"]["code"] == "COMPOSITE_STEP_FAILED"
    sibling = stack.wait(second["request_id"], 10)
    canceled_for(sibling, rid, "CANCELED_BY_PARENT", "COMPOSITE_STEP_FAILED")
