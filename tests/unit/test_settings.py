from __future__ import annotations

import pytest

from runner_core.settings import SettingsError, engine_key, load_settings


@pytest.mark.parametrize(
    "value, expected", [(None, False), ("0", False), ("1", True), ("true", True), ("no", False)]
)
def test_task_events_are_off_unless_asked_for(tmp_path, value, expected) -> None:
    env = {"SKILL_RUNNER_DATA_DIR": str(tmp_path)}
    if value is not None:
        env["SKILL_RUNNER_TASK_EVENTS"] = value
    assert load_settings(env).task_events is expected


@pytest.mark.parametrize("value, expected", [(None, True), ("1", True), ("0", False)])
def test_task_sent_events_are_on_unless_switched_off(tmp_path, value, expected) -> None:
    env = {"SKILL_RUNNER_DATA_DIR": str(tmp_path)}
    if value is not None:
        env["SKILL_RUNNER_TASK_SENT_EVENTS"] = value
    assert load_settings(env).task_sent_events is expected


@pytest.mark.parametrize("name", ["SKILL_RUNNER_BROKER_VIEW", "SKILL_RUNNER_REVOKE_WATCH"])
@pytest.mark.parametrize("value, expected", [(None, True), ("1", True), ("0", False)])
def test_the_reads_of_library_internals_are_on_unless_switched_off(
    tmp_path, name, value, expected
) -> None:
    env = {"SKILL_RUNNER_DATA_DIR": str(tmp_path)}
    if value is not None:
        env[name] = value
    settings = load_settings(env)
    field = {"SKILL_RUNNER_BROKER_VIEW": "broker_view", "SKILL_RUNNER_REVOKE_WATCH": "revoke_watch"}
    assert getattr(settings, field[name]) is expected


def test_per_engine_running_limits_are_read_by_engine_key(tmp_path) -> None:
    settings = load_settings(
        {
            "SKILL_RUNNER_DATA_DIR": str(tmp_path),
            "SKILL_RUNNER_MAX_RUNNING_CODEX": "2",
            "SKILL_RUNNER_MAX_RUNNING_SCRIPT": "5",
            "SKILL_RUNNER_MAX_RUNNING_IFLOW": "1",  # a retired engine's limit still reads
        }
    )
    limits = settings.max_running_per_engine
    assert limits[engine_key("codex")] == 2
    assert limits[engine_key(None)] == 5
    assert engine_key("gemini") not in limits


