from __future__ import annotations

import json
from pathlib import Path

from runner_core.output import run_output_chain

SCHEMA = {
    "type": "object",
    "required": ["title", "count"],
    "properties": {"title": {"type": "string"}, "count": {"type": "integer"}},
    "additionalProperties": False,
}


def read_json(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


def write_result_file(run_dir: Path, text: str) -> None:
    (run_dir / "result").mkdir(parents=True, exist_ok=True)
    (run_dir / "result" / "result.json").write_text(text, encoding="utf-8")


def test_valid_stdout_passes_without_warnings_and_writes_output_json(tmp_path: Path) -> None:
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text='{"title": "t", "count": 1}')
    assert outcome.ok
    assert outcome.data == {"title": "t", "count": 1}
    assert outcome.normalization_level is None
    assert (outcome.source, outcome.warnings) == ("engine_text", [])
    assert read_json(tmp_path / "result" / "output.json") == {"title": "t", "count": 1}


def test_fenced_json_with_prose_is_an_n0_normalization(tmp_path: Path) -> None:
    text = 'Done! Here you go:\n```json\n{"title": "a {b}", "count": 2}\n```\nAnything else?'
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=text)
    assert outcome.ok
    assert outcome.data == {"title": "a {b}", "count": 2}
    assert outcome.normalization_level == "N0"
    assert outcome.warnings[0]["code"] == "OUTPUT_NORMALIZED_N0"
    assert outcome.warnings[0]["details"]["fixes"] == ["stripped_code_fence"]


def test_plain_json_text_needs_no_normalization(tmp_path: Path) -> None:
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text='{"title": "t", "count": 1}\n')
    assert outcome.ok and outcome.normalization_level is None and outcome.warnings == []


def test_json_embedded_in_prose_is_an_n0_extraction(tmp_path: Path) -> None:
    outcome = run_output_chain(
        tmp_path, SCHEMA, engine_text='Result: {"title": "t", "count": 1} ok'
    )
    assert outcome.ok and outcome.warnings[0]["details"]["fixes"] == ["extracted_embedded_json"]


def test_top_level_array_validates_against_array_schema(tmp_path: Path) -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    outcome = run_output_chain(tmp_path, schema, engine_text="The ids are:\n[3, 1, 2]")
    assert (outcome.ok, outcome.data) == (True, [3, 1, 2])


def test_raw_output_is_always_written(tmp_path: Path) -> None:
    envelope = {"type": "result", "result": "no json here"}
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text="no json here", envelope=envelope)
    assert not outcome.ok
    assert (tmp_path / "raw" / "engine_output.txt").read_text(encoding="utf-8") == "no json here"
    assert read_json(tmp_path / "raw" / "engine_output.json") == envelope
    assert outcome.raw_output_path == str(tmp_path / "raw" / "engine_output.txt")


def test_a_text_file_becomes_the_raw_output_by_hard_link(tmp_path: Path) -> None:
    stdout = tmp_path / "logs" / "stdout.txt"
    stdout.parent.mkdir()
    stdout.write_text('{"title": "t", "count": 1}', encoding="utf-8")
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "engine_output.txt").write_text("an older attempt", encoding="utf-8")
    outcome = run_output_chain(
        tmp_path, SCHEMA, engine_text=stdout.read_text(), engine_text_file=stdout
    )
    raw = tmp_path / "raw" / "engine_output.txt"
    assert outcome.ok and raw.read_text(encoding="utf-8") == '{"title": "t", "count": 1}'
    assert raw.stat().st_ino == stdout.stat().st_ino


def test_a_missing_text_file_falls_back_to_writing_the_text(tmp_path: Path) -> None:
    outcome = run_output_chain(
        tmp_path,
        SCHEMA,
        engine_text='{"title": "t", "count": 1}',
        engine_text_file=tmp_path / "gone.txt",
    )
    assert outcome.ok
    assert (tmp_path / "raw" / "engine_output.txt").read_text() == '{"title": "t", "count": 1}'


def test_result_file_is_preferred_over_stdout(tmp_path: Path) -> None:
    write_result_file(tmp_path, '{"title": "from file", "count": 1}')
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text='{"title": "from stdout", "count": 2}')
    assert outcome.data == {"title": "from file", "count": 1}
    assert outcome.source == "result_file"


def test_a_result_file_linked_out_of_the_run_is_not_read(tmp_path: Path) -> None:
    """A run may plant result/result.json as a link to a file outside it (another run's
    result, a host file its box hides): the chain never reads through it."""
    outside = tmp_path / "outside.json"
    outside.write_text('{"title": "not this run\'s", "count": 9}', encoding="utf-8")
    run_dir = tmp_path / "run"
    (run_dir / "result").mkdir(parents=True)
    (run_dir / "result" / "result.json").symlink_to(outside)
    outcome = run_output_chain(run_dir, SCHEMA, engine_text='{"title": "stdout", "count": 2}')
    assert outcome.data == {"title": "stdout", "count": 2}
    assert outcome.source == "engine_text"


def test_invalid_result_file_falls_back_to_stdout_with_warning(tmp_path: Path) -> None:
    write_result_file(tmp_path, '{"title": "from file"}')
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text='{"title": "from stdout", "count": 2}')
    assert outcome.ok
    assert outcome.source == "engine_text"
    [warning] = outcome.warnings
    assert warning["code"] == "OUTPUT_RESULT_FILE_INVALID"
    assert warning["details"]["errors"][0]["validator"] == "required"


