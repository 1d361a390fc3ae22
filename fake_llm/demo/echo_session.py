"""demo-echo, as the demo LLM plays it: the program its one shell tool call runs.

Run by the agent CLI in the run directory (python3 reading it as a here-document;
no backticks or dollar-parenthesis in it: gemini refuses such commands): reads the run's
resolved_input.json, writes result/result.json and artifacts/notes.md, prints the result.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


def echo(text: str) -> dict[str, Any]:
    """The skill's answer for text, computed as its SKILL.md asks."""
    warnings = []
    if not text.strip():
        warnings.append("the text is empty")
    elif text != text.strip():
        warnings.append("the text has leading or trailing whitespace")
    normalized = re.sub(r"\s+", " ", text.strip()).lower()
    return {
        "text": text,
        "length": len(text),
        "normalized": normalized != text,
        "normalized_text": normalized,
        "warnings": warnings,
    }


def notes(result: dict[str, Any]) -> str:
    """A short Markdown note about the text."""
    words = len(result["normalized_text"].split())
    lines = [
        "# Notes",
        "",
        f"- {result['length']} characters, {words} words",
        f'- normalized: "{result["normalized_text"]}"',
    ]
    lines += [f"- warning: {w}" for w in result["warnings"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    text = json.loads(Path("resolved_input.json").read_text(encoding="utf-8"))["input"]["text"]
    result = echo(text)
    for folder in ("result", "artifacts"):
        Path(folder).mkdir(exist_ok=True)
    Path("result/result.json").write_text(json.dumps(result), encoding="utf-8")
    Path("artifacts/notes.md").write_text(notes(result), encoding="utf-8")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
