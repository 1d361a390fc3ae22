"""runtime_options.env: which variables a request may give its run, and where their values are
kept (runner_core.run_env)."""

from __future__ import annotations

import stat

import pytest

from runner_core import run_env
from runner_core.run_env import RunEnvRefused

BRIDGE = {
    "ZOTERO_BRIDGE_ENDPOINT": "http://127.0.0.1:23119/bridge/v1",
    "ZOTERO_BRIDGE_TOKEN": "token-0123456789",
    "ZOTERO_BRIDGE_CONNECTION_MODE": "local",
}


def test_the_zotero_bridge_variables_pass_by_default():
    assert run_env.checked({"env": BRIDGE}) == BRIDGE


def test_no_env_gives_no_variables():
    assert run_env.checked({"no_cache": True}) == {}
    assert run_env.checked(None) == {}


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "HOME",
        "LD_PRELOAD",
        "PYTHONPATH",
        "NODE_OPTIONS",
        "OPENAI_API_KEY",
        "DEEPSEEK_API_KEY",
        "OPENAI_BASE_URL",
        "HTTPS_PROXY",
        "SKILL_RUNNER_RUN_DIR",
        "CODEX_HOME",
        "UV_INDEX_URL",
        "BASH_ENV",
    ],
)
def test_a_name_that_changes_how_processes_start_is_refused_even_when_allowed(name):
    with pytest.raises(RunEnvRefused) as refused:
        run_env.checked({"env": {name: "x"}}, allowed=("*",))
    assert refused.value.name == name and name in str(refused.value)


def test_a_name_the_operator_does_not_list_is_refused():
    with pytest.raises(RunEnvRefused, match="SKILL_RUNNER_RUN_ENV_NAMES"):
        run_env.checked({"env": {"MY_VAR": "x"}})
    assert run_env.checked({"env": {"MY_VAR": "x"}}, allowed=("MY_*",)) == {"MY_VAR": "x"}


def test_one_of_the_services_own_secrets_is_refused():
    with pytest.raises(RunEnvRefused):
        run_env.checked(
            {"env": {"MY_SECRET_X": "x"}}, allowed=("*",), service_names={"MY_SECRET_X"}
        )


@pytest.mark.parametrize(
    "env",
    [{"ZOTERO_BRIDGE_TOKEN": 5}, {"ZOTERO_BRIDGE_TOKEN": "a\0b"}, {"zotero_bridge_token": "x"}],
)
def test_a_value_that_is_no_string_or_a_bad_name_is_refused_without_its_value(env):
    with pytest.raises(RunEnvRefused) as refused:
        run_env.checked({"env": env})
    assert "a\0b" not in str(refused.value)


def test_an_env_that_is_no_object_is_refused():
    with pytest.raises(RunEnvRefused):
        run_env.checked({"env": ["ZOTERO_BRIDGE_TOKEN"]})


def test_a_withheld_value_sent_back_gives_no_variable():
    sent = {"ZOTERO_BRIDGE_TOKEN": {"redacted": True}, "ZOTERO_BRIDGE_SCOPE": "s"}
    assert run_env.checked({"env": sent}) == {"ZOTERO_BRIDGE_SCOPE": "s"}


def test_the_values_are_kept_in_a_file_only_the_service_may_read(tmp_path):
    path = run_env.write(tmp_path / "req", BRIDGE)
    assert path is not None and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert run_env.read(tmp_path / "req") == BRIDGE
    assert run_env.write(tmp_path / "other", {}) is None
    assert run_env.read(tmp_path / "other") == {}


def test_a_refused_name_in_the_file_is_not_read(tmp_path):
    (tmp_path / run_env.FILE).write_text('{"LD_PRELOAD": "/x.so", "ZOTERO_BRIDGE_SCOPE": "s"}')
    assert run_env.read(tmp_path) == {"ZOTERO_BRIDGE_SCOPE": "s"}


def test_the_bridge_endpoint_is_an_http_url_or_nothing():
    assert run_env.endpoint_url(BRIDGE) == BRIDGE["ZOTERO_BRIDGE_ENDPOINT"]
    assert run_env.endpoint_url({"ZOTERO_BRIDGE_ENDPOINT": "file:///etc/passwd"}) is None
    assert run_env.endpoint_url({}) is None


def test_declared_variables_whose_file_is_gone_are_missing(tmp_path):
    names = run_env.declared({"env": {"ZOTERO_BRIDGE_TOKEN": {"redacted": True}}})
    assert names == ["ZOTERO_BRIDGE_TOKEN"]
    with pytest.raises(run_env.RunEnvMissing) as raised:
        run_env.read_declared(tmp_path, names)
    assert raised.value.names == names
    assert run_env.read_declared(tmp_path, []) == {}
    run_env.write(tmp_path, {}, named=True)
    assert run_env.read_declared(tmp_path, names) == {}
