"""Strict key matching of uploads, inline values and parameter defaults."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from runner_core.inputs import (
    TOO_DEEP_TO_VALIDATE,
    UPLOAD_NAMES_SHOWN,
    InputError,
    apply_defaults,
    inline_errors,
    resolve_inputs,
    schema_errors,
    validate_parameters,
)
from runner_core.uploads import extract_upload

INPUT = {
    "type": "object",
    "properties": {
        "doc": {"type": "string", "x-input-source": "file", "extensions": [".txt", ".md"]},
        "query": {"type": "string", "x-input-source": "inline"},
    },
    "required": ["doc", "query"],
}
PARAMS = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "default": 3},
        "opts": {"type": "object", "default": {}, "properties": {"deep": {"default": True}}},
    },
}


def resolve(uploads, inline=None, parameter=None):
    return resolve_inputs(
        INPUT, PARAMS, uploads, inline if inline is not None else {"query": "q"}, parameter
    )


def test_exact_key_name_resolves_to_absolute_path(tmp_path):
    (tmp_path / "doc").write_text("x")
    resolved = resolve(tmp_path)
    assert resolved.input == {"doc": str((tmp_path / "doc").resolve()), "query": "q"}


def test_key_plus_allowed_extension_resolves(tmp_path):
    (tmp_path / "doc.md").write_text("x")
    assert resolve(tmp_path).input["doc"].endswith("doc.md")


def test_extension_outside_the_list_is_refused(tmp_path):
    (tmp_path / "doc.pdf").write_text("x")
    with pytest.raises(InputError) as err:
        resolve(tmp_path)
    assert err.value.code == "INPUT_FILE_EXTENSION_NOT_ALLOWED"


def test_two_candidates_are_ambiguous(tmp_path):
    (tmp_path / "doc.md").write_text("x")
    (tmp_path / "doc.txt").write_text("y")
    with pytest.raises(InputError) as err:
        resolve(tmp_path)
    assert err.value.code == "INPUT_FILE_AMBIGUOUS"


def test_missing_required_file_names_the_field(tmp_path):
    with pytest.raises(InputError) as err:
        resolve(tmp_path)
    assert err.value.code == "INPUT_FILE_MISSING"
    assert err.value.details["fields"] == ["doc"]
    assert "doc" in err.value.message


NFD = "re\u0301sume\u0301"  # "résumé" as macOS spells it: e + combining acute
NFC = "r\u00e9sum\u00e9"


@pytest.mark.parametrize(
    ("key", "value"),
    [(NFC, None), (NFD, None), ("doc", f"inputs/doc/{NFC}.pdf"), ("doc", f"inputs/doc/{NFD}.pdf")],
    ids=["nfc-key", "nfd-key", "nfc-path", "nfd-path"],
)
def test_an_upload_named_in_nfd_matches_its_field_however_spelled(tmp_path, key, value):
    """A zip made on macOS names its files in NFD; the field's key, or the path an input
    value names, matches it in either form."""
    member = f"{NFD}.pdf" if value is None else f"inputs/doc/{NFD}.pdf"
    archive = tmp_path / "in.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(member, "cv")
    extract_upload(archive, tmp_path / "uploads")
    schema = {
        "type": "object",
        "properties": {key: {"type": "string", "extensions": [".pdf"]}},
        "required": [key],
    }
    resolved = resolve_inputs(
        schema, {}, tmp_path / "uploads", {} if value is None else {key: value}, {}
    )
    assert Path(resolved.input[key]).read_text() == "cv"


def test_a_missing_file_error_names_what_the_upload_held(tmp_path):
    """The user sees the mismatch: the file in a subfolder, or named in another case."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "doc.md").write_text("x")
    (tmp_path / "DOC.md").write_text("x")
    with pytest.raises(InputError) as err:
        resolve(tmp_path)
    assert err.value.details == {
        "fields": ["doc"],
        "uploaded": ["DOC.md", "sub/doc.md"],
        "uploaded_count": 2,
    }
    assert err.value.message == (
        "Missing required input files: doc; the upload holds DOC.md, sub/doc.md"
    )


def test_a_missing_file_error_lists_a_large_upload_only_in_part(tmp_path):
    for n in range(UPLOAD_NAMES_SHOWN + 5):
        (tmp_path / f"f{n:02}.txt").write_text("x")
    with pytest.raises(InputError) as err:
        resolve(tmp_path)
    details = err.value.details
    assert details["uploaded"] == [f"f{n:02}.txt" for n in range(UPLOAD_NAMES_SHOWN)]
    assert details["uploaded_count"] == UPLOAD_NAMES_SHOWN + 5
    assert err.value.message.endswith(f"f{UPLOAD_NAMES_SHOWN - 1:02}.txt and 5 more")


def test_a_missing_file_error_says_when_the_upload_held_nothing(tmp_path):
    with pytest.raises(InputError) as err:
        resolve(tmp_path / "absent")
    assert err.value.details == {"fields": ["doc"], "uploaded": [], "uploaded_count": 0}
    assert err.value.message.endswith("; the upload holds no file")


