"""Why a composite's children are canceled when it ends (runner_core.store.cancels): a code and
a message that name the parent, never CANCELED_BY_USER unless the parent was canceled."""

from __future__ import annotations

from runner_core.error_codes import ErrorCode
from runner_core.results import RunError
from runner_core.store.cancels import parent_ended
from runner_core.store.models import Run

PARENT = Run(id="p", request_id="req-parent", skill_id="research", attempt=1)
TIMEOUT = {"code": "TIMEOUT", "message": "the composite's timeout (3000 ms) passed"}


def test_a_parent_past_its_timeout_cancels_its_children_canceled_by_parent():
    reason = parent_ended(PARENT, "failed", TIMEOUT)
    assert reason.code == ErrorCode.CANCELED_BY_PARENT
    assert "req-parent" in reason.message and "research" in reason.message
    assert "TIMEOUT" in reason.message and "3000 ms" in reason.message
    assert reason.as_dict()["details"] == {
        "parent_request_id": "req-parent",
        "parent_status": "failed",
        "parent_error": TIMEOUT,
    }


def test_a_parent_failed_by_a_step_names_that_failure():
    failed = {"code": "COMPOSITE_STEP_FAILED", "message": "step 'b' failed", "details": {}}
    reason = parent_ended(PARENT, "failed", failed)
    assert reason.code == ErrorCode.CANCELED_BY_PARENT
    assert "COMPOSITE_STEP_FAILED" in reason.message and "req-parent" in reason.message
    assert reason.as_dict()["details"]["parent_error"] == {
        "code": "COMPOSITE_STEP_FAILED",
        "message": "step 'b' failed",
    }


def test_a_parent_canceled_by_its_user_passes_canceled_by_user_down_saying_so():
    canceled = {"code": "CANCELED_BY_USER", "message": "canceled by user"}
    reason = parent_ended(PARENT, "canceled", canceled)
    assert reason.code == ErrorCode.CANCELED_BY_USER
    assert reason.message.startswith("canceled with its parent composite (request req-parent")
    assert reason.message.endswith("canceled by user")


def test_a_parent_that_succeeded_or_retries_is_no_user_cancel():
    assert parent_ended(PARENT, "succeeded", None).code == ErrorCode.CANCELED_BY_PARENT
    retried = parent_ended(PARENT, "queued", None)
    assert retried.code == ErrorCode.CANCELED_BY_PARENT
    assert "attempt 1" in retried.message


def test_a_stored_reason_reads_back_as_the_same_error():
    reason = parent_ended(PARENT, "failed", TIMEOUT)
    assert RunError.from_dict(reason.as_dict()) == reason
