"""Configured model ids as the objects Skill-Runner's clients read, and how a request's
model, effort and provider_id become the id a run uses."""

from __future__ import annotations

import pytest

from runner_core.engines import catalog
from runner_core.runtime_options import RuntimeOptions

CODEX = ["gpt-5@low", "gpt-5@high", "o4-mini"]


def test_codex_ids_split_into_name_effort_and_the_names_efforts():
    objects = catalog.model_objects("codex", CODEX)
    assert [(o["id"], o["model"], o["reasoning_effort"]) for o in objects] == [
        ("gpt-5@low", "gpt-5", "low"),
        ("gpt-5@high", "gpt-5", "high"),
        ("o4-mini", "o4-mini", None),
    ]
    assert objects[0]["supported_effort"] == ["low", "high"] == objects[1]["supported_effort"]
    assert objects[2]["supported_effort"] == [] and objects[2]["display_name"] == "o4-mini"
    assert {o["provider_id"] for o in objects} == {"openai"}


def test_opencode_ids_name_their_provider():
    (obj,) = catalog.model_objects("opencode", ["anthropic/claude-x"])
    assert (obj["provider_id"], obj["model"]) == ("anthropic", "claude-x")


@pytest.mark.parametrize(
    "model, effort, provider, chosen",
    [
        ("gpt-5@high", None, None, "gpt-5@high"),
        ("gpt-5@high", "default", None, "gpt-5@high"),
        ("gpt-5@high", "low", None, "gpt-5@low"),
        ("gpt-5", "high", "openai", "gpt-5@high"),
        ("gpt-5@low@high", None, None, "gpt-5@high"),  # the REST e2e runner's id@effort
        ("o4-mini", "", None, "o4-mini"),
        (None, "default", None, None),
        (None, "high", None, "gpt-5@high"),  # the default model's effort replaced
        (None, None, "openai", "gpt-5@low"),
    ],
)
def test_a_requests_effort_shapes_the_model(monkeypatch, model, effort, provider, chosen):
    monkeypatch.setattr(catalog, "check_model", lambda e, m: None if m in CODEX + [None] else "no")
    monkeypatch.setattr(catalog, "engine_info", lambda e, **_: default_model("gpt-5@low"))
    assert catalog.requested_model("codex", model, effort, provider) == (chosen, None)


def default_model(model: str | None) -> catalog.EngineInfo:
    return catalog.EngineInfo("codex", True, None, None, True, CODEX, default_model=model)


def test_without_a_model_an_effort_or_provider_needs_a_default_one(monkeypatch):
    monkeypatch.setattr(catalog, "check_model", lambda e, m: None if m in CODEX else "no")
    monkeypatch.setattr(catalog, "engine_info", lambda e, **_: default_model("gpt-5@low"))
    assert catalog.requested_model("codex", None, "xhigh", None) == ("gpt-5@xhigh", "no")
    chosen, error = catalog.requested_model("codex", None, None, "google")
    assert chosen == "gpt-5@low" and "provider 'openai'" in (error or "")
    monkeypatch.setattr(catalog, "engine_info", lambda e, **_: default_model(None))
    chosen, error = catalog.requested_model("codex", None, "high", None)
    assert chosen is None and "no default model for effort 'high'" in (error or "")
    assert catalog.requested_model("codex", None, None, None) == (None, None)


def test_an_unknown_effort_or_another_provider_is_an_error(monkeypatch):
    monkeypatch.setattr(catalog, "check_model", lambda e, m: None if m in CODEX else "no")
    assert catalog.requested_model("codex", "gpt-5", "xhigh", None) == ("gpt-5@xhigh", "no")
    chosen, error = catalog.requested_model("codex", "gpt-5@high", None, "google")
    assert chosen == "gpt-5@high" and "provider 'openai'" in (error or "")


def test_hard_timeout_seconds_is_the_runs_limit_and_timeout_sec_wins():
    assert RuntimeOptions.from_dict({"hard_timeout_seconds": 30}).timeout_sec == 30
    assert RuntimeOptions.from_dict({"hard_timeout_seconds": 0}).timeout_sec is None
    both = {"hard_timeout_seconds": 30, "timeout_sec": 5}
    assert RuntimeOptions.from_dict(both).timeout_sec == 5