def test_json_string_is_never_a_fallback_for_a_file(tmp_path):
    with pytest.raises(InputError) as err:
        resolve(tmp_path, inline={"query": "q", "doc": "/etc/passwd"})
    assert err.value.code == "INPUT_FILE_AS_INLINE"


def test_inline_values_are_validated(tmp_path):
    (tmp_path / "doc").write_text("x")
    with pytest.raises(InputError) as err:
        resolve(tmp_path, inline={"query": 5})
    assert err.value.code == "SCHEMA_VALIDATION_FAILED"


def test_parameter_defaults_fill_nested_objects():
    assert validate_parameters(PARAMS, {}) == {"n": 3, "opts": {"deep": True}}
    assert apply_defaults(PARAMS, {"n": 7}) == {"n": 7, "opts": {"deep": True}}


REF_INPUT = {
    "type": "object",
    "properties": {
        "query": {"$ref": "#/$defs/text"},
        "doc": {"$ref": "#/$defs/document", "description": "the paper"},
    },
    "$defs": {
        "text": {"type": "string", "x-input-source": "inline"},
        "document": {"type": "string", "x-input-source": "file", "extensions": [".md"]},
    },
    "required": ["query", "doc"],
}
REF_PARAMS = {
    "type": "object",
    "properties": {"opts": {"$ref": "#/$defs/opts"}},
    "$defs": {
        "opts": {
            "type": "object",
            "default": {},
            "properties": {"lang": {"$ref": "#/$defs/lang"}},
        },
        "lang": {"type": "string", "default": "en"},
    },
}


def test_fields_defined_through_a_ref_keep_their_source_extensions_and_defaults(tmp_path):
    """The runner's keywords of a property written as a local $ref are in its definition: an
    inline field stays inline, a file field keeps its extensions, a default is applied."""
    (tmp_path / "doc.md").write_text("x")
    resolved = resolve_inputs(REF_INPUT, REF_PARAMS, tmp_path, {"query": "q"}, {})
    assert resolved.input == {"query": "q", "doc": str((tmp_path / "doc.md").resolve())}
    assert resolved.parameter == {"opts": {"lang": "en"}}


def test_inline_input_passes_when_some_choice_of_uploads_would_make_it_valid():
    """A file or a text, never both: the text alone is good (no file will come), so is nothing
    (the file will); a wrong type of the text is not mended by any upload."""
    schema = {
        "type": "object",
        "properties": {
            "doc": {"type": "string"},
            "text": {"type": "string", "x-input-source": "inline"},
        },
        "oneOf": [{"required": ["doc"]}, {"required": ["text"]}],
    }
    assert inline_errors(schema, {"text": "t"}) == [] and inline_errors(schema, {}) == []
    assert [e["validator"] for e in inline_errors(schema, {"text": 5})] == ["oneOf", "type"]
    assert inline_errors(schema, {"text": "t"}, named={"doc"})[0]["validator"] == "oneOf"


def test_parameter_type_error_lists_the_path():
    with pytest.raises(InputError) as err:
        validate_parameters(PARAMS, {"n": "three"})
    assert err.value.details["errors"][0]["path"] == "n"


def test_parameter_must_be_an_object():
    with pytest.raises(InputError):
        validate_parameters(PARAMS, [1, 2])


def test_validators_are_made_once_per_schema_object_and_never_mixed_up():
    from runner_core.inputs import by_identity, schema_errors

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    made = []

    def make(s):
        made.append(s)
        return {"made from": id(s)}

    first = by_identity(schema, make)
    assert by_identity(schema, make) is first and len(made) == 1
    assert by_identity(dict(schema), make) is not first  # an equal but other object: made anew
    assert schema_errors(schema, {"n": "x"})[0]["path"] == "n"  # another maker, same schema
    assert schema_errors(schema, {"n": 1}) == []


# A list of lists of any depth, through a recursive $ref.
NESTED_LISTS = {
    "$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}},
    "$ref": "#/$defs/n",
}


def deep_list(levels: int) -> list:
    value: list = []
    for _ in range(levels):
        value = [value]
    return value


TOO_DEEP = {"path": "", "message": TOO_DEEP_TO_VALIDATE, "validator": "depth"}


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (NESTED_LISTS, deep_list(300)),
        ({"$ref": "#"}, {}),  # a $ref loop
    ],
)
def test_a_value_too_deep_to_validate_is_a_validation_error(schema, value):
    assert schema_errors(schema, value) == [TOO_DEEP]


def test_a_parameter_too_deep_to_copy_is_a_validation_error():
    schema = {"type": "object", "properties": {"x": {"type": "array"}}}
    with pytest.raises(InputError) as err:
        validate_parameters(schema, {"x": deep_list(900)})
    assert err.value.code == "SCHEMA_VALIDATION_FAILED"
    assert err.value.details["errors"] == [TOO_DEEP]
