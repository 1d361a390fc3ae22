"""The fake LLM server itself: one tool call, then the final text, in every protocol."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fake_llm import FakeLLM, Script
from fake_llm.schema import sent_schema
from tests.helpers import wait_for

SCRIPT = Script(command="touch x", final_text='{"out": $tool_output_json}')


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM(SCRIPT) as server:
        yield server


def post(llm: FakeLLM, path: str, body: dict[str, Any]) -> tuple[int, str]:
    req = urllib.request.Request(
        llm.base_url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def sse_data(text: str) -> list[Any]:
    return [
        json.loads(line[6:])
        for line in text.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


def test_responses_calls_exec_command_then_answers_with_the_tool_output(llm: FakeLLM) -> None:
    tools = [
        {
            "type": "function",
            "name": "exec_command",
            "parameters": {"properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
        }
    ]
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    _, first = post(llm, "/v1/responses", {"stream": True, "tools": tools, "input": [user]})
    item = next(e["item"] for e in sse_data(first) if e["type"] == "response.output_item.done")
    assert item["name"] == "exec_command" and json.loads(item["arguments"]) == {"cmd": "touch x"}
    assert sse_data(first)[-1]["type"] == "response.completed"
    result = {"type": "function_call_output", "call_id": item["call_id"], "output": "done"}
    _, second = post(
        llm, "/v1/responses", {"stream": True, "tools": tools, "input": [user, item, result]}
    )
    item = next(e["item"] for e in sse_data(second) if e["type"] == "response.output_item.done")
    assert item["content"][0]["text"] == '{"out": "done"}'


def test_chat_stream_ends_with_finish_usage_and_done(llm: FakeLLM) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "parameters": {
                    "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
                    "required": ["command"],
                },
            },
        }
    ]
    _, text = post(
        llm,
        "/v1/chat/completions",
        {"stream": True, "tools": tools, "messages": [{"role": "user", "content": "go"}]},
    )
    chunks = sse_data(text)
    call = chunks[0]["choices"][0]["delta"]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"command": "touch x"}
    assert chunks[1]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[2]["usage"]["total_tokens"] > 0
    assert text.rstrip().endswith("data: [DONE]")


def test_gemini_answers_text_after_a_function_response(llm: FakeLLM) -> None:
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": {}}}]},
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "run_shell_command", "response": {"output": "ok"}}}
            ],
        },
    ]
    _, text = post(llm, "/v1beta/models/m:streamGenerateContent?alt=sse", {"contents": contents})
    candidate = sse_data(text)[0]["candidates"][0]
    assert candidate["finishReason"] == "STOP"
    assert candidate["content"]["parts"][0]["text"] == '{"out": "ok"}'


def test_anthropic_tool_use_ids_are_unique(llm: FakeLLM) -> None:
    body = {
        "stream": False,
        "messages": [{"role": "user", "content": "go"}],
        "tools": [
            {"name": "Bash", "input_schema": {"properties": {"command": {"type": "string"}}}}
        ],
    }
    ids = {json.loads(post(llm, "/v1/messages", body)[1])["content"][0]["id"] for _ in range(2)}
    assert len(ids) == 2


def test_error_status_uses_the_protocol_error_shape(tmp_path: Path) -> None:
    with FakeLLM(Script(status=401, error_message="nope")) as server:
        status, text = post(server, "/v1/messages", {"messages": []})
    assert status == 401
    assert json.loads(text)["error"] == {"type": "authentication_error", "message": "nope"}


def test_script_file_is_reread_and_requests_are_logged(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"tool": False, "final_text": "one"}))
    with FakeLLM(path) as server:
        first = post(
            server, "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}
        )[1]
        path.write_text(json.dumps({"tool": False, "final_text": "two"}))
        second = post(server, "/v1/chat/completions", {"messages": []})[1]
        assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2
        assert "hi" in server.request_text()
    assert json.loads(first)["choices"][0]["message"]["content"] == "one"
    assert json.loads(second)["choices"][0]["message"]["content"] == "two"


CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": "bash", "parameters": {"properties": {"command": {"type": "string"}}}},
    }
]


def chat_after(results: int) -> dict[str, Any]:
    """A Chat Completions body whose conversation holds `results` tool results."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n in range(results):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": f"out {n}"},
        ]
    return {"tools": CHAT_TOOLS, "messages": messages}


def test_rounds_make_that_many_tool_calls_before_the_final_text() -> None:
    with FakeLLM(Script(rounds=3, final_text="done after $tool_output")) as server:
        answers = [
            json.loads(post(server, "/v1/chat/completions", chat_after(n))[1])["choices"][0]
            for n in range(4)
        ]
    assert [a["finish_reason"] for a in answers] == ["tool_calls"] * 3 + ["stop"]
    assert answers[3]["message"]["content"] == "done after out 2"


def test_a_stalled_final_answer_is_held_and_counted_once_sent() -> None:
    with FakeLLM(Script(rounds=1, stall_sec=0.6)) as server:
        started = time.monotonic()
        post(server, "/v1/chat/completions", chat_after(0))  # the tool call: not held
        tool_call_sec = time.monotonic() - started
        post(server, "/v1/chat/completions", chat_after(1))  # the final text: held
        final_sec = time.monotonic() - started - tool_call_sec
        # counted once sent: the server's thread records it just after the client has it
        wait_for(lambda: len(server.usage) >= 2, timeout=5)
        sent = list(server.usage)
    assert tool_call_sec < 0.5 <= final_sec
    assert len(sent) == 2 and all(counts["input_tokens"] > 0 for counts in sent)
    assert server.usage_total()["output_tokens"] == sum(c["output_tokens"] for c in sent)