@pytest.mark.parametrize(
    "env, message",
    [
        (
            {"SKILL_RUNNER_QUEUE_MAX": "abc"},
            "SKILL_RUNNER_QUEUE_MAX must be a whole number, not 'abc'",
        ),
        ({"SKILL_RUNNER_QUEUE_MAX": "0"}, "SKILL_RUNNER_QUEUE_MAX must be at least 1"),
        ({"PORT": "70000"}, "PORT must be between 1 and 65535"),
        ({"SKILL_RUNNER_REPAIR_ROUNDS": "5"}, "SKILL_RUNNER_REPAIR_ROUNDS must be between 0 and 3"),
        ({"SKILL_RUNNER_KILL_GRACE_SEC": "soon"}, "SKILL_RUNNER_KILL_GRACE_SEC must be a number"),
        (
            {"SKILL_RUNNER_WEBHOOK_BACKOFF_SEC": "soon"},
            "SKILL_RUNNER_WEBHOOK_BACKOFF_SEC must be a number, not 'soon'",
        ),
        (
            {"SKILL_RUNNER_WEBHOOK_BACKOFF_SEC": "-1"},
            "SKILL_RUNNER_WEBHOOK_BACKOFF_SEC must be at least 0",
        ),
        (
            {"SKILL_RUNNER_MAX_RUNNING_CODEX": "two"},
            "SKILL_RUNNER_MAX_RUNNING_CODEX must be a whole",
        ),
        (
            {"SKILL_RUNNER_MAX_RUNNING_CODEXX": "2"},  # a typo left codex unlimited, silently
            "SKILL_RUNNER_MAX_RUNNING_CODEXX names no engine (one of SCRIPT, CODEX,",
        ),
        # float() reads these; each was taken as is (a sweep every nan seconds, a retry in inf)
        ({"SKILL_RUNNER_SWEEP_INTERVAL_SEC": "nan"}, "_SWEEP_INTERVAL_SEC must be a number"),
        ({"SKILL_RUNNER_LIMIT_RETRY_SEC": "inf"}, "_LIMIT_RETRY_SEC must be a number, not 'inf'"),
        ({"SKILL_RUNNER_KILL_GRACE_SEC": "1e999"}, "SKILL_RUNNER_KILL_GRACE_SEC must be a number"),
        ({"SKILL_RUNNER_UPLOAD_MAX_RATIO": "Infinity"}, "SKILL_RUNNER_UPLOAD_MAX_RATIO must be"),
        ({"SKILL_RUNNER_WEBHOOK_BACKOFF_SEC": "NaN"}, "SKILL_RUNNER_WEBHOOK_BACKOFF_SEC must be"),
        # each never matched (a callback's host has no scheme or port; a bad entry was dropped)
        (
            {"SKILL_RUNNER_WEBHOOK_HOSTS": "hooks.example.org,https://ci.example.org/"},
            "SKILL_RUNNER_WEBHOOK_HOSTS: 'https://ci.example.org/' is not a host name",
        ),
        ({"SKILL_RUNNER_WEBHOOK_HOSTS": "ci.example.org:8443"}, "'ci.example.org:8443' is not a"),
        ({"SKILL_RUNNER_EGRESS_ALLOW": "mirror:80,proxy:abc"}, "'proxy:abc' is not host[:port]"),
        ({"SKILL_RUNNER_EGRESS_ALLOW": "mirror:99999"}, "'mirror:99999' is not host[:port]"),
        # a bridge entry never matched without its port (443 taken), so it opened nothing
        ({"SKILL_RUNNER_BRIDGE_ALLOW": "127.0.0.1"}, "'127.0.0.1' is not host:port"),
        ({"SKILL_RUNNER_BRIDGE_ALLOW": "[::1]"}, "'[::1]' is not host:port"),
        ({"SKILL_RUNNER_BRIDGE_ALLOW": "h:1,http://h:2"}, "'http://h:2' is not host:port"),
        (  # taken, then a POST /v1/jobs repeating an Idempotency-Key failed 500 (OverflowError)
            {"SKILL_RUNNER_IDEMPOTENCY_TTL_SEC": "99999999999"},
            "SKILL_RUNNER_IDEMPOTENCY_TTL_SEC must be at most 315360000 (ten years)",
        ),
        ({"SKILL_RUNNER_LEASE_SEC": "1e20"}, "SKILL_RUNNER_LEASE_SEC must be a whole number"),
        ({"SKILL_RUNNER_LEASE_SEC": "10" * 10}, "SKILL_RUNNER_LEASE_SEC must be at most 315360000"),
        ({"SKILL_RUNNER_KILL_GRACE_SEC": "4e9"}, "_KILL_GRACE_SEC must be at most 315360000"),
        ({"SKILL_RUNNER_TASK_EVENTS": "maybe"}, "SKILL_RUNNER_TASK_EVENTS must be 1/true/yes/on"),
        ({"LOG_LEVEL": "loud"}, "LOG_LEVEL must be one of DEBUG, INFO"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT must be 'text' or 'json', not 'xml'"),
        (
            {"SKILL_RUNNER_DEFAULT_TIMEOUT_SEC": "7200"},
            "is above SKILL_RUNNER_MAX_TIMEOUT_SEC (3600)",
        ),
        ({"SKILL_RUNNER_API_TOKEN": "short"}, "at least 16 characters"),
    ],
)
def test_a_bad_value_is_one_clear_error_naming_the_variable(tmp_path, env, message) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"SKILL_RUNNER_DATA_DIR": str(tmp_path), **env})
    assert message in str(caught.value)


def test_numbers_flags_and_levels_are_read_leniently_where_unambiguous(tmp_path) -> None:
    settings = load_settings(
        {
            "SKILL_RUNNER_DATA_DIR": str(tmp_path),
            "PORT": " 8080 ",
            "LOG_LEVEL": "warn",
            "SKILL_RUNNER_TASK_EVENTS": "ON",
            "SKILL_RUNNER_QUEUE_MAX": "",
            "SKILL_RUNNER_KILL_GRACE_SEC": "0.5",
        }
    )
    assert (settings.port, settings.log_level, settings.task_events) == (8080, "WARNING", True)
    assert settings.queue_max == 1000 and settings.kill_grace_sec == 0.5


