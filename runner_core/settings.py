"""Service settings read from the environment, with documented defaults.

Both the API and the worker read the same settings so they agree on the database, the
broker and where run directories live.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import overload

from runner_core.config_file import ConfigFileError, apply_config_file
from runner_core.egress import parse_endpoint
from runner_core.engines import ENGINES
from runner_core.engines.config import configured_key_names
from runner_core.metrics import default_dir
from runner_core.secret_values import held, hold
from runner_core.tokens import PriceTableError, read_prices

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_LLM_ENV = (
    "SKILL_RUNNER_DEMO_LLM"  # set by `skill-runner serve --demo-llm` (the fake LLM's URL)
)
DEMO_LLM_WARNING = (
    "DEMO LLM ON: the engine CLIs talk to a scripted fake model at %s, not to a provider; "
    "its answers are canned sessions for the example skills. Not for real work."
)


@dataclass(frozen=True)
class Settings:
    """Everything configurable, resolved to absolute paths and URLs."""

    data_dir: Path
    skills_dir: Path
    database_url: str
    broker_url: str
    embedded_broker: bool
    host: str
    port: int
    log_level: str
    log_file: str | None
    log_max_bytes: int
    log_backup_count: int
    default_timeout_sec: int
    max_timeout_sec: int
    queue_max: int
    sweep_grace_sec: int
    lease_sec: int
    sweep_interval_sec: float = 10.0
    kill_grace_sec: float = 3.0
    max_running: int = 0
    max_running_per_engine: dict[str, int] = field(default_factory=dict)
    limit_retry_sec: float = 5.0
    engine_upgrade_timeout_sec: int = 900  # one npm install of POST /v1/engines/{e}/upgrade
    repair_rounds: int = 0
    upload_max_bytes: int = 1024**3
    upload_max_entries: int = 10_000
    upload_max_ratio: float = 200.0
    max_request_bytes: int = 16 * 1024**2  # any body but a zip upload
    max_output_bytes: int = 256 * 1024**2  # a process's stdout + stderr (0: no limit)
    min_free_bytes: int = 256 * 1024**2  # /healthz is degraded below this much free disk
    upload_wait_sec: int = 86400  # a job waiting this long for its upload fails UPLOAD_TIMEOUT
    # a run queued this long on a queue no live worker consumes fails QUEUE_NOT_SERVED (0: never)
    queue_unserved_sec: int = 300
    reply_timeout_max_sec: int = 86400  # caps runtime_options.interactive_reply_timeout_sec
    idempotency_ttl_sec: int = 86400  # how long an Idempotency-Key answers with its first job
    log_format: str = "text"  # or "json": one JSON object per line
    task_events: bool = False  # workers' task events always on (else while Flower watches)
    task_sent_events: bool = True  # `task-sent` on every send: Flower lists queued runs
    events: bool = True  # each run's FCMP events (events.jsonl + pub/sub); off for benchmarks
    # reaches into library internals (docs/internals.md, "Private library details"); off: the
    # public API only
    broker_view: bool = True  # the sweep reads kombu's Redis keys: only lost messages re-sent
    revoke_watch: bool = True  # workers read Celery's revoked set: a revoke cancels at once
    run_pool: int = 2  # run directories made ahead per skill version and kind (0: off)
    snapshot_mode: str = "link"  # link: from a read-only copy per skill version; copy: full copies
    api_tokens: tuple[str, ...] = field(default=(), repr=False)  # empty: no token asked for
    tokens_file: Path | None = None  # hashed, scoped, named tokens (re-read when it changes)
    prices_file: Path | None = None  # USD per million tokens by model (runner_core.tokens)
    cors_origins: tuple[str, ...] = ()  # browser origins allowed to call the API ("*": any)
    webhook_hosts: tuple[str, ...] = ()  # hosts (and non-public addresses) callbacks may go to
    webhook_secret: str = field(default="", repr=False)  # signs callback bodies (HMAC-SHA256)
    webhook_retry_sec: int = 3600  # how long a failing callback is retried
    webhook_backoff_sec: float = 2.0  # the first retry's delay; doubled each time (max 5 min)
    demo_llm: str = ""  # the demo LLM's URL when the engine CLIs talk to it (never in production)
    work_dir: Path | None = None  # local scratch runs work in (None: in the shared runs/)
    # where processes write their metric values (None: runner_core.metrics.default_dir)
    metrics_dir_setting: Path | None = None
    sandbox: str = "auto"  # auto: box runs with bwrap when it works, limits alone when not; off
    run_memory_max: int = 4 * 1024**3  # writable memory a run process may map (0: no limit)
    run_processes_max: int = 1024  # processes and threads of one run process (0: no limit)
    run_open_files_max: int = 4096  # open files of each run process (0: no limit)
    sandbox_read_paths: tuple[Path, ...] = ()  # folders under /tmp or the data dir runs may read
    sandbox_bwrap: str = ""  # the bwrap binary (empty: .sandbox/ of the checkout, else PATH)
    # engine CLIs in a bwrap box: `box` reach their provider (and the skill's allowlist) only,
    # through the run's egress proxy; `open`: the whole network, as a script with network on
    engine_network: str = "box"
    network_on: str = "allow"  # forbid: a skill's `network: on` is boxed as `off`
    # hosts every boxed run may reach beside its own (host:port, comma-separated)
    egress_allow: tuple[str, ...] = ()
    # names a request's runtime_options.env may set (globs; runner_core.run_env refuses some
    # whatever this says)
    run_env_names: tuple[str, ...] = ("ZOTERO_BRIDGE_*",)
    # host:port endpoints a run's ZOTERO_BRIDGE_ENDPOINT may open in its box (runner_core.run_env)
    bridge_allow: tuple[str, ...] = ()

    @property
    def runs_dir(self) -> Path:
        return self.data_dir / "runs"

    @property
    def work_runs_dir(self) -> Path:
        """Where a run works while it runs: the worker's local scratch, or runs/ itself."""
        return self.work_dir / "runs" if self.work_dir else self.runs_dir

    @property
    def requests_dir(self) -> Path:
        return self.data_dir / "requests"

    @property
    def run_pool_dir(self) -> Path:
        # beside the run directories it is renamed into (one file system)
        return (self.work_dir or self.data_dir) / "run-pool"

    @property
    def skill_copies_dir(self) -> Path:
        # beside the run directories that hard-link from it
        return (self.work_dir or self.data_dir) / "skill-copies"

    @property
    def metrics_dir(self) -> Path:
        return self.metrics_dir_setting or default_dir(self.data_dir)

    @property
    def broker_socket(self) -> Path:
        return self.data_dir / "broker" / "redis.sock"


