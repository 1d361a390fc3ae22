"""zotero-parse-attachment, as the demo LLM plays it: the program its shell tool call runs.

Run by the agent CLI in the run directory (python3 reading it as a here-document;
no backticks or dollar-parenthesis in it: gemini refuses such commands): reads the attachment named
in resolved_input.json (a text file; a PDF through pdftotext when it is installed), takes
its first line as the title, its first sentences as the summary and its most frequent words as
tags, writes artifacts/parsed.json, artifacts/notes.md and result/result.json, prints the
result.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

STOP_WORDS = set(
    "about also based been between both from have into more most other over such than that "
    "their them then there these they this those through used using were what when where "
    "which while will with within would your paper propose proposes show shows".split()
)


def read_attachment(path: Path) -> str:
    """The attachment's text; a PDF without pdftotext gives what printable text it holds."""
    if path.suffix.lower() == ".pdf":
        try:
            done = subprocess.run(
                ["pdftotext", "-q", str(path), "-"], capture_output=True, text=True, timeout=60
            )
            if done.returncode == 0 and done.stdout.strip():
                return done.stdout
        except (OSError, subprocess.TimeoutExpired):
            pass
        raw = path.read_bytes().decode("latin-1")
        return "\n".join(re.findall(r"\(([ -~]{4,})\)", raw))
    return path.read_text(encoding="utf-8", errors="replace")


def parse(text: str, fallback_title: str) -> dict[str, Any]:
    """Title, summary (at most three sentences) and up to five tags of text."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    title = lines[0][:200] if lines else fallback_title
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(lines[1:]))
    summary = " ".join(s for s in sentences[:3] if s)[:800] or f"No text found after {title!r}."
    words = [w for w in re.findall(r"[a-z][a-z-]{3,}", text.lower()) if w not in STOP_WORDS]
    tags = [word for word, _ in Counter(words).most_common(5)]
    return {"title": title, "summary": summary, "tags": tags}


def main() -> None:
    resolved = json.loads(Path("resolved_input.json").read_text(encoding="utf-8"))
    attachment = Path(resolved["input"]["attachment_path"])
    parsed = parse(read_attachment(attachment), attachment.stem)
    files = [
        {"role": "parsed", "filename": "parsed.json"},
        {"role": "notes", "filename": "notes.md"},
    ]
    if (resolved.get("parameter") or {}).get("output_format") == "md":
        files.reverse()  # the primary file first
    for folder in ("result", "artifacts"):
        Path(folder).mkdir(exist_ok=True)
    record = {"item_key": resolved["input"]["item_key"], **parsed}
    Path("artifacts/parsed.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    note = [f"# {parsed['title']}", "", parsed["summary"], "", "Tags: " + ", ".join(parsed["tags"])]
    Path("artifacts/notes.md").write_text("\n".join(note) + "\n", encoding="utf-8")
    result = {**parsed, "attachments": files}
    Path("result/result.json").write_text(json.dumps(result), encoding="utf-8")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