def test_api_tokens_are_split_on_commas_and_kept_out_of_repr(tmp_path) -> None:
    first, second = "a" * 16, "b" * 24
    settings = load_settings(
        {"SKILL_RUNNER_DATA_DIR": str(tmp_path), "SKILL_RUNNER_API_TOKEN": f" {first} ,{second},"}
    )
    assert settings.api_tokens == (first, second)
    assert first not in repr(settings)
    assert load_settings({"SKILL_RUNNER_DATA_DIR": str(tmp_path)}).api_tokens == ()


def test_the_tokens_file_is_a_path_and_blank_means_none(tmp_path) -> None:
    base = {"SKILL_RUNNER_DATA_DIR": str(tmp_path)}
    named = load_settings({**base, "SKILL_RUNNER_TOKENS_FILE": str(tmp_path / "t.jsonl")})
    assert named.tokens_file == tmp_path / "t.jsonl"
    assert load_settings({**base, "SKILL_RUNNER_TOKENS_FILE": " "}).tokens_file is None


@pytest.mark.parametrize(
    "host, token, warned",
    [
        ("0.0.0.0", "", True),
        ("0.0.0.0", "a-token-of-sixteen+", False),
        ("127.0.0.1", "", False),
        ("::1", "", False),
        ("10.1.2.3", " ", True),
        ("0.0.0.0", "file", False),  # a tokens file instead
    ],
)
def test_gunicorn_warns_when_it_listens_beyond_loopback_without_a_token(
    monkeypatch, host, token, warned
) -> None:
    import runpy

    from runner_core.settings import REPO_ROOT

    monkeypatch.setenv("HOST", host)
    monkeypatch.setenv("SKILL_RUNNER_API_TOKEN", "" if token == "file" else token)
    monkeypatch.setenv("SKILL_RUNNER_TOKENS_FILE", "/etc/tokens.jsonl" if token == "file" else "")
    conf = runpy.run_path(str(REPO_ROOT / "deploy" / "gunicorn.conf.py"))
    said = []

    class Log:
        def warning(self, msg, *args):
            said.append(msg % args)

    conf["when_ready"](type("Server", (), {"log": Log()})())
    assert bool(said) is warned
    if warned:
        assert f"listening on {host}:" in said[0] and "without API tokens" in said[0]


def test_gunicorn_keeps_its_worker_heartbeat_files_in_memory_when_it_can() -> None:
    import os
    import runpy

    from runner_core.settings import REPO_ROOT

    conf = runpy.run_path(str(REPO_ROOT / "deploy" / "gunicorn.conf.py"))
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        assert conf["worker_tmp_dir"] == "/dev/shm"
    else:  # gunicorn's default (the system temp dir)
        assert conf["worker_tmp_dir"] is None


def test_cors_origins_are_checked_and_normalised(tmp_path) -> None:
    env = {"SKILL_RUNNER_DATA_DIR": str(tmp_path)}
    assert load_settings(env).cors_origins == ()
    assert load_settings(
        {**env, "SKILL_RUNNER_CORS_ORIGINS": "https://a.example.org/, http://localhost:3000"}
    ).cors_origins == ("https://a.example.org", "http://localhost:3000")
    assert load_settings({**env, "SKILL_RUNNER_CORS_ORIGINS": "*"}).cors_origins == ("*",)
    with pytest.raises(SettingsError, match="'app.example.org' is not an origin"):
        load_settings({**env, "SKILL_RUNNER_CORS_ORIGINS": "app.example.org"})


def test_webhook_hosts_and_egress_entries_that_can_match_are_kept(tmp_path) -> None:
    settings = load_settings(
        {
            "SKILL_RUNNER_DATA_DIR": str(tmp_path),
            "SKILL_RUNNER_WEBHOOK_HOSTS": " Hooks.Example.org , 10.0.0.5, [::1], my_host ",
            "SKILL_RUNNER_EGRESS_ALLOW": "mirror.local:8080, proxy.corp, https://pypi.example/",
            "SKILL_RUNNER_BRIDGE_ALLOW": "127.0.0.1:23119, [::1]:23119",
        }
    )
    assert settings.bridge_allow == ("127.0.0.1:23119", "[::1]:23119")
    assert settings.webhook_hosts == ("hooks.example.org", "10.0.0.5", "::1", "my_host")
    assert settings.egress_allow == ("mirror.local:8080", "proxy.corp", "https://pypi.example/")
