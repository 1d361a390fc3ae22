from __future__ import annotations

import json
from pathlib import Path

from runner_core.output import NormalizeRequest, RepairReply, RepairRequest, run_output_chain

SCHEMA = {
    "type": "object",
    "required": ["title", "count"],
    "properties": {"title": {"type": "string"}, "count": {"type": "integer"}},
}
BROKEN = "The title is Quarterly and I counted 4 items."


class FakeSkillCommand:
    """Stands in for a skill's normalizer/fallback script: writes result/result.json."""

    def __init__(self, writes: str | None = None, raises: Exception | None = None) -> None:
        self.writes = writes
        self.raises = raises
        self.requests: list[NormalizeRequest] = []
        self.raw_seen: list[str] = []

    def __call__(self, request: NormalizeRequest) -> None:
        self.requests.append(request)
        self.raw_seen.append(request.raw_output_path.read_text(encoding="utf-8"))
        if self.raises is not None:
            raise self.raises
        if self.writes is not None:
            request.result_path.parent.mkdir(parents=True, exist_ok=True)
            request.result_path.write_text(self.writes, encoding="utf-8")


class FakeRepair:
    """Stands in for the runner's repair backend: answers with scripted texts."""

    def __init__(self, *answers: str | RepairReply | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[RepairRequest] = []

    def __call__(self, request: RepairRequest) -> str | RepairReply | None:
        self.requests.append(request)
        answer = self.answers[min(len(self.requests), len(self.answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_normalizer_writing_result_json_succeeds_at_n1(tmp_path: Path) -> None:
    normalizer = FakeSkillCommand(writes='{"title": "Quarterly", "count": 4}')
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=BROKEN, normalizer=normalizer)
    assert outcome.ok
    assert (outcome.normalization_level, outcome.source) == ("N1", "normalizer")
    assert outcome.warnings[0]["code"] == "OUTPUT_NORMALIZED_N1"
    assert normalizer.raw_seen == [BROKEN]  # raw output was saved before the command ran


def test_normalizer_gets_a_schema_file_when_none_is_given(tmp_path: Path) -> None:
    normalizer = FakeSkillCommand(writes='{"title": "Quarterly", "count": 4}')
    run_output_chain(tmp_path, SCHEMA, engine_text=BROKEN, normalizer=normalizer)
    [request] = normalizer.requests
    assert request.level == "N1"
    assert request.run_dir == tmp_path
    assert request.result_path == tmp_path / "result" / "result.json"
    assert json.loads(request.schema_path.read_text(encoding="utf-8")) == SCHEMA


def test_given_schema_path_is_passed_through(tmp_path: Path) -> None:
    schema_path = tmp_path / "skill" / "output.schema.json"
    normalizer = FakeSkillCommand(writes='{"title": "Quarterly", "count": 4}')
    run_output_chain(
        tmp_path, SCHEMA, engine_text=BROKEN, normalizer=normalizer, schema_path=schema_path
    )
    assert normalizer.requests[0].schema_path == schema_path


def test_normalizer_is_not_called_when_output_already_valid(tmp_path: Path) -> None:
    normalizer = FakeSkillCommand(writes='{"title": "x", "count": 0}')
    outcome = run_output_chain(
        tmp_path, SCHEMA, engine_text='{"title": "t", "count": 1}', normalizer=normalizer
    )
    assert outcome.normalization_level is None
    assert normalizer.requests == []


def test_raising_normalizer_is_recorded_and_fallback_succeeds_at_n2(tmp_path: Path) -> None:
    normalizer = FakeSkillCommand(raises=RuntimeError("normalize.py exited 2"))
    fallback = FakeSkillCommand(writes='{"title": "unknown", "count": 0}')
    outcome = run_output_chain(
        tmp_path, SCHEMA, engine_text=BROKEN, normalizer=normalizer, fallback=fallback
    )
    assert (outcome.ok, outcome.normalization_level, outcome.source) == (True, "N2", "fallback")
    assert outcome.warnings[0]["code"] == "OUTPUT_FALLBACK_N2"
    n1 = next(s for s in outcome.steps if s["level"] == "N1")
    assert n1["ok"] is False
    assert n1["errors"][0]["message"] == "RuntimeError: normalize.py exited 2"
    assert fallback.requests[0].level == "N2"


def test_normalizer_that_writes_nothing_is_a_failed_step(tmp_path: Path) -> None:
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=BROKEN, normalizer=FakeSkillCommand())
    assert not outcome.ok
    n1 = next(s for s in outcome.steps if s["level"] == "N1")
    assert "did not write result/result.json" in n1["errors"][0]["message"]


def test_normalizer_leaving_stale_invalid_result_file_does_not_pass(tmp_path: Path) -> None:
    (tmp_path / "result").mkdir()
    (tmp_path / "result" / "result.json").write_text('{"title": "t"}', encoding="utf-8")
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=BROKEN, normalizer=FakeSkillCommand())
    n1 = next(s for s in outcome.steps if s["level"] == "N1")
    assert "left unchanged" in n1["errors"][0]["message"]
    assert outcome.validation_errors[0]["validator"] == "required"


def test_repair_is_off_by_default(tmp_path: Path) -> None:
    repair = FakeRepair('{"title": "t", "count": 1}')
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=BROKEN, repair=repair)
    assert not outcome.ok
    assert repair.requests == []


