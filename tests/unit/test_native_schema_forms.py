"""The skill's output schema in each engine's native form (runner_core.engines.native_schema),
and the flag each adapter passes with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner_core.engines import get_adapter
from runner_core.engines.native_nulls import accepts_null, drop_added_nulls
from runner_core.engines.native_schema import STRICT, TOOL, native_schema
from tests.helpers import engine_context, printed

ARTIFACT_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1, "x-ui": "wide"},
        "when": {"type": "string", "format": "date"},
        "link": {"type": "string", "format": "uri"},
        "report": {"description": "the report", "x-type": "artifact", "x-filename": "r.md"},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
    "required": ["title", "when", "link", "report", "tags"],
    "additionalProperties": False,
}


def obj(properties: dict[str, Any], required: list[str] | None = None, **more: Any) -> dict:
    return {"type": "object", "properties": properties, "required": required or [], **more}


def test_strict_drops_extension_keys_and_narrowing_keywords() -> None:
    out = native_schema(ARTIFACT_SCHEMA, STRICT)
    assert out is not None
    props = out["properties"]
    assert "$schema" not in out
    assert props["title"] == {"type": "string"}
    assert props["when"] == {"type": "string", "format": "date"}  # a format strict mode knows
    assert props["link"] == {"type": "string"}  # "uri" it does not
    assert props["report"] == {"description": "the report", "type": "string"}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert out["additionalProperties"] is False


def test_strict_closes_an_object_that_did_not_say() -> None:
    out = native_schema(obj({"a": {"type": "integer"}}, ["a"]), STRICT)
    assert out == {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }


def test_strict_converts_nested_objects_in_items_and_any_of() -> None:
    inner = obj({"x": {"type": "string", "x-k": 1}}, ["x"])
    schema = obj({"list": {"type": "array", "items": inner}, "one": {"anyOf": [inner]}},
                 ["list", "one"])  # fmt: skip
    out = native_schema(schema, STRICT)
    assert out is not None
    assert out["properties"]["list"]["items"]["additionalProperties"] is False
    assert out["properties"]["one"]["anyOf"][0]["properties"]["x"] == {"type": "string"}


@pytest.mark.parametrize(
    "schema",
    [
        obj({"a": {"description": "anything"}}, ["a"]),  # no type: any value
        obj({"a": {"type": "array"}}, ["a"]),  # an array of any items
        obj(
            {"a": {"$ref": "#/$defs/n", "x-type": "artifact"}},
            ["a"],
            **{"$defs": {"n": {"type": "integer"}}},
        ),  # an artifact through a $ref: a path
        obj(
            {"a": {"$ref": "#/$defs/s", "type": "integer"}},
            ["a"],
            **{"$defs": {"s": {"type": "string"}}},
        ),  # a keyword beside a $ref contradicting it
        obj({"a": {"type": "string"}}, ["a"], additionalProperties=True),
        obj(
            {"a": obj({"k": {"type": "string"}}, ["k"], additionalProperties={"type": "string"})},
            ["a"],
        ),  # fmt: skip
        obj({"a": {"type": "object"}}, ["a"]),  # free-form keys
        obj({"a": {"allOf": [{"type": "string"}]}}, ["a"]),
        obj({"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}, ["a"]),
        obj({"a": {"type": "integer", "x-type": "artifact"}}, ["a"]),  # an artifact is a path
        {"type": "array", "items": {"type": "string"}},  # not an object at the top
        "not a schema",
    ],
)
def test_strict_has_no_faithful_form(schema: Any) -> None:
    assert native_schema(schema, STRICT) is None


def test_strict_makes_optional_properties_required_and_nullable() -> None:
    schema = obj(
        {
            "a": {"type": "string"},
            "b": {"type": "string"},
            "c": {"type": ["integer", "null"]},  # already nullable: unchanged
            "d": {"type": "string", "enum": ["x", "y"]},
            "e": {"$ref": "#/$defs/s"},
            "f": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "g": {"type": "array", "items": obj({"k": {"type": "integer"}, "m": {"type": "boolean"}}, ["k"])},
        },
        ["a"],
        **{"$defs": {"s": {"type": "string"}}},
    )  # fmt: skip
    out = native_schema(schema, STRICT)
    assert out is not None
    props = out["properties"]
    assert out["required"] == list(props)
    assert props["a"] == {"type": "string"}
    assert props["b"] == {"type": ["string", "null"]}
    assert props["c"] == {"type": ["integer", "null"]}
    assert props["d"] == {"anyOf": [{"type": "string", "enum": ["x", "y"]}, {"type": "null"}]}
    assert props["e"] == {"anyOf": [{"$ref": "#/$defs/s"}, {"type": "null"}]}
    assert props["f"]["anyOf"][-1] == {"type": "null"} and len(props["f"]["anyOf"]) == 3
    assert props["g"]["anyOf"][1] == {"type": "null"}  # an object or array: a null branch
    item = props["g"]["anyOf"][0]["items"]
    assert item["required"] == ["k", "m"]
    assert item["properties"]["m"] == {"type": ["boolean", "null"]}


def test_strict_ref_stands_alone() -> None:
    schema = obj(
        {
            "art": {"$ref": "#/$defs/path", "x-type": "artifact", "x-filename": "r.md"},
            "said": {"$ref": "#/$defs/path", "description": "what it is", "title": "T"},
            "more": {"$ref": "#/$defs/list", "minItems": 1},  # a keyword: the definition inlined
        },
        ["art", "said", "more"],
        **{"$defs": {"path": {"type": "string"},
                     "list": {"type": "array", "items": {"type": "string"}}}},
    )  # fmt: skip
    out = native_schema(schema, STRICT)
    assert out is not None
    props = out["properties"]
    assert props["art"] == {"$ref": "#/$defs/path"}  # not "type": "string" beside it
    assert props["said"] == {"$ref": "#/$defs/path"}
    assert props["more"] == {"type": "array", "items": {"type": "string"}, "minItems": 1}
    tool = native_schema(schema, TOOL)
    assert tool is not None and tool["properties"]["art"] == {"$ref": "#/$defs/path"}


def test_strict_types_an_enum_or_const_from_its_values() -> None:
    schema = obj({"e": {"enum": ["a", "b"]}, "n": {"enum": [1, None]}, "c": {"const": True}},
                 ["e", "n", "c"])  # fmt: skip
    out = native_schema(schema, STRICT)
    assert out is not None
    assert out["properties"]["e"] == {"enum": ["a", "b"], "type": "string"}
    assert out["properties"]["n"] == {"enum": [1, None], "type": ["integer", "null"]}
    assert out["properties"]["c"] == {"const": True, "type": "boolean"}


def test_added_nulls_are_dropped_where_the_skill_schema_does_not_allow_them() -> None:
    schema = obj(
        {
            "a": {"type": "string"},
            "b": {"type": "string"},
            "n": {"type": ["string", "null"]},  # null allowed: kept
            "r": {"type": "string"},  # required: kept (and left to the output chain)
            "list": {"type": "array", "items": {"$ref": "#/$defs/item"}},
            "either": {"anyOf": [obj({"p": {"type": "string"}, "q": {"type": "string"}}, ["p"]),
                                 obj({"z": {"type": "integer"}}, [])]},
        },
        ["a", "r"],
        **{"$defs": {"item": obj({"k": {"type": "integer"}, "m": {"type": "string"}}, ["k"])}},
    )  # fmt: skip
    answer = {
        "a": "x", "b": None, "n": None, "r": None,
        "list": [{"k": 1, "m": None}, {"k": 2, "m": "y"}],
        "either": {"p": "v", "q": None},
    }  # fmt: skip
    assert drop_added_nulls(schema, answer) == {
        "a": "x", "n": None, "r": None,
        "list": [{"k": 1}, {"k": 2, "m": "y"}],
        "either": {"p": "v"},
    }  # fmt: skip
    assert answer["b"] is None  # the answer itself is left alone
    # null allowed through a $ref (in an anyOf): kept, and the strict form adds no null of its own
    through = obj({"v": {"anyOf": [{"$ref": "#/$defs/none"}, {"type": "string"}]}}, [],
                  **{"$defs": {"none": {"type": "null"}}})  # fmt: skip
    assert drop_added_nulls(through, {"v": None}) == {"v": None}
    strict = native_schema(through, STRICT)
    assert strict is not None and len(strict["properties"]["v"]["anyOf"]) == 2
    assert drop_added_nulls(schema, "not an object") == "not an object"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, False),
        ({"type": ["string", "null"]}, True),
        ({"enum": ["a", None]}, True),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, True),
        ({"description": "anything"}, True),
        ({"x-type": "artifact"}, False),
    ],
)
def test_accepts_null(schema: dict, expected: bool) -> None:
    assert accepts_null(schema) is expected


def test_tool_keeps_optional_properties_and_constraints() -> None:
    schema = obj(
        {"a": {"type": "string", "minLength": 2, "x-role": "r"}, "b": {"type": "integer"}},
        ["a"],
        additionalProperties=True,
    )
    out = native_schema(schema, TOOL)
    assert out == {
        "type": "object",
        "properties": {"a": {"type": "string", "minLength": 2}, "b": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": True,
    }


def test_tool_drops_formats_and_types_artifact_fields_as_paths() -> None:
    out = native_schema(ARTIFACT_SCHEMA, TOOL)
    assert out is not None
    assert out["properties"]["when"] == {"type": "string"}
    assert out["properties"]["report"]["type"] == "string"
    assert "x-filename" not in json.dumps(out)


def test_property_names_starting_with_x_are_kept() -> None:
    out = native_schema(obj({"x-count": {"type": "integer"}}, ["x-count"]), STRICT)
    assert out is not None and "x-count" in out["properties"]


def test_conversion_leaves_its_input_alone() -> None:
    before = json.dumps(ARTIFACT_SCHEMA, sort_keys=True)
    native_schema(ARTIFACT_SCHEMA, STRICT)
    native_schema(ARTIFACT_SCHEMA, TOOL)
    assert json.dumps(ARTIFACT_SCHEMA, sort_keys=True) == before


# -- each adapter's flag


CONFIG = {"base_url": "http://127.0.0.1:9", "api_key": "k", "model": "m1"}


def schema_file(tmp_path: Path, schema: Any) -> Path:
    path = tmp_path / "output.schema.json"
    path.write_text(json.dumps(schema))
    return path


def passed_schema(engine: str, tmp_path: Path, schema: Any, **ctx: Any) -> Any:
    """The schema the adapter hands its CLI's flag (None: no flag)."""
    config = {**CONFIG, **ctx.pop("config", {})}
    path = schema_file(tmp_path, schema)
    spec = get_adapter(engine).build_command(
        engine_context(tmp_path, config=config, output_schema_path=path, **ctx)
    )
    flag = "--output-schema" if engine == "codex" else "--json-schema"
    if flag not in spec.argv:
        return None
    value = spec.argv[spec.argv.index(flag) + 1]
    if engine == "codex":  # a file the supervisor writes before the start
        rel = str(Path(value).relative_to(tmp_path))
        return json.loads(spec.files[rel])
    return json.loads(value)


