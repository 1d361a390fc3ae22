"""demo-choose-summary, as the demo LLM plays it: the program its shell tool calls run.

Run by the agent CLI in the run directory (python3 reading it as a here-document; no backticks
or dollar-parenthesis: gemini refuses such commands). First turn: drafts candidate summaries
of the run's text and prints the question as one <ASK_USER_YAML> line (in auto mode it picks
one itself). After the reply (or the auto-decision), which the runner also appends to
logs/prompt.txt, it writes result/result.json and prints the result with the done marker.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

REPLIED = "The user answered your question"


def candidates(text: str) -> list[str]:
    """Two or three one-sentence summaries: the first sentence, the first words, the key terms."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]
    words = text.split()
    drafts = [sentences[0] if sentences else text.strip()]
    drafts.append(" ".join(words[:8]) + ("..." if len(words) > 8 else ""))
    long_words = sorted({w.strip(".,;:!?").lower() for w in words if len(w) > 6})
    if long_words:
        drafts.append("A text about " + ", ".join(long_words[:4]) + ".")
    unique = list(dict.fromkeys(d for d in drafts if d))
    return unique[:3] if len(unique) > 1 else unique + ["(the text itself) " + text.strip()]


def last_answer(prompt_log: str) -> str | None:
    """The user's answer in the latest turn's message, None when nobody answered."""
    turns = prompt_log.split("--- turn ")
    latest = turns[-1] if len(turns) > 1 else ""
    if REPLIED not in latest:
        return None
    after = latest.split(REPLIED, 1)[1].split("\n", 1)[1] if "\n" in latest else ""
    return after.strip().splitlines()[0].strip().strip('"') if after.strip() else None


def finish(drafts: list[str], chosen: str, by: str) -> dict[str, Any]:
    index = int(chosen) - 1 if chosen.isdigit() and 0 < int(chosen) <= len(drafts) else 0
    result = {
        "summary": drafts[index],
        "chosen": str(index + 1),
        "candidates": drafts,
        "chosen_by": by,
    }
    Path("result").mkdir(exist_ok=True)
    Path("result/result.json").write_text(json.dumps(result), encoding="utf-8")
    return {"__SKILL_DONE__": True, **result}


def main() -> None:
    text = json.loads(Path("resolved_input.json").read_text(encoding="utf-8"))["input"]["text"]
    drafts = candidates(text)
    request = json.loads(Path("input.json").read_text(encoding="utf-8"))
    mode = (request.get("runtime_options") or {}).get("execution_mode", "auto")
    prompt_log = Path("logs/prompt.txt").read_text(encoding="utf-8")
    if mode != "interactive":
        print(json.dumps(finish(drafts, "1", "agent")))
        return
    if "--- turn " in prompt_log:  # a later turn: the answer, or nobody's
        answer = last_answer(prompt_log)
        print(json.dumps(finish(drafts, answer or "1", "user" if answer else "agent")))
        return
    question = {
        "kind": "choose_one",
        "prompt": "Which summary should be kept?",
        "options": [{"label": f"{i}: {d}", "value": str(i)} for i, d in enumerate(drafts, 1)],
    }
    print("<ASK_USER_YAML>" + json.dumps(question) + "</ASK_USER_YAML>")


if __name__ == "__main__":
    main()