def test_envelope_is_used_when_there_is_no_result_file(tmp_path: Path) -> None:
    envelope = {"title": "from envelope", "count": 5}
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text="prose only", envelope=envelope)
    assert (outcome.ok, outcome.source, outcome.data) == (True, "envelope", envelope)


def test_envelope_is_preferred_over_stdout(tmp_path: Path) -> None:
    outcome = run_output_chain(
        tmp_path,
        SCHEMA,
        engine_text='{"title": "stdout", "count": 1}',
        envelope={"title": "envelope", "count": 2},
    )
    assert outcome.data == {"title": "envelope", "count": 2}


def test_trailing_commas_are_repaired_at_n0_with_warning(tmp_path: Path) -> None:
    text = '```json\n{\n  "title": "t",\n  "count": 1,\n}\n```'
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=text)
    assert outcome.ok
    assert outcome.normalization_level == "N0"
    [warning] = outcome.warnings
    assert warning["code"] == "OUTPUT_NORMALIZED_N0"
    assert (warning["level"], warning["normalization_level"]) == ("warning", "N0")
    assert "removed_trailing_commas" in warning["details"]["fixes"]


def test_double_encoded_json_is_decoded_at_n0(tmp_path: Path) -> None:
    text = json.dumps(json.dumps({"title": "t", "count": 1}))
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=text)
    assert (outcome.ok, outcome.normalization_level) == (True, "N0")
    assert outcome.data == {"title": "t", "count": 1}
    assert outcome.warnings[0]["details"]["fixes"] == ["decoded_double_encoded_json"]


def test_later_json_value_is_used_when_the_first_is_a_citation(tmp_path: Path) -> None:
    text = 'As shown in [1], the result is {"title": "t", "count": 1}'
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=text)
    assert (outcome.ok, outcome.normalization_level) == (True, "N0")
    assert "skipped_earlier_json_values" in outcome.warnings[0]["details"]["fixes"]


def test_invalid_json_everywhere_fails_and_writes_no_output(tmp_path: Path) -> None:
    write_result_file(tmp_path, "{not json")
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text="I give up {", envelope="still { not")
    assert not outcome.ok
    assert outcome.data is None
    assert outcome.validation_errors[0]["validator"] == "parse"
    assert not (tmp_path / "result" / "output.json").exists()
    assert read_json(tmp_path / "result" / "validation.json")["ok"] is False


def test_failure_reports_all_errors_of_the_best_candidate(tmp_path: Path) -> None:
    text = 'See [1]. Output: {"title": 7, "extra": true}'
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=text)
    assert not outcome.ok
    # the object (right type, 3 errors) is closer to valid than the citation list (wrong type)
    assert sorted(e["validator"] for e in outcome.validation_errors) == [
        "additionalProperties",
        "required",
        "type",
    ]


def test_validation_json_records_every_step(tmp_path: Path) -> None:
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text='{"title": "t", "count": 1,}')
    record = read_json(tmp_path / "result" / "validation.json")
    assert record["steps"] == outcome.steps
    assert [(s["name"], s["level"], s["ok"]) for s in record["steps"]] == [
        ("parse engine_text", "parse", False),
        ("N0 repair engine_text", "N0", True),
    ]
    assert all(s["duration_ms"] >= 0 for s in record["steps"])
    assert record["normalization_level"] == "N0"
    assert record["raw_output_path"] == "raw/engine_output.txt"


def test_no_output_at_all_fails_cleanly(tmp_path: Path) -> None:
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=None)
    assert not outcome.ok
    assert outcome.validation_errors[0]["message"] == "the engine produced no output"
    assert (tmp_path / "raw" / "engine_output.txt").read_text(encoding="utf-8") == ""


def test_invalid_schema_fails_with_schema_step(tmp_path: Path) -> None:
    outcome = run_output_chain(tmp_path, {"type": 12}, engine_text='{"a": 1}')
    assert not outcome.ok
    assert outcome.validation_errors[0]["validator"] == "schema"
    assert [s["level"] for s in outcome.steps] == ["schema"]
    assert (tmp_path / "raw" / "engine_output.txt").exists()


def test_a_result_file_the_skill_names_is_read_from_there(tmp_path: Path) -> None:
    write_result_file(tmp_path, '{"title": "default place", "count": 1}')
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "answer.json").write_text('{"title": "named place", "count": 3}')
    outcome = run_output_chain(
        tmp_path, SCHEMA, engine_text="done", result_file=Path("out/answer.json")
    )
    assert (outcome.data, outcome.source) == ({"title": "named place", "count": 3}, "result_file")


def test_result_mode_stdout_reads_only_the_final_message(tmp_path: Path) -> None:
    write_result_file(tmp_path, '{"title": "a stale file", "count": 1}')
    outcome = run_output_chain(
        tmp_path, SCHEMA, engine_text='{"title": "printed", "count": 2}', result_file=None
    )
    assert (outcome.data, outcome.source) == ({"title": "printed", "count": 2}, "engine_text")


def test_an_integer_too_long_to_convert_is_a_validation_error_not_a_crash(tmp_path: Path) -> None:
    """Python converts integers of at most 4300 digits: a longer one in the output (stdout or
    the result file) is reported as out of range at its path, and the run fails cleanly."""
    text = '{"title": "t", "count": ' + "9" * 5000 + "}"
    write_result_file(tmp_path, text)
    outcome = run_output_chain(tmp_path, SCHEMA, engine_text=text)
    assert not outcome.ok
    assert ("$.count", "finite") in {(e["path"], e["validator"]) for e in outcome.validation_errors}