@pytest.mark.parametrize(("engine", "dialect"), [("codex", STRICT), ("claude", TOOL),
                                                 ("qwen", TOOL)])  # fmt: skip
def test_adapter_passes_the_converted_schema(engine: str, dialect: str, tmp_path: Path) -> None:
    assert passed_schema(engine, tmp_path, ARTIFACT_SCHEMA) == native_schema(
        ARTIFACT_SCHEMA, dialect
    )


@pytest.mark.parametrize("engine", ["codex", "claude", "qwen"])
def test_native_schema_false_leaves_the_flag_off(engine: str, tmp_path: Path) -> None:
    off = passed_schema(engine, tmp_path, ARTIFACT_SCHEMA, config={"native_schema": False})
    assert off is None


@pytest.mark.parametrize("engine", ["codex", "claude", "qwen"])
def test_interactive_runs_leave_the_flag_off(engine: str, tmp_path: Path) -> None:
    assert passed_schema(engine, tmp_path, ARTIFACT_SCHEMA, execution_mode="interactive") is None


def test_codex_without_a_strict_form_leaves_the_flag_off(tmp_path: Path) -> None:
    free = obj({"a": {"type": "string"}}, ["a"], additionalProperties=True)
    assert passed_schema("codex", tmp_path, free) is None
    assert passed_schema("claude", tmp_path, free) == free
    assert not (tmp_path / ".codex-home" / "output-schema.source.json").exists()


