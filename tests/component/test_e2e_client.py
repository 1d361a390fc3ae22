"""The example client's parts without a service: its port setting, the recording files (format,
safe names, written whole) and the typed values of its run form."""

from __future__ import annotations

import json

import pytest
from werkzeug.datastructures import MultiDict

from e2e_client import forms
from e2e_client.app import DEFAULT_PORT, port_from_env
from e2e_client.recordings import FORMAT, Recordings, file_name, is_safe_name


@pytest.mark.parametrize(
    ("value", "port"),
    [
        ("9123", 9123),
        (" 8100 ", 8100),
        (None, DEFAULT_PORT),
        ("", DEFAULT_PORT),
        ("eighty", DEFAULT_PORT),
        ("0", DEFAULT_PORT),
        ("-5", DEFAULT_PORT),
        ("65536", DEFAULT_PORT),
        ("80.5", DEFAULT_PORT),
    ],
)
def test_port_from_env_falls_back_to_8011(value, port):
    assert DEFAULT_PORT == 8011
    assert port_from_env(value) == port


def test_a_recording_holds_each_step_in_order(tmp_path):
    recs = Recordings(tmp_path)
    name = recs.record("rid-1", "create", {"skill_id": "s"}, {"status": "queued"}, skill_id="s")
    assert recs.record("rid-1", "upload", {"files": {}}, {"status": "queued"}) == name
    recs.record("rid-1", "result_read", {}, {"result": {"status": "succeeded"}})
    doc = json.loads((tmp_path / name).read_text())
    assert doc["format"] == FORMAT and doc["request_id"] == "rid-1" and doc["skill_id"] == "s"
    assert [s["action"] for s in doc["steps"]] == ["create", "upload", "result_read"]
    assert [s["index"] for s in doc["steps"]] == [1, 2, 3]
    assert doc["steps"][0]["request"] == {"skill_id": "s"}
    assert doc["steps"][2]["response"] == {"result": {"status": "succeeded"}}
    assert all(s["at"].endswith("+00:00") for s in doc["steps"])
    assert recs.has("rid-1", "result_read") and not recs.has("rid-1", "reply")
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temp file left behind
    listed = recs.list()
    assert listed[0]["name"] == name and listed[0]["steps"] == 3


def test_a_new_process_appends_to_the_run_s_existing_recording(tmp_path):
    name = Recordings(tmp_path).record("rid-2", "create", {}, {})
    again = Recordings(tmp_path)  # another process: finds the file by the request id
    assert again.record("rid-2", "reply", {"response": 1}, {"accepted": True}) == name
    assert [s["action"] for s in again.load(name)["steps"]] == ["create", "reply"]


def test_unknown_actions_are_refused(tmp_path):
    with pytest.raises(ValueError):
        Recordings(tmp_path).record("rid", "delete", {}, {})


def test_file_names_stay_in_the_directory(tmp_path):
    from datetime import UTC, datetime

    name = file_name("../../etc/passwd", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert name == "20260102T030405Z-_etc_passwd.json"
    assert is_safe_name(name)
    for bad in ("../x.json", ".hidden.json", "a/b.json", "x.txt", "a..b.json", ""):
        assert not is_safe_name(bad)
        with pytest.raises(KeyError):
            Recordings(tmp_path).path(bad)


SCHEMAS = {
    "input": {
        "properties": {
            "doc": {"type": "string", "extensions": [".txt"]},
            "text": {"type": "string", "x-input-source": "inline"},
        },
        "required": ["doc"],
    },
    "parameter": {
        "properties": {
            "n": {"type": "integer", "default": 2},
            "ratio": {"type": "number"},
            "loud": {"type": "boolean"},
            "tags": {"type": "array"},
            "style": {"enum": ["plain", "bold"]},
        }
    },
}


def test_form_fields_follow_the_schemas():
    fields = {f.key: f for f in forms.fields(SCHEMAS)}
    assert fields["file:doc"].widget == "file" and fields["file:doc"].extensions == [".txt"]
    assert fields["file:doc"].required
    assert fields["input:text"].widget == "textarea"  # a pasted paragraph keeps its breaks
    assert [fields[k].widget for k in ("parameter:n", "parameter:ratio", "parameter:loud")] == [
        "integer",
        "number",
        "boolean",
    ]
    assert (
        fields["parameter:tags"].widget == "json" and fields["parameter:style"].widget == "select"
    )


def test_form_values_are_typed_and_empty_ones_left_out():
    form = MultiDict(
        {"input:text": "hi", "parameter:n": "3", "parameter:ratio": "", "parameter:tags": '["a"]'}
    )
    assert forms.values(forms.fields(SCHEMAS), form) == {
        "input": {"text": "hi"},
        "parameter": {"n": 3, "loud": False, "tags": ["a"]},
    }
    with pytest.raises(forms.FormError) as caught:
        forms.values(forms.fields(SCHEMAS), MultiDict({"parameter:n": "three"}))
    assert caught.value.name == "n"


def test_runtime_options_and_replies():
    form = MultiDict(
        {
            "execution_mode": "interactive",
            "no_cache": "on",
            "timeout_sec": "30",
            "runtime_options_json": '{"interactive_auto_reply": true}',
        }
    )
    assert forms.runtime_options(form) == {
        "interactive_auto_reply": True,
        "execution_mode": "interactive",
        "no_cache": True,
        "timeout_sec": 30,
    }
    with pytest.raises(forms.FormError):
        forms.runtime_options(MultiDict({"runtime_options_json": "[1]"}))
    assert forms.reply_response("choose_one", MultiDict({"choice": '"B"'})) == "B"
    assert forms.reply_response("confirm", MultiDict({"choice": "false"})) is False
    assert forms.reply_response("open_text", MultiDict({"text": "ok"})) == "ok"
    filled = MultiDict({"field:name": "Ann", "interaction_id": "1"})
    assert forms.reply_response("fill_fields", filled) == {"name": "Ann"}


def test_the_form_offers_the_engines_a_job_of_the_skill_may_name():
    script = {"entrypoint": {"type": "script"}, "effective_engines": ["codex"]}
    assert forms.engines(script) == []  # runs its own script, whatever runner.json allows
    prompt = {"entrypoint": {"type": "prompt"}, "effective_engines": ["codex", "claude"]}
    assert forms.engines(prompt) == ["codex", "claude"]
    # an index-file composite runs as a script; its llm calls take the job's engine
    index = {
        "format": "skill.json",
        "entrypoint": {"type": "script"},
        "effective_engines": ["qwen"],
    }
    assert forms.engines(index) == ["qwen"]
    code = {"format": "skill.json", "entrypoint": {"type": "script"}, "effective_engines": []}
    assert forms.engines(code) == []
