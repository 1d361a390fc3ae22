"""The demo LLM's script: one scripted agent session per example skill.

`skill-runner serve --demo-llm` serves `demo_script()` with `python -m fake_llm`. For each
example skill in `skills/` the model makes one shell tool call that runs the skill's session
program (`python3` reading a here-document: the program computes the answer from the run's
`resolved_input.json` and writes `result/result.json` and the artifacts), then answers with
the program's output. Any other prompt gets a plain sentence (no tool call), so a run of
another skill fails its output schema instead of pretending.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODEL = "demo-model"
# skill id -> the program its session runs
SESSIONS = {
    "demo-echo": "echo_session.py",
    "zotero-parse-attachment": "zotero_session.py",
    "demo-choose-summary": "choose_summary_session.py",
}
# the runner's messages that open a later turn of an interactive run (runner_core.interaction)
LATER_TURNS = ("The user answered your question", "Nobody answered your question")
FINAL_TEXT = "Done; the result is also in result/result.json:\n```json\n$tool_output_last_line\n```"
# its last line is either the question (interactive mode) or the result JSON (auto mode)
ASKING_TEXT = "I drafted candidate summaries.\n$tool_output_last_line"
NO_SESSION = (
    "This is the demo LLM of skill-runner serve --demo-llm: it only plays the example skills "
    + ", ".join(SESSIONS)
    + ". Configure a real provider to run other skills."
)


def session_command(program: str) -> str:
    """The shell command of a session: `python3` reading the program from a here-document."""
    source = (HERE / program).read_text(encoding="utf-8")
    return f"python3 - <<'PY'\n{source}PY"


def demo_script() -> dict[str, Any]:
    """The script file's content: a `when` variant per skill (see fake_llm.script)."""
    return {
        "model": MODEL,
        "tool": False,
        "final_text": NO_SESSION,
        "when": [
            # a later turn (only demo-choose-summary asks): the same program finishes the run
            *(
                {
                    "contains": opening,
                    "tool": True,
                    "command": session_command(SESSIONS["demo-choose-summary"]),
                    "final_text": "$tool_output_last_line",
                }
                for opening in LATER_TURNS
            ),
            *(
                {
                    "contains": f"'{skill}'",  # the default prompt: Use the skill named '<id>'
                    "tool": True,
                    "command": session_command(program),
                    "final_text": ASKING_TEXT if skill == "demo-choose-summary" else FINAL_TEXT,
                }
                for skill, program in SESSIONS.items()
            ),
        ],
    }
