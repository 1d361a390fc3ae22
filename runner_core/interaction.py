"""The interactive protocol: what ends a turn, what the agent asks, and what it is told next.

A turn's final assistant message decides (seed 003 §6): `__SKILL_DONE__` in it plus a valid
output completes the run; a valid output without it completes with a warning; anything else is
a question. The question's shape comes from an `<ASK_USER_YAML>` block when the agent wrote one;
otherwise the whole message is an open question.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from runner_core.error_codes import ErrorCode
from runner_core.results import run_warning

DONE_MARKER = "__SKILL_DONE__"
KINDS = ("open_text", "choose_one", "confirm", "fill_fields", "risk_ack")
PROMPT_CAP = 8000  # characters of a question kept as its prompt
# Characters of an answer the agent is sent: codex refuses a turn's input over 1 MiB characters
# and every model has a context window, so a longer answer would only fail the run at its next
# turn. Larger material goes as files (reply/files).
REPLY_MAX_CHARS = 256 * 1024
_ASK = re.compile(r"<ASK_USER_YAML>(.*?)</ASK_USER_YAML>", re.DOTALL)

PROTOCOL = f"""
# Interactive protocol
You may ask the user when you need a decision or a missing fact. To ask, end your turn with
a message holding one YAML block and nothing you still plan to do:
<ASK_USER_YAML>
kind: choose_one   # open_text | choose_one | confirm | fill_fields | risk_ack
prompt: The question, in one or two sentences.
options:           # for choose_one
  - label: What the user sees
    value: what-you-receive
