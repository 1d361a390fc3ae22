"""File inputs named by their upload's path (the clients' form) and runtime_options keys the
service does not act on."""

from __future__ import annotations

import pytest

from runner_core.error_codes import ErrorCode
from runner_core.inputs import InputError, path_inputs, resolve_inputs, upload_path
from runner_core.runtime_options import unused_keys

SCHEMA = {
    "type": "object",
    "properties": {
        "doc": {"type": "string", "x-input-source": "file", "extensions": [".md"]},
        "extra": {"type": "string", "x-input-source": "file"},
        "title": {"type": "string", "x-input-source": "inline"},
    },
    "required": ["doc"],
}


@pytest.mark.parametrize(
    "value", ["inputs/doc/a.md", "doc/a.md", "inputs/doc/sub/a.md", "doc/a b.md"]
)
def test_paths_under_the_key_name_the_upload(value):
    assert upload_path("doc", value) == value


@pytest.mark.parametrize(
    "value",
    [
        "a.md",
        "doc",
        "inputs/doc",
        "inputs/doc/",
        "inputs/other/a.md",
        "other/doc/a.md",
        "/inputs/doc/a.md",
        "inputs/doc/../a.md",
        "doc/./a.md",
        "doc//a.md",
        "doc\\a.md",
        "uploads/doc/a.md",
        3,
        None,
        ["doc/a.md"],
    ],
)
def test_other_values_name_no_upload(value):
    assert upload_path("doc", value) is None


def test_path_inputs_only_looks_at_file_fields():
    inline = {"doc": "inputs/doc/a.md", "title": "title/x", "extra": "nope"}
    assert path_inputs(SCHEMA, inline) == {"doc": "inputs/doc/a.md"}
    assert path_inputs(SCHEMA, None) == {}


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_path_named_input_resolves_to_that_file_beside_key_matched_ones(tmp_path):
    uploads = tmp_path / "uploads"
    write(uploads, "inputs/doc/paper.md", "# p")
    write(uploads, "extra", "x")
    resolved = resolve_inputs(SCHEMA, {}, uploads, {"doc": "inputs/doc/paper.md", "title": "t"}, {})
    assert resolved.input == {
        "doc": str((uploads / "inputs/doc/paper.md").resolve()),
        "extra": str((uploads / "extra").resolve()),
        "title": "t",
    }


def test_a_path_named_input_keeps_to_the_fields_extensions(tmp_path):
    uploads = tmp_path / "uploads"
    write(uploads, "inputs/doc/paper.pdf", "%PDF")
    with pytest.raises(InputError) as exc:
        resolve_inputs(SCHEMA, {}, uploads, {"doc": "inputs/doc/paper.pdf"}, {})
    assert exc.value.code == ErrorCode.INPUT_FILE_EXTENSION_NOT_ALLOWED


def test_a_named_file_missing_from_the_upload_is_input_file_missing(tmp_path):
    uploads = tmp_path / "uploads"
    write(uploads, "doc.md", "# key-matched, but the input names another file")
    with pytest.raises(InputError) as exc:
        resolve_inputs(SCHEMA, {}, uploads, {"doc": "inputs/doc/a.md"}, {})
    assert exc.value.code == ErrorCode.INPUT_FILE_MISSING and exc.value.details == {
        "fields": ["doc"],
        "uploaded": ["doc.md"],
        "uploaded_count": 1,
    }
    write(uploads, "doc.md", "")
    with pytest.raises(InputError) as optional:  # named, so wanted, even when optional
        resolve_inputs(SCHEMA, {}, uploads, {"extra": "extra/x.txt"}, {})
    assert optional.value.details["fields"] == ["extra"]


def test_a_binding_wins_over_the_path_form(tmp_path):
    uploads = tmp_path / "uploads"
    write(uploads, "bound/doc.md", "bound")
    resolved = resolve_inputs(
        SCHEMA, {}, uploads, {"doc": "inputs/doc/a.md"}, {}, {"doc": "bound/doc.md"}
    )
    assert resolved.input["doc"] == str((uploads / "bound/doc.md").resolve())


def test_unused_runtime_option_keys_are_named_known_ones_are_not():
    sent = {
        "execution_mode": "auto",
        "no_cache": True,
        "codex_config": {},
        "workspace": {"mode": "reuse"},
        "hard_timeout_seconds": 5,
        "env": {"A": "1"},
        "collect_skill_run_feedback": True,
        "workflow_mcp": {},
        "preamble_prompt": "x",
    }
    assert unused_keys(sent) == [  # env is given to the run's processes (runner_core.run_env)
        "collect_skill_run_feedback",
        "preamble_prompt",
        "workflow_mcp",
    ]
    assert unused_keys(None) == [] and unused_keys({"debug": True}) == []