def test_codex_keeps_the_skill_schema_beside_the_strict_form(tmp_path: Path) -> None:
    optional = obj({"a": {"type": "string"}, "b": {"type": "string"}}, ["a"])
    assert passed_schema("codex", tmp_path, optional) == native_schema(optional, STRICT)
    ctx = engine_context(
        tmp_path, config=CONFIG, output_schema_path=schema_file(tmp_path, optional)
    )
    spec = get_adapter("codex").build_command(ctx)
    assert json.loads(spec.files[".codex-home/output-schema.source.json"]) == optional


def test_codex_answer_loses_the_nulls_its_strict_form_added(tmp_path: Path) -> None:
    optional = obj({"a": {"type": "string"}, "b": {"type": "string"}}, ["a"])
    (tmp_path / ".codex-home").mkdir()
    source = tmp_path / ".codex-home" / "output-schema.source.json"
    source.write_text(json.dumps(optional))
    answer = json.dumps({"a": "x", "b": None})
    events = [
        {"type": "thread.started", "thread_id": "t-1"},
        {"type": "item.completed", "item": {"type": "agent_message", "text": answer}},
        {"type": "turn.completed", "usage": {"input_tokens": 3, "output_tokens": 2}},
    ]
    stdout = "".join(json.dumps(e) + "\n" for e in events)
    adapter = get_adapter("codex")
    out = adapter.parse_output(printed(tmp_path, 0, stdout=stdout, cwd=tmp_path))
    assert out.parsed_json == {"a": "x"}
    assert json.loads(out.final_text or "") == {"a": "x"}
    # a later turn without the strict form (native_schema: false) keeps what the model wrote
    path = schema_file(tmp_path, optional)
    adapter.build_command(engine_context(tmp_path, config={**CONFIG, "native_schema": False},
                                         output_schema_path=path))  # fmt: skip
    assert not source.exists()
    out = adapter.parse_output(printed(tmp_path, 0, stdout=stdout, cwd=tmp_path))
    assert out.parsed_json == {"a": "x", "b": None}