required_fields: []  # for fill_fields: the names of the fields to fill
</ASK_USER_YAML>
The answer arrives as the next user message of this same conversation.
When the task is complete, write the result as the output contract says and end with the JSON
object, with `"{DONE_MARKER}": true` as its first key.
"""

AUTO_PROTOCOL = """
Do not ask the user anything: nobody will answer. Decide by your own judgement and finish.
"""


@dataclass(frozen=True)
class Pending:
    """A question the run waits on (the `pending` document of the API, minus its id)."""

    kind: str
    prompt: str
    options: list[dict[str, Any]] = field(default_factory=list)
    ui_hints: dict[str, Any] = field(default_factory=dict)
    required_fields: list[str] = field(default_factory=list)
    default_decision_policy: str = "engine_judgement"
    context: dict[str, Any] = field(default_factory=dict)


def has_done_marker(text: str | None) -> bool:
    """True when the final message carries the completion marker."""
    return bool(text) and DONE_MARKER in str(text)


def without_marker(data: Any) -> Any:
    """The output object without its `__SKILL_DONE__` key (the schema does not know it)."""
    if isinstance(data, dict) and DONE_MARKER in data:
        return {k: v for k, v in data.items() if k != DONE_MARKER}
    return data


def without_question(text: str) -> str:
    """`text` without its `<ASK_USER_YAML>` blocks: what a person reads of a message that asks
    (the question itself reaches them as the pending question)."""
    return _ASK.sub("", text).strip()


def parse_question(text: str | None) -> tuple[Pending, dict[str, Any] | None]:
    """The pending interaction a final message asks for, and a warning when its YAML block
    could not be used (the question then falls back to open text)."""
    message = (text or "").strip()
    match = _ASK.search(message)
    if match is None:
        return Pending("open_text", _cap(message) or "(the agent asked without any text)"), None
    try:
        return _from_yaml(_load_without_aliases(match.group(1)), message), None
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        outside = _ASK.sub("", message).strip() or match.group(1).strip()
        warning = run_warning(
            ErrorCode.INTERACTIVE_ASK_YAML_INVALID,
            f"the <ASK_USER_YAML> block is not usable ({exc}); asked as open text",
        )
        return Pending("open_text", _cap(outside)), warning


def _load_without_aliases(block: str) -> Any:
    """The YAML block's value; a block with an alias (`*a`) is refused: a few lines of nested
    aliases stand for billions of values once the question is written out (a model can be
    talked into writing them by a document it reads)."""
    for event in yaml.parse(block, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            raise ValueError("aliases (*name) are not taken")
    return yaml.safe_load(block)


def _from_yaml(doc: Any, message: str) -> Pending:
    if not isinstance(doc, dict):
        raise ValueError("the block is not a mapping")
    kind = str(doc.get("kind") or "open_text")
    if kind not in KINDS:
        raise ValueError(f"kind '{kind}' is not one of {', '.join(KINDS)}")
    prompt = doc.get("prompt") or doc.get("question") or _ASK.sub("", message).strip()
    options = [_option(o) for o in doc.get("options") or []]
    if kind == "choose_one" and not options:
        raise ValueError("choose_one needs options")
    fields_ = doc.get("required_fields") or []
    if not isinstance(fields_, list):
        raise ValueError("required_fields must be a list")
    hints = doc.get("ui_hints") or {}
    if not isinstance(hints, dict):
        raise ValueError("ui_hints must be a mapping")
    return Pending(
        kind,
        _cap(str(prompt)),
        options,
        hints,
        [str(f) for f in fields_],
        str(doc.get("default_decision_policy") or "engine_judgement"),
    )


def _option(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict) and ("value" in raw or "label" in raw):
        value = raw.get("value", raw.get("label"))
        return {"label": str(raw.get("label", value)), "value": value}
    if isinstance(raw, str | int | float | bool):
        return {"label": str(raw), "value": raw}
    raise ValueError(f"an option is neither a value nor {{label, value}}: {raw!r}")


def _cap(text: str) -> str:
    return text if len(text) <= PROMPT_CAP else text[:PROMPT_CAP] + "…"


YES = frozenset(
    {"yes", "y", "true", "ok", "okay", "confirm", "confirmed", "sure", "是", "好", "确认", "同意"}
)
NO = frozenset({"no", "n", "false", "cancel", "deny", "否", "不", "不要", "取消", "拒绝"})


def typed_text(response: Any) -> str | None:
    """The text of a reply as people type it in Skill-Runner's clients (`{"text": ...}`, the
    whole response), else None."""
    if (
        isinstance(response, dict)
        and set(response) == {"text"}
        and isinstance(response["text"], str)
    ):
        return response["text"]
    return None


def from_typed(pending: dict[str, Any], text: str) -> Any:
    """What a typed answer means for the question: the option whose value or label it names
    (choose_one), true or false for yes or no in the user's words (confirm, risk_ack), the
    object it spells as JSON (fill_fields); else the text itself, passed to the agent, which
    can ask again."""
    said = text.strip()
    kind = pending.get("kind")
    if kind == "choose_one":
        for key in ("value", "label"):
            for option in pending.get("options") or []:
                if str(option.get(key, "")).strip().casefold() == said.casefold():
                    return option.get("value")
    elif kind in ("confirm", "risk_ack"):
        word = said.casefold().rstrip(".!。！")
        if word in YES:
            return True
        if word in NO:
            return False
    elif kind == "fill_fields" and said.startswith("{"):
        try:
            parsed = json.loads(said)
        except ValueError:
            return text
        return parsed if isinstance(parsed, dict) else text
    return text


def check_response(pending: dict[str, Any], response: Any) -> str | None:
    """Why `response` does not answer `pending` (None when it does)."""
    kind = pending.get("kind")
    if kind == "choose_one":
        values = [o.get("value") for o in pending.get("options") or []]
        if response not in values:
            return f"choose one of {json.dumps(values, ensure_ascii=False)}"
    elif kind in ("confirm", "risk_ack"):
        if not isinstance(response, bool):
            return "answer true or false"
    elif kind == "fill_fields":
        if not isinstance(response, dict):
            return "answer an object of field values"
        missing = [f for f in pending.get("required_fields") or [] if f not in response]
        if missing:
            return "missing fields: " + ", ".join(missing)
    elif response is None or (isinstance(response, str) and not response.strip()):
        return "the answer is empty"
    return None


def answer_text(response: Any) -> str:
    """The answer as the agent reads it in the next turn's message."""
    return response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)


def reply_prompt(pending: dict[str, Any], response: Any) -> str:
    """The next turn's user message: the user's answer to the pending question."""
    answer = answer_text(response)
    return (
        f"The user answered your question ({pending.get('prompt', '')!s}):\n{answer}\n\n"
        "Continue the task with this answer. Ask again with <ASK_USER_YAML> only if you must; "
        f'when done, end with the result JSON whose first key is "{DONE_MARKER}": true.'
    )


def auto_decision_prompt(pending: dict[str, Any], waited_sec: int) -> str:
    """The next turn's user message when nobody answered within the reply timeout."""
    return (
        f"Nobody answered your question ({pending.get('prompt', '')!s}) within {waited_sec} "
        "seconds. Decide by your own judgement, do not ask again, and finish the task: end with "
        f'the result JSON whose first key is "{DONE_MARKER}": true.'
    )
