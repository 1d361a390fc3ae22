"""Screenshots of the UI's pages, kept after the run in .test-artifacts/ui/ to look at."""

from __future__ import annotations

from pathlib import Path

from runner_core.settings import REPO_ROOT

SHOTS = REPO_ROOT / ".test-artifacts" / "ui"


def shot(page, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
