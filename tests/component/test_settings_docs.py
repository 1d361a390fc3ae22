"""docs/operating.md names what the service reads: every variable `load_settings` reads is in its
settings table, and the demo LLM's refusal lists exactly the key variables it checks."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from launcher.demo_llm import KEY_VARIABLES
from runner_core import settings

OPERATING = Path(__file__).resolve().parents[2] / "docs" / "operating.md"
# set by `skill-runner serve --demo-llm` for the processes it starts, not by an operator
INTERNAL = {settings.DEMO_LLM_ENV}


def read_variables() -> set[str]:
    """The names `load_settings` and its helpers pass to the environment reads."""
    source = inspect.getsource(settings)
    reads = r'(?:env\.get\(|env\[|read\.\w+\(\s*|prefix = )"([A-Z][A-Z0-9_]*)"'
    return set(re.findall(reads, source)) - INTERNAL


def table_variables() -> set[str]:
    """Names in the first cell of operating.md's table rows; `_MAX_ENTRIES` after
    `SKILL_RUNNER_UPLOAD_MAX_BYTES` is `SKILL_RUNNER_UPLOAD_MAX_ENTRIES`, `<ENGINE>` stays."""
    names = set()
    for cell in re.findall(r"^\| ([^|]+) \|", OPERATING.read_text(encoding="utf-8"), flags=re.M):
        spans = re.findall(r"`([A-Z_<>]+)`", cell)
        for span in spans:
            if span.startswith("_") and spans[0][0] != "_":
                cut = spans[0].rfind("_" + span.split("_")[1])
                span = spans[0][:cut] + span if cut > 0 else span
            names.add(span.partition("<")[0])
    return names


def test_every_variable_the_settings_read_is_in_the_operating_table():
    read = read_variables()
    assert {"DATABASE_URL", "SKILL_RUNNER_QUEUE_MAX", "SKILL_RUNNER_MAX_RUNNING_"} <= read
    missing = sorted(read - table_variables())
    assert not missing, f"docs/operating.md's table lacks {missing}"


def test_the_demo_llm_refusal_lists_every_key_variable_it_checks():
    text = " ".join(OPERATING.read_text(encoding="utf-8").split())
    listed = re.search(r"a provider key is configured: one of (.+?) or a variable", text)
    assert listed, "the demo LLM section's list of key variables"
    assert set(re.findall(r"`([A-Z0-9_]+)`", listed.group(1))) == set(KEY_VARIABLES)
