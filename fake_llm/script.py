"""The behaviour of the fake LLM: a small script and the stateless rule that applies it.

Rule (the same for every protocol): while the conversation holds fewer than `Script.rounds`
tool results after the last user message, answer one shell tool call running
`Script.command`; otherwise answer `Script.final_text`. A request that offers no shell tool, or
a script with `tool=False`, gets the final text straight away. A `status` other than 200 makes
every model call fail with that HTTP status and a protocol-shaped error body. `stall_sec`
holds the final answer that long before it is sent: a model that stalls after its tool rounds,
so a run's timeout or cancel lands in the middle of a model call.

`when` holds conditional variants: `[{"contains": TEXT, ...fields}]`. The first whose TEXT
occurs in the request body replaces those fields for that request (e.g. the turn after a
user's reply in an interactive run answers differently from the first turn).

`final_text` is a `string.Template`: `$model`, `$tool_output` (raw text of the last tool
result), `$tool_output_json` (the same as a JSON string literal) and `$tool_output_last_line`
(its last non-empty line: what the command printed last, after any header or closing wrapper
tag the CLI adds) are
substituted; any other `$name` is left as is, and JSON braces need no escaping.

Structured output (see fake_llm.schema): a request whose response format carries a schema is
answered on schema (the provider enforces it); a request offering a CLI's schema tool gets the
final JSON as that tool's call, once. `off_schema_rate` of the other final answers (and of the
schema tool's arguments: the CLI, not the provider, checks those) are `off_schema_text`
instead, spread evenly over the server's answers: a model that sometimes ignores the schema.
"""

from __future__ import annotations

import json
import string
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from fake_llm.schema import OffSchemaDraws, schema_tool

# Preference order when a request offers several shell-like tools.
SHELL_TOOLS: tuple[str, ...] = (
    "exec_command",
    "shell_command",
    "shell",
    "run_shell_command",
    "bash",
    "Bash",
)


@dataclass(frozen=True)
class Script:
    """What the fake model does; loaded from JSON or built in a test."""

    command: str = "echo fake-llm"
    final_text: str = '{"ok": true}'
    status: int = 200
    tool: bool = True
    error_message: str = "fake LLM error"
    model: str = "fake-model"
    when: tuple[dict[str, Any], ...] = ()
    rounds: int = 1  # shell tool calls, one after another's result, before the final text
    stall_sec: float = 0.0  # the final answer is held this long before it is sent
    off_schema_rate: float = 0.0  # share of final answers given off schema (where not enforced)
    off_schema_text: str = '{"off_schema": true}'
    # the server's draws for off_schema_rate (set by the server per request, not from JSON)
    draws: OffSchemaDraws | None = field(default=None, compare=False, repr=False)

    def for_request(self, body_text: str) -> Script:
        """The script in force for one request: the first `when` variant it matches."""
        for variant in self.when:
            if str(variant.get("contains", "")) in body_text:
                known = {f.name for f in fields(self)} - {"when", "draws"}
                return replace(self, when=(), **{k: v for k, v in variant.items() if k in known})
        return self

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Script:
        """Build a script from a JSON object, ignoring unknown keys."""
        known = {f.name for f in fields(cls)} - {"draws"}
        values = {k: v for k, v in data.items() if k in known}
        values["when"] = tuple(values.get("when") or ())
        return cls(**values)

    @classmethod
    def load(cls, path: Path) -> Script:
        """Read a script JSON file."""
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))


@dataclass(frozen=True)
class ToolCall:
    """One tool call the fake model makes."""

    name: str
    arguments: dict[str, Any]
    call_id: str = field(default_factory=lambda: new_id("call"))


# turns of Conversation.of_turns: the CLI's schema tool accepted / refused the model's answer
SCHEMA_CALL = "\0schema-tool-call"
SCHEMA_REFUSED = "\0schema-tool-refused"
SCHEMA_TRIES = 2  # schema tool calls the CLI refused before the model gives up and writes text


@dataclass(frozen=True)
class Conversation:
    """What a protocol module extracts from a request, in protocol-neutral form."""

    tools: dict[str, dict[str, Any]]  # offered tool name -> JSON schema of its arguments
    tool_result_pending: bool  # a tool result follows the last user message
    last_tool_output: str = ""
    tool_results: int = 0  # tool results after the last user message
    model: str = ""
    schema: dict[str, Any] | None = None  # the schema the response format enforces, if any
    schema_answered: bool = False  # the CLI's schema tool accepted an answer since the user spoke
    schema_refusals: int = 0  # ... or refused one
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of_turns(
        cls,
        tools: dict[str, dict[str, Any]],
        turns: Iterable[str | None],
        model: str,
        schema: dict[str, Any] | None = None,
    ) -> Conversation:
        """The state after a request's turns, in order: each tool result's text, None for a
        user message (after which no tool result is pending), or SCHEMA_CALL for a result
        of the CLI's schema tool that accepted the answer."""
        results, last_output, answered, refused = 0, "", False, 0
        for turn in turns:
            if turn is None:
                results, answered, refused = 0, False, 0
            elif turn is SCHEMA_CALL:
                answered = True
            elif turn is SCHEMA_REFUSED:
                refused += 1
            else:
                results, last_output = results + 1, turn
        return cls(
            tools=tools,
            tool_result_pending=results > 0,
            last_tool_output=last_output,
            model=model,
            tool_results=results,
            schema=schema,
            schema_answered=answered,
            schema_refusals=refused,
        )