@pytest.mark.parametrize("engine", ["codex", "qwen"])
def test_a_resumed_turn_passes_the_schema_again(engine: str, tmp_path: Path) -> None:
    path = schema_file(tmp_path, ARTIFACT_SCHEMA)
    ctx = engine_context(tmp_path, config=CONFIG, output_schema_path=path, session_id="s-1")
    argv = get_adapter(engine).build_command(ctx).argv
    flag = "--output-schema" if engine == "codex" else "--json-schema"
    resume = "resume" if engine == "codex" else "--resume"
    assert flag in argv and argv.index(flag) < argv.index(resume)


@pytest.mark.parametrize(("engine", "key"), [("claude", "structured_output"),
                                             ("qwen", "structured_result")])  # fmt: skip
def test_the_structured_answer_is_the_final_json(engine: str, key: str, tmp_path: Path) -> None:
    answer = {"title": "t", "n": 2}
    events = [
        {"type": "system", "subtype": "init", "session_id": "s-1"},
        {"type": "result", "subtype": "success", "is_error": False, "result": "",
         "session_id": "s-1", key: answer},
    ]  # fmt: skip
    stdout = "".join(json.dumps(e) + "\n" for e in events)
    out = get_adapter(engine).parse_output(printed(tmp_path, 0, stdout=stdout))
    assert out.error is None
    assert out.parsed_json == answer
    assert json.loads(out.final_text or "") == answer


def test_qwen_text_instead_of_its_schema_tool_is_the_final_text(tmp_path: Path) -> None:
    events = [
        {"type": "system", "subtype": "init", "session_id": "s-1"},
        {"type": "assistant", "session_id": "s-1",
         "message": {"content": [{"type": "text", "text": 'Done: {"n": 1}'}]}},
        {"type": "result", "subtype": "error_during_execution", "is_error": True,
         "session_id": "s-1", "error": {"message": "Model produced plain text instead of "
         "calling the structured_output tool as required by --json-schema after 1 turn(s)."}},
    ]  # fmt: skip
    stdout = "".join(json.dumps(e) + "\n" for e in events)
    out = get_adapter("qwen").parse_output(printed(tmp_path, 1, stdout=stdout))
    assert out.error is None
    assert out.final_text == 'Done: {"n": 1}'


def test_qwen_api_error_under_its_schema_flag_stays_a_model_api_error(tmp_path: Path) -> None:
    events = [
        {"type": "system", "subtype": "init", "session_id": "s-1"},
        {"type": "assistant", "session_id": "s-1",
         "message": {"content": [{"type": "text", "text": "[API Error: 400 bad request]"}]}},
        {"type": "result", "subtype": "error_during_execution", "is_error": True,
         "session_id": "s-1", "error": {"message": "Model produced plain text instead of "
         "calling the structured_output tool as required by --json-schema after 1 turn(s)."}},
    ]  # fmt: skip
    stdout = "".join(json.dumps(e) + "\n" for e in events)
    out = get_adapter("qwen").parse_output(printed(tmp_path, 1, stdout=stdout))
    assert out.error is not None and out.error.code == "MODEL_API_ERROR"
    assert out.error.details.get("status") == 400
