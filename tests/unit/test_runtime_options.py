"""A request's runtime_options read as RuntimeOptions: typed values, the defaults the service
has always used, and the stored object kept whole."""

from __future__ import annotations

import dataclasses

import pytest

from runner_core import runtime_options
from runner_core.runtime_options import RuntimeOptions
from runner_core.settings import run_timeout
from tests.helpers import make_settings


def test_no_options_read_as_the_defaults():
    options = RuntimeOptions.from_dict(None)
    assert options == RuntimeOptions.from_dict({})
    assert (options.execution_mode, options.debug, options.no_cache) == ("auto", False, False)
    assert options.timeout_sec is None and options.repair_rounds is None
    assert not options.interactive_auto_reply and not options.is_interactive


def test_every_option_is_read_into_its_field():
    options = RuntimeOptions.from_dict(
        {
            "execution_mode": "interactive",
            "debug": True,
            "no_cache": True,
            "timeout_sec": 30,
            "repair_rounds": 2,
            "interactive_reply_timeout_sec": 90,
            "interactive_auto_reply": True,
            "codex_config": {"reasoning": "high"},
        }
    )
    assert options.is_interactive and options.debug and options.no_cache
    assert (options.timeout_sec, options.repair_rounds) == (30, 2)
    assert options.interactive_reply_timeout_sec == 90 and options.interactive_auto_reply
    assert options.engine_config("codex") == {"reasoning": "high"}
    assert options.engine_config("gemini") is None


def test_the_stored_object_comes_back_whole_with_unknown_keys():
    stored = {"execution_mode": "auto", "my_flag": [1, 2], "x_config": {"a": 1}}
    options = RuntimeOptions.from_dict(stored)
    assert options.as_dict() == stored
    assert options.as_dict() is not stored  # a copy: the options never write to the row


def test_options_cannot_be_changed_once_read():
    options = RuntimeOptions.from_dict({"debug": True})
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.debug = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        options.stored["debug"] = False  # type: ignore[index]


@pytest.mark.parametrize("value", [0, -5, True, "30", 2.5, None])
def test_a_timeout_that_is_not_a_positive_whole_number_is_ignored(value):
    assert RuntimeOptions.from_dict({"timeout_sec": value}).timeout_sec is None


def test_the_reply_timeout_defaults_to_1200_seconds_within_the_servers_cap():
    assert RuntimeOptions.from_dict({}).reply_timeout(86400) == 1200
    assert RuntimeOptions.from_dict({}).reply_timeout(600) == 600
    assert RuntimeOptions.from_dict({"interactive_reply_timeout_sec": 5}).reply_timeout(600) == 5


def test_repair_rounds_fall_back_to_the_server_setting_only_when_not_sent():
    assert RuntimeOptions.from_dict({}).repair_rounds_or(2) == 2
    assert RuntimeOptions.from_dict({"repair_rounds": 0}).repair_rounds_or(2) == 0
    assert RuntimeOptions.from_dict({"repair_rounds": None}).repair_rounds_or(2) == 0
    assert RuntimeOptions.from_dict({"repair_rounds": 1}).repair_rounds_or(2) == 1


def test_repair_rounds_stay_between_0_and_3():
    assert RuntimeOptions.from_dict({}).repair_rounds_or(9) == 3
    assert RuntimeOptions.from_dict({"repair_rounds": 7}).repair_rounds_or(0) == 3
    assert RuntimeOptions.from_dict({"repair_rounds": -1}).repair_rounds_or(2) == 0


def test_every_typed_option_is_in_the_schema_the_api_checks():
    typed = {f.name for f in dataclasses.fields(RuntimeOptions)} - {"engine_configs", "stored"}
    aliases = set(runtime_options.ALIASES)
    assert typed == set(runtime_options.SCHEMA["properties"]) - aliases
    assert set(runtime_options.ALIASES.values()) <= typed


def test_the_requested_timeout_wins_below_the_server_maximum(tmp_path):
    settings = make_settings(
        tmp_path, SKILL_RUNNER_DEFAULT_TIMEOUT_SEC="60", SKILL_RUNNER_MAX_TIMEOUT_SEC="100"
    )
    assert run_timeout(settings, 50, None) == 50
    assert run_timeout(settings, 50, 20) == 20
    assert run_timeout(settings, 50, 500) == 100
    assert run_timeout(settings, None, None) == 60


def test_a_reply_timeout_of_0_means_at_once_and_a_whole_float_is_read_as_its_number():
    assert RuntimeOptions.from_dict({"interactive_reply_timeout_sec": 0}).reply_timeout(600) == 0
    assert (
        RuntimeOptions.from_dict({"interactive_reply_timeout_sec": 30.0}).reply_timeout(600) == 30
    )
    for odd in (-1, 2.5, "30", True, None):
        options = RuntimeOptions.from_dict({"interactive_reply_timeout_sec": odd})
        assert options.reply_timeout(600) == 600
