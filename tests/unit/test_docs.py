"""The documentation stays true to the repository: its links and the paths it names resolve,
and the README stays a front door."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(
    [
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        ROOT / "bench" / "README.md",
        ROOT / "bench" / "RESULTS.md",
    ]
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
TOP_DIRS = (
    "api/",
    "launcher/",
    "worker/",
    "runner_core/",
    "fake_llm/",
    "deploy/",
    "tests/",
    "bench/",
    "skills/",
    "docs/",
    "migrations/",
)
PLACEHOLDER = re.compile(r"[<>{}*…|]|\.\.\.|\s")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+)$", text, flags=re.M)}


def relative_links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve_to_files_and_headings(doc: Path) -> None:
    broken = []
    for target in relative_links(doc):
        file_part, _, fragment = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not dest.exists() or not dest.is_relative_to(ROOT):
            broken.append(target)
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(target)
    assert not broken, f"{doc.name}: broken links {broken}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_repository_paths_named_in_code_spans_exist(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    named = {
        span.rstrip("/.,")
        for span in CODE_SPAN.findall(text)
        if span.startswith(TOP_DIRS) and not PLACEHOLDER.search(span)
    }
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"{doc.name}: paths that do not exist {missing}"


def test_readme_stays_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 200, f"README.md has {len(lines)} lines; move detail to docs/"


def test_error_codes_are_one_table_in_the_api_doc() -> None:
    rows = re.findall(
        r"^\| `([A-Z][A-Z0-9_]+)` \|",
        (ROOT / "docs" / "api.md").read_text(encoding="utf-8"),
        flags=re.M,
    )
    assert len(rows) > 30
    assert len(rows) == len(set(rows)), "an error code is listed twice"
    for doc in DOCS:
        if doc.name != "api.md":
            text = doc.read_text(encoding="utf-8")
            assert not re.search(r"^\| (code|error) \|", text, flags=re.M | re.I), doc