# Celery's soft and hard time limits sit this far above a run's own deadline: a backstop for a
# task stuck outside the process watch (the watch kills the process group at the deadline).
SOFT_LIMIT_MARGIN_SEC, HARD_LIMIT_MARGIN_SEC = 60, 120


def run_timeout(settings: Settings, skill_timeout: int | None, requested: int | None) -> int:
    """A run's time limit in seconds: the request's `timeout_sec` (RuntimeOptions), else the
    skill's `automation.timeout_sec`, else the default; never above the server maximum."""
    return min(requested or skill_timeout or settings.default_timeout_sec, settings.max_timeout_sec)


def task_time_limits(timeout_sec: int) -> tuple[int, int]:
    """(hard, soft) Celery time limits for a run whose own limit is `timeout_sec`."""
    return timeout_sec + HARD_LIMIT_MARGIN_SEC, timeout_sec + SOFT_LIMIT_MARGIN_SEC


def engine_key(engine: str | None) -> str:
    """The concurrency key of a run: its engine, or 'script' for script skills."""
    return (engine or "script").lower()


class SettingsError(ValueError):
    """A setting with a value the service cannot use; the message names the variable."""


# ten years: the longest duration a *_SEC setting takes (now minus 2,000 years is no date, and
# an idempotency TTL that large failed a repeated Idempotency-Key with a 500)
MAX_SECONDS = 10 * 365 * 86400
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class _Env:
    """Typed reads of environment variables with one clear error per bad value."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def text(self, name: str, default: str) -> str:
        return self.env.get(name, default)

    @overload
    def number(
        self,
        name: str,
        default: float,
        kind: type[int] = ...,
        minimum: float | None = ...,
        maximum: float | None = ...,
    ) -> int: ...

    @overload
    def number(
        self,
        name: str,
        default: float,
        kind: type[float],
        minimum: float | None = ...,
        maximum: float | None = ...,
    ) -> float: ...

    def number(
        self,
        name: str,
        default: float,
        kind: type = int,
        minimum: float | None = None,
        maximum: float | None = None,
    ) -> float:
        raw = self.env.get(name, "").strip()
        if not raw:
            return kind(default)
        try:
            value = kind(raw)
            if not math.isfinite(value):  # float("nan"), "inf", "1e999": no usable value
                raise ValueError(raw)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise SettingsError(f"{name} must be {what}, not {raw!r}") from None
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            bounds = (
                f"between {minimum:g} and {maximum:g}"
                if maximum is not None
                else f"at least {minimum:g}"
            )
            raise SettingsError(f"{name} must be {bounds}, not {raw!r}")
        if name.endswith("_SEC") and value > MAX_SECONDS:  # date arithmetic would overflow
            raise SettingsError(f"{name} must be at most {MAX_SECONDS} (ten years), not {raw!r}")
        return value

    def flag(self, name: str, default: bool = False) -> bool:
        raw = self.env.get(name, "").strip().lower()
        if not raw:
            return default
        if raw in _TRUE:
            return True
        if raw in _FALSE:
            return False
        raise SettingsError(f"{name} must be 1/true/yes/on or 0/false/no/off, not {raw!r}")


def count_setting(env: dict[str, str], name: str, default: int) -> int:
    """A count of at least 1 read from `env` (gunicorn's WEB_THREADS, WEB_CONNECTIONS, ...);
    SettingsError names a bad value."""
    return _Env(env).number(name, default, minimum=1)


def per_engine_limits(env: dict[str, str]) -> dict[str, int]:
    """SKILL_RUNNER_MAX_RUNNING_<ENGINE>=N (e.g. _CODEX, _SCRIPT) -> {"codex": N, ...}."""
    prefix = "SKILL_RUNNER_MAX_RUNNING_"
    read = _Env(env)
    limits = {
        key[len(prefix) :].lower(): read.number(key, 0, minimum=0)
        for key, value in env.items()
        if key.startswith(prefix) and value.strip()
    }
    known = ("script", *ENGINES)
    for name in limits:  # a typo would leave that engine without its limit, silently
        if name not in known:
            raise SettingsError(
                f"{prefix}{name.upper()} names no engine (one of "
                f"{', '.join(n.upper() for n in known)})"
            )
    return limits


def api_tokens(raw: str) -> tuple[str, ...]:
    """SKILL_RUNNER_API_TOKEN: one token, or several separated by commas (to rotate them)."""
    tokens = tuple(t.strip() for t in raw.split(",") if t.strip())
    short = [t for t in tokens if len(t) < 16]
    if short:
        raise SettingsError(
            "SKILL_RUNNER_API_TOKEN: every token must be at least 16 characters "
            f"(one has {len(short[0])})"
        )
    return tokens


_ORIGIN = re.compile(r"https?://[^/\s]+")


def cors_origins(raw: str) -> tuple[str, ...]:
    """SKILL_RUNNER_CORS_ORIGINS: `*`, or origins (`https://app.example.org`) separated by
    commas."""
    origins = tuple(o.strip().rstrip("/") for o in raw.split(",") if o.strip())
    bad = [o for o in origins if o != "*" and not _ORIGIN.fullmatch(o)]
    if bad:
        raise SettingsError(
            f"SKILL_RUNNER_CORS_ORIGINS: {bad[0]!r} is not an origin (scheme://host[:port], or *)"
        )
    return origins


_HOST = re.compile(r"[a-z0-9_.-]+|[0-9a-f:.]+")  # a name, an IPv4 or an IPv6 address


def webhook_hosts(raw: str) -> tuple[str, ...]:
    """SKILL_RUNNER_WEBHOOK_HOSTS: host names or addresses, comma-separated. A URL or a
    host:port never equals a callback's host, so every callback would be refused."""
    hosts = tuple(h.strip().lower().strip("[]") for h in raw.split(",") if h.strip())
    bad = [h for h in hosts if not _HOST.fullmatch(h) or h.count(":") == 1]
    if bad:
        raise SettingsError(
            f"SKILL_RUNNER_WEBHOOK_HOSTS: {bad[0]!r} is not a host name or address "
            "(no scheme, port or path)"
        )
    return hosts


def egress_allow(raw: str) -> tuple[str, ...]:
    """SKILL_RUNNER_EGRESS_ALLOW: host[:port] (or URL) entries, comma-separated; one that
    names no endpoint was left out of every run's box without a word."""
    items = tuple(item.strip() for item in raw.split(",") if item.strip())
    for item in items:
        endpoint = parse_endpoint(item)
        if endpoint is None or not 0 < endpoint.port < 65536:
            raise SettingsError(f"SKILL_RUNNER_EGRESS_ALLOW: {item!r} is not host[:port]")
    return items


def bridge_allow(raw: str) -> tuple[str, ...]:
    """SKILL_RUNNER_BRIDGE_ALLOW: host:port entries, comma-separated; the port is required (a
    bridge has no default one), and an entry that names no endpoint would open nothing."""
    items = _items(raw)
    for item in items:
        endpoint = parse_endpoint(item) if "://" not in item else None
        port_given = ":" in item.rsplit("]", 1)[-1]  # not the colons of a [v6 address]
        if endpoint is None or not port_given or not 0 < endpoint.port < 65536:
            raise SettingsError(f"SKILL_RUNNER_BRIDGE_ALLOW: {item!r} is not host:port")
    return items


def _config_file(environ: MutableMapping[str, str]) -> None:
    try:
        apply_config_file(environ)
    except ConfigFileError as exc:
        raise SettingsError(str(exc)) from exc


def prices_file(raw: str) -> Path | None:
    """SKILL_RUNNER_PRICES_FILE: read once here so that a bad table stops the start."""
    if not raw.strip():
        return None
    path = Path(raw.strip()).expanduser()
    try:
        read_prices(path)
    except PriceTableError as exc:
        raise SettingsError(f"SKILL_RUNNER_PRICES_FILE: {exc}") from exc
    return path


def load_settings(env: dict[str, str] | None = None) -> Settings:
    """Build Settings from `env` (default: os.environ); SettingsError names a bad value."""
    if env is None:
        _config_file(os.environ)  # fills os.environ: processes started from here see it too
        env = {**held(), **os.environ}
    else:
        env = dict(env)
        _config_file(env)
    read = _Env(env)
    data_dir = Path(env.get("SKILL_RUNNER_DATA_DIR", "./data")).resolve()
    skills_dir = Path(env.get("SKILL_RUNNER_SKILLS_DIR", "./skills")).resolve()
    database_url = env.get("DATABASE_URL") or f"sqlite:///{data_dir / 'runs.db'}"
    broker_url = env.get("CELERY_BROKER_URL", "")
    embedded = not broker_url
    if embedded:
        broker_url = f"redis+socket://{data_dir / 'broker' / 'redis.sock'}"
    log_level = read.text("LOG_LEVEL", "INFO").strip().upper()
    log_level = {"WARN": "WARNING"}.get(log_level, log_level)
    if log_level not in LOG_LEVELS:
        raise SettingsError(
            f"LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, not {env['LOG_LEVEL']!r}"
        )
    default_timeout = read.number("SKILL_RUNNER_DEFAULT_TIMEOUT_SEC", 600, minimum=1)
    max_timeout = read.number("SKILL_RUNNER_MAX_TIMEOUT_SEC", 3600, minimum=1)
    if default_timeout > max_timeout:
        raise SettingsError(
            f"SKILL_RUNNER_DEFAULT_TIMEOUT_SEC ({default_timeout}) is above "
            f"SKILL_RUNNER_MAX_TIMEOUT_SEC ({max_timeout})"
        )
    return Settings(
        data_dir=data_dir,
        skills_dir=skills_dir,
        database_url=database_url,
        broker_url=broker_url,
        embedded_broker=embedded,
        host=read.text("HOST", "127.0.0.1"),
        port=read.number("PORT", 8000, minimum=1, maximum=65535),
        log_level=log_level,
        log_file=env.get("LOG_FILE") or None,
        log_max_bytes=read.number("LOG_MAX_BYTES", 5 * 1024 * 1024, minimum=0),
        log_backup_count=read.number("LOG_BACKUP_COUNT", 5, minimum=0),
        log_format=_log_format(env.get("LOG_FORMAT", "text")),
        default_timeout_sec=default_timeout,
        max_timeout_sec=max_timeout,
        queue_max=read.number("SKILL_RUNNER_QUEUE_MAX", 1000, minimum=1),
        sweep_grace_sec=read.number("SKILL_RUNNER_SWEEP_GRACE_SEC", 30, minimum=0),
        lease_sec=read.number("SKILL_RUNNER_LEASE_SEC", 60, minimum=1),
        repair_rounds=read.number("SKILL_RUNNER_REPAIR_ROUNDS", 0, minimum=0, maximum=3),
        upload_max_bytes=read.number("SKILL_RUNNER_UPLOAD_MAX_BYTES", 1024**3, minimum=1),
        upload_max_entries=read.number("SKILL_RUNNER_UPLOAD_MAX_ENTRIES", 10000, minimum=1),
        upload_max_ratio=read.number("SKILL_RUNNER_UPLOAD_MAX_RATIO", 200, float, minimum=1),
        max_request_bytes=read.number("SKILL_RUNNER_MAX_REQUEST_BYTES", 16 * 1024**2, minimum=1024),
        max_output_bytes=read.number("SKILL_RUNNER_MAX_OUTPUT_BYTES", 256 * 1024**2, minimum=0),
        upload_wait_sec=read.number("SKILL_RUNNER_UPLOAD_WAIT_SEC", 86400, minimum=1),
        queue_unserved_sec=read.number("SKILL_RUNNER_QUEUE_UNSERVED_SEC", 300, minimum=0),
        reply_timeout_max_sec=read.number("SKILL_RUNNER_REPLY_TIMEOUT_MAX_SEC", 86400, minimum=1),
        idempotency_ttl_sec=read.number("SKILL_RUNNER_IDEMPOTENCY_TTL_SEC", 86400, minimum=86400),
        min_free_bytes=read.number("SKILL_RUNNER_MIN_FREE_BYTES", 256 * 1024**2, minimum=0),
        sweep_interval_sec=read.number("SKILL_RUNNER_SWEEP_INTERVAL_SEC", 10, float, minimum=0.1),
        kill_grace_sec=read.number("SKILL_RUNNER_KILL_GRACE_SEC", 3, float, minimum=0),
        max_running=read.number("SKILL_RUNNER_MAX_RUNNING", 0, minimum=0),
        max_running_per_engine=per_engine_limits(env),
        limit_retry_sec=read.number("SKILL_RUNNER_LIMIT_RETRY_SEC", 5, float, minimum=0.1),
        engine_upgrade_timeout_sec=read.number(
            "SKILL_RUNNER_ENGINE_UPGRADE_TIMEOUT_SEC", 900, minimum=1
        ),
        run_pool=read.number("SKILL_RUNNER_RUN_POOL", 2, minimum=0),
        snapshot_mode=_snapshot_mode(env.get("SKILL_RUNNER_SNAPSHOT", "link")),
        task_events=read.flag("SKILL_RUNNER_TASK_EVENTS"),
        task_sent_events=read.flag("SKILL_RUNNER_TASK_SENT_EVENTS", default=True),
        events=read.flag("SKILL_RUNNER_EVENTS", default=True),
        broker_view=read.flag("SKILL_RUNNER_BROKER_VIEW", default=True),
        revoke_watch=read.flag("SKILL_RUNNER_REVOKE_WATCH", default=True),
        api_tokens=api_tokens(env.get("SKILL_RUNNER_API_TOKEN", "")),
        tokens_file=Path(env["SKILL_RUNNER_TOKENS_FILE"]).expanduser()
        if env.get("SKILL_RUNNER_TOKENS_FILE", "").strip()
        else None,
        prices_file=prices_file(env.get("SKILL_RUNNER_PRICES_FILE", "")),
        cors_origins=cors_origins(env.get("SKILL_RUNNER_CORS_ORIGINS", "")),
        webhook_hosts=webhook_hosts(env.get("SKILL_RUNNER_WEBHOOK_HOSTS", "")),
        webhook_secret=env.get("SKILL_RUNNER_WEBHOOK_SECRET", ""),
        webhook_retry_sec=read.number("SKILL_RUNNER_WEBHOOK_RETRY_SEC", 3600, minimum=1),
        webhook_backoff_sec=read.number("SKILL_RUNNER_WEBHOOK_BACKOFF_SEC", 2, float, minimum=0),
        demo_llm=env.get(DEMO_LLM_ENV, "").strip(),
        work_dir=Path(env["SKILL_RUNNER_WORK_DIR"]).resolve()
        if env.get("SKILL_RUNNER_WORK_DIR", "").strip()
        else None,
        metrics_dir_setting=Path(env["SKILL_RUNNER_METRICS_DIR"]).resolve()
        if env.get("SKILL_RUNNER_METRICS_DIR", "").strip()
        else None,
        sandbox=_choice(
            "SKILL_RUNNER_SANDBOX", env.get("SKILL_RUNNER_SANDBOX", "auto"), "auto", "off"
        ),
        run_memory_max=read.number("SKILL_RUNNER_RUN_MEMORY_MAX", 4 * 1024**3, minimum=0),
        run_processes_max=read.number("SKILL_RUNNER_RUN_PROCESSES_MAX", 1024, minimum=0),
        run_open_files_max=read.number("SKILL_RUNNER_RUN_OPEN_FILES_MAX", 4096, minimum=0),
        sandbox_bwrap=env.get("SKILL_RUNNER_BWRAP", "").strip(),
        engine_network=_choice(
            "SKILL_RUNNER_ENGINE_NETWORK",
            env.get("SKILL_RUNNER_ENGINE_NETWORK", "box"),
            "box",
            "open",
        ),
        network_on=_choice(
            "SKILL_RUNNER_NETWORK_ON",
            env.get("SKILL_RUNNER_NETWORK_ON", "allow"),
            "allow",
            "forbid",
        ),
        egress_allow=egress_allow(env.get("SKILL_RUNNER_EGRESS_ALLOW", "")),
        run_env_names=_items(env.get("SKILL_RUNNER_RUN_ENV_NAMES", "ZOTERO_BRIDGE_*")),
        bridge_allow=bridge_allow(env.get("SKILL_RUNNER_BRIDGE_ALLOW", "")),
        sandbox_read_paths=tuple(
            Path(p).resolve()
            for p in env.get("SKILL_RUNNER_SANDBOX_READ_PATHS", "").split(os.pathsep)
            if p.strip()
        ),
    )


def _choice(name: str, value: str, *choices: str) -> str:
    chosen = value.strip().lower() or choices[0]
    if chosen not in choices:
        raise SettingsError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return chosen


def _log_format(value: str) -> str:
    fmt = value.strip().lower() or "text"
    if fmt not in ("text", "json"):
        raise SettingsError(f"LOG_FORMAT must be 'text' or 'json', not {value!r}")
    return fmt


def _snapshot_mode(value: str) -> str:
    mode = value.strip().lower() or "link"
    if mode not in ("link", "copy"):
        raise SettingsError(f"SKILL_RUNNER_SNAPSHOT must be 'link' or 'copy', not {value!r}")
    return mode


def hold_service_secrets(settings: Settings) -> None:
    """`secret_values.hold` for a service process: the variables its engine configs name as
    keys too, and the tokens, webhook secret and URL passwords its settings hold."""
    hold(
        configured_key_names(),
        (*settings.api_tokens, settings.webhook_secret, settings.database_url, settings.broker_url),
    )


def _items(text: str) -> tuple[str, ...]:
    """A comma-separated setting's items."""
    return tuple(item.strip() for item in text.split(",") if item.strip())