def new_id(prefix: str) -> str:
    """A fresh id: clients such as claude merge history entries that share an id."""
    return f"{prefix}_fake_{uuid.uuid4().hex[:16]}"


def pick_shell_tool(tools: dict[str, dict[str, Any]]) -> str | None:
    """Return the preferred shell tool among the offered ones, if any."""
    for name in SHELL_TOOLS:
        if name in tools:
            return name
    return None


def fill_arguments(schema: dict[str, Any], command: str) -> dict[str, Any]:
    """Fill a shell tool's arguments from its JSON schema."""
    props: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    args: dict[str, Any] = {}
    for key, prop in props.items():
        kind = str(prop.get("type", "")).lower() if isinstance(prop, dict) else ""
        if key in ("cmd", "command"):
            args[key] = ["bash", "-lc", command] if kind == "array" else command
        elif key == "description":
            args[key] = "Run the requested command"
        elif key in required:
            args[key] = _placeholder(kind)
    return args


def _placeholder(kind: str) -> Any:
    defaults: dict[str, Any] = {
        "boolean": False,
        "integer": 0,
        "number": 0,
        "array": [],
        "object": {},
    }
    return defaults.get(kind, "")


def decide(script: Script, convo: Conversation) -> ToolCall | str:
    """Apply the stateless rule: a shell tool call, or the final text (through the CLI's
    schema tool when it offers one that was not called yet)."""
    tool = pick_shell_tool(convo.tools) if script.tool else None
    if tool is not None and convo.tool_results < script.rounds:
        return ToolCall(name=tool, arguments=fill_arguments(convo.tools[tool], script.command))
    text = render_final_text(script, convo)
    structured = schema_tool(convo.tools)
    tries_left = convo.schema_refusals < SCHEMA_TRIES
    if structured is not None and not convo.schema_answered and tries_left:
        arguments = json_object_in(text)
        if arguments is not None:
            return ToolCall(name=structured, arguments=arguments)
    return text


def json_object_in(text: str) -> dict[str, Any] | None:
    """The JSON object a final text holds: the text itself, else the last object in it (what
    a command printed last, after the command line a CLI echoes)."""
    decoder, found, index = json.JSONDecoder(), None, text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except ValueError:
            index = text.find("{", index + 1)
            continue
        if isinstance(value, dict):
            found = value
        index = text.find("{", end)
    return found


def off_schema(script: Script, convo: Conversation) -> bool:
    """True when this final answer goes off schema: a draw at `off_schema_rate`, never when
    the provider decodes against a schema."""
    if script.off_schema_rate <= 0 or convo.schema is not None or script.draws is None:
        return False
    return script.draws.next_is_off(script.off_schema_rate)


def hold_sec(script: Script, answer: ToolCall | str) -> float:
    """How long the reply to `answer` is held before it is sent (`Script.stall_sec`)."""
    return 0.0 if isinstance(answer, ToolCall) else float(script.stall_sec)


def render_final_text(script: Script, convo: Conversation) -> str:
    """Substitute the template variables of `final_text` (or `off_schema_text`, see
    off_schema)."""
    template = script.off_schema_text if off_schema(script, convo) else script.final_text
    return string.Template(template).safe_substitute(
        model=convo.model or script.model,
        tool_output=convo.last_tool_output,
        tool_output_json=json.dumps(convo.last_tool_output),
        tool_output_last_line=last_printed_line(convo.last_tool_output),
    )


def last_printed_line(output: str) -> str:
    """What the command printed last, without what the CLI wraps around it: the last line
    holding a JSON object or an <ASK_USER_YAML> block (after an `Output: ` label, as gemini
    and qwen report), else the last non-empty line that is not a closing wrapper tag."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        text = line.removeprefix("Output:").strip()
        if text.startswith(("{", "<ASK_USER_YAML>")):
            return text
    for line in reversed(lines):
        if not (line.startswith("</") and line.endswith(">") and " " not in line):
            return line
    return ""


def cached_of(input_tokens: int) -> int:
    """The part of a request's input tokens reported as read from a prompt cache."""
    return input_tokens // 4


def reasoning_of(output_tokens: int) -> int:
    """The part of an answer's output tokens reported as reasoning."""
    return output_tokens // 4


def token_counts(input_tokens: int, output_tokens: int, reasoning: bool = True) -> dict[str, int]:
    """An answer's tokens as recorded by the server: input (cached included) and output
    (reasoning included), the way OpenAI counts them, whatever the wire splits."""
    counts = {
        "input_tokens": input_tokens,
        "cached_input_tokens": cached_of(input_tokens),
        "output_tokens": output_tokens,
    }
    if reasoning:  # Anthropic's wire has no reasoning count
        counts["reasoning_tokens"] = reasoning_of(output_tokens)
    return counts


def estimate_tokens(payload: Any) -> int:
    """A rough token count (4 characters per token) for usage figures."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return max(1, len(text) // 4)