def test_a_held_answer_is_dropped_when_the_server_stops() -> None:
    server = FakeLLM(Script(tool=False, stall_sec=30)).start()
    replies: list[Any] = []
    asking = threading.Thread(
        target=lambda: replies.append(_post_or_error(server, chat_after(0))), daemon=True
    )
    asking.start()
    wait_for(lambda: len(server.requests) == 1, 5)
    server.stop()
    asking.join(5)
    assert not asking.is_alive() and isinstance(replies[0], Exception)
    assert server.usage == []


def _post_or_error(server: FakeLLM, body: dict[str, Any]) -> Any:
    try:
        return post(server, "/v1/chat/completions", body)
    except Exception as exc:  # the connection closed without an answer
        return exc


# -- structured output (fake_llm.schema)

OUT_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}


def final_texts(llm: FakeLLM, body: dict[str, Any], count: int) -> list[str]:
    """The text of `count` Responses answers to `body`, in order."""
    texts = []
    for _ in range(count):
        _, text = post(llm, "/v1/responses", body)
        texts.append(json.loads(text)["output"][0]["content"][0]["text"])
    return texts


def test_off_schema_rate_spreads_that_share_of_final_answers() -> None:
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    with FakeLLM(Script(tool=False, final_text='{"ok": true}', off_schema_rate=0.3)) as llm:
        texts = final_texts(llm, {"input": [user]}, 10)
    assert texts.count('{"off_schema": true}') == 3
    assert texts[0] == '{"ok": true}'


def test_a_response_format_schema_is_always_answered_on_schema() -> None:
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    body = {
        "input": [user],
        "text": {"format": {"type": "json_schema", "strict": True, "schema": OUT_SCHEMA}},
    }
    with FakeLLM(Script(tool=False, final_text='{"ok": true}', off_schema_rate=1.0)) as llm:
        texts = final_texts(llm, body, 3)
        assert sent_schema(llm.requests[0].body) == OUT_SCHEMA
    assert texts == ['{"ok": true}'] * 3


def test_a_schema_tool_is_called_with_the_final_json_until_the_cli_accepts_it() -> None:
    tools = [{"name": "Bash", "input_schema": {}}, {"name": "StructuredOutput",
                                                 "input_schema": OUT_SCHEMA}]  # fmt: skip
    user = {"role": "user", "content": [{"type": "text", "text": "go"}]}
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1",
                                              "name": "StructuredOutput", "input": {}}]}  # fmt: skip

    def answered(result: str, is_error: bool) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": "t1", "content": result,
                 "is_error": is_error}  # fmt: skip
        reply = {"role": "user", "content": [block]}
        _, text = post(llm, "/v1/messages", {"tools": tools, "messages": [user, call, reply]})
        return json.loads(text)["content"][0]

    with FakeLLM(Script(tool=False, final_text='{"ok": true}')) as llm:
        _, text = post(llm, "/v1/messages", {"tools": tools, "messages": [user]})
        first = json.loads(text)["content"][0]
        rejected = answered("Output does not match required schema", True)
        accepted = answered("Structured output provided successfully", False)
        assert sent_schema(llm.requests[0].body) == OUT_SCHEMA
    assert first["name"] == "StructuredOutput" and first["input"] == {"ok": True}
    assert rejected["name"] == "StructuredOutput"  # asked again: called again
    assert accepted == {"type": "text", "text": '{"ok": true}'}


@pytest.mark.parametrize(
    ("schema", "complaint"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/s", "type": "string"}},
          "required": ["a"], "additionalProperties": False, "$defs": {"s": {"type": "string"}}},
         "$ref cannot have keywords {'type'}"),
        ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
          "required": ["a"], "additionalProperties": False}, "Missing 'b'"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
         "'additionalProperties' is required to be supplied and to be false"),
        ({"type": "object", "properties": {"a": {"enum": ["x"]}}, "required": ["a"],
          "additionalProperties": False}, "schema must have a 'type' key"),
        ({"type": "object", "properties": {"a": {"type": "string", "minLength": 1}},
          "required": ["a"], "additionalProperties": False}, "'minLength' is not permitted"),
        ({"type": "object", "properties": {"a": {"type": "array"}}, "required": ["a"],
          "additionalProperties": False}, "array schema missing items"),
    ],
)  # fmt: skip
def test_a_strict_schema_the_provider_cannot_enforce_is_refused(
    schema: dict[str, Any], complaint: str
) -> None:
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    text_format = {"type": "json_schema", "name": "out", "strict": True, "schema": schema}
    with FakeLLM(Script(tool=False)) as llm:
        status, text = post(
            llm, "/v1/responses", {"input": [user], "text": {"format": text_format}}
        )
        assert status == 400
        error = json.loads(text)["error"]
        assert error["code"] == "invalid_json_schema"
        assert complaint in error["message"], error["message"]
        text_format["strict"] = False  # not strict: the provider takes it as it is
        status, _ = post(llm, "/v1/responses", {"input": [user], "text": {"format": text_format}})
        assert status == 200