def test_repair_rounds_are_bounded(tmp_path: Path) -> None:
    repair = FakeRepair('{"title": "t"}')
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=BROKEN, repair=repair, repair_rounds=3)
    assert not outcome.ok
    assert [r.round for r in repair.requests] == [1, 2, 3]
    assert [s["name"] for s in outcome.steps if s["level"] == "N3"] == [
        "N3 repair round 1",
        "N3 repair round 2",
        "N3 repair round 3",
    ]
    assert outcome.validation_errors[0]["validator"] == "required"


def test_repair_round_two_gets_previous_answer_and_errors(tmp_path: Path) -> None:
    repair = FakeRepair('{"title": "t"}', '```json\n{"title": "t", "count": 1}\n```')
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=BROKEN, repair=repair, repair_rounds=3)
    assert (outcome.ok, outcome.normalization_level, outcome.source) == (True, "N3", "repair")
    first, second = repair.requests
    assert first.text == BROKEN
    assert first.errors[0]["validator"] == "parse"
    assert second.text == '{"title": "t"}'
    assert second.errors[0]["validator"] == "required"
    [warning] = outcome.warnings
    assert warning["code"] == "OUTPUT_REPAIRED_N3"
    assert "meaning may have shifted" in warning["message"]


def test_raising_repair_is_recorded_and_next_round_runs(tmp_path: Path) -> None:
    repair = FakeRepair(TimeoutError("model timed out"), '{"title": "t", "count": 1}')
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=BROKEN, repair=repair, repair_rounds=2)
    assert outcome.ok
    n3 = [s for s in outcome.steps if s["level"] == "N3"]
    assert [s["ok"] for s in n3] == [False, True]
    assert n3[0]["errors"][0]["message"] == "TimeoutError: model timed out"


def test_all_levels_failing_records_each_step_in_order(tmp_path: Path) -> None:
    outcome = run_output_chain(
        tmp_path,
        SCHEMA,
        engine_text=BROKEN,
        normalizer=FakeSkillCommand(writes="still not json"),
        fallback=FakeSkillCommand(writes='{"count": "many"}'),
        repair=FakeRepair("sorry"),
        repair_rounds=1,
    )
    assert not outcome.ok
    assert [s["level"] for s in outcome.steps] == ["parse", "N0", "N1", "N2", "N3"]
    # the fallback's object is the closest to valid, so its errors are reported
    assert sorted(e["validator"] for e in outcome.validation_errors) == ["required", "type"]
    record = json.loads((tmp_path / "result" / "validation.json").read_text(encoding="utf-8"))
    assert [s["level"] for s in record["steps"]] == ["parse", "N0", "N1", "N2", "N3"]


def test_repair_rounds_follow_the_session_each_reply_names_and_add_up_their_tokens(
    tmp_path: Path,
) -> None:
    repair = FakeRepair(
        RepairReply('{"title": "t"}', "session-2", {"input_tokens": 5, "output_tokens": 1}),
        RepairReply(None, None, {"input_tokens": 7}, error="ENGINE_FAILED: model said 500"),
        RepairReply('{"title": "t", "count": 1}', "session-3", {"input_tokens": 2}),
    )
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=BROKEN, repair=repair, repair_rounds=3)
    assert outcome.ok
    # the first round continues the turn's session (None: the repair knows it), the next ones
    # the session the last answering round named
    assert [r.session_id for r in repair.requests] == [None, "session-2", "session-2"]
    assert outcome.repaired.session_id == "session-3"
    assert outcome.repaired.tokens == {"input_tokens": 14, "output_tokens": 1}
    n3 = [s for s in outcome.steps if s["level"] == "N3"]
    assert n3[1]["errors"][0]["message"] == "ENGINE_FAILED: model said 500"


def test_a_chain_without_repair_rounds_reports_no_session_and_no_tokens(tmp_path: Path) -> None:
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text='{"title": "t", "count": 1}')
    assert (outcome.repaired.session_id, outcome.repaired.tokens) == (None, None)
