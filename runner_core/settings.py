"""Service settings read from the environment, with documented defaults.

Both the API and the worker read the same settings so they agree on the database, the
broker and where run directories live.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


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
    repair_rounds: int = 0
    upload_max_bytes: int = 1024 ** 3
    upload_max_entries: int = 10_000
    upload_max_ratio: float = 200.0
    max_request_bytes: int = 16 * 1024 ** 2  # any body but a zip upload
    task_events: bool = False
    run_pool: int = 2  # run directories made ahead per skill version and kind (0: off)
    snapshot_mode: str = "link"  # link: from a read-only copy per skill version; copy: full copies

    def running_limit(self, engine: str | None) -> int:
        """The per-engine maximum of running runs for `engine` (script runs: 'script'); 0 = none."""
        return self.max_running_per_engine.get(engine_key(engine), 0)

    @property
    def runs_dir(self) -> Path:
        return self.data_dir / "runs"

    @property
    def requests_dir(self) -> Path:
        return self.data_dir / "requests"

    @property
    def run_pool_dir(self) -> Path:
        return self.data_dir / "run-pool"

    @property
    def skill_copies_dir(self) -> Path:
        return self.data_dir / "skill-copies"

    @property
    def broker_socket(self) -> Path:
        return self.data_dir / "broker" / "redis.sock"


def engine_key(engine: str | None) -> str:
    """The concurrency key of a run: its engine, or 'script' for script skills."""
    return (engine or "script").lower()


def per_engine_limits(env: dict[str, str]) -> dict[str, int]:
    """SKILL_RUNNER_MAX_RUNNING_<ENGINE>=N (e.g. _CODEX, _SCRIPT) -> {"codex": N, ...}."""
    prefix = "SKILL_RUNNER_MAX_RUNNING_"
    return {key[len(prefix):].lower(): int(value) for key, value in env.items()
            if key.startswith(prefix) and value.strip()}


def load_settings(env: dict[str, str] | None = None) -> Settings:
    """Build Settings from `env` (default: os.environ)."""
    env = dict(os.environ if env is None else env)
    data_dir = Path(env.get("SKILL_RUNNER_DATA_DIR", "./data")).resolve()
    skills_dir = Path(env.get("SKILL_RUNNER_SKILLS_DIR", "./skills")).resolve()
    database_url = env.get("DATABASE_URL") or f"sqlite:///{data_dir / 'runs.db'}"
    broker_url = env.get("CELERY_BROKER_URL", "")
    embedded = not broker_url
    if embedded:
        broker_url = f"redis+socket://{data_dir / 'broker' / 'redis.sock'}"
    return Settings(
        data_dir=data_dir,
        skills_dir=skills_dir,
        database_url=database_url,
        broker_url=broker_url,
        embedded_broker=embedded,
        host=env.get("HOST", "127.0.0.1"),
        port=int(env.get("PORT", "8000")),
        log_level=env.get("LOG_LEVEL", "INFO").upper(),
        log_file=env.get("LOG_FILE") or None,
        log_max_bytes=int(env.get("LOG_MAX_BYTES", str(5 * 1024 * 1024))),
        log_backup_count=int(env.get("LOG_BACKUP_COUNT", "5")),
        default_timeout_sec=int(env.get("SKILL_RUNNER_DEFAULT_TIMEOUT_SEC", "600")),
        max_timeout_sec=int(env.get("SKILL_RUNNER_MAX_TIMEOUT_SEC", "3600")),
        queue_max=int(env.get("SKILL_RUNNER_QUEUE_MAX", "1000")),
        sweep_grace_sec=int(env.get("SKILL_RUNNER_SWEEP_GRACE_SEC", "30")),
        lease_sec=int(env.get("SKILL_RUNNER_LEASE_SEC", "60")),
        repair_rounds=int(env.get("SKILL_RUNNER_REPAIR_ROUNDS", "0")),
        upload_max_bytes=int(env.get("SKILL_RUNNER_UPLOAD_MAX_BYTES", str(1024 ** 3))),
        upload_max_entries=int(env.get("SKILL_RUNNER_UPLOAD_MAX_ENTRIES", "10000")),
        upload_max_ratio=float(env.get("SKILL_RUNNER_UPLOAD_MAX_RATIO", "200")),
        max_request_bytes=int(env.get("SKILL_RUNNER_MAX_REQUEST_BYTES", str(16 * 1024 ** 2))),
        sweep_interval_sec=float(env.get("SKILL_RUNNER_SWEEP_INTERVAL_SEC", "10")),
        kill_grace_sec=float(env.get("SKILL_RUNNER_KILL_GRACE_SEC", "3")),
        max_running=int(env.get("SKILL_RUNNER_MAX_RUNNING", "0")),
        max_running_per_engine=per_engine_limits(env),
        limit_retry_sec=float(env.get("SKILL_RUNNER_LIMIT_RETRY_SEC", "5")),
        run_pool=int(env.get("SKILL_RUNNER_RUN_POOL", "2")),
        snapshot_mode=_snapshot_mode(env.get("SKILL_RUNNER_SNAPSHOT", "link")),
        task_events=env.get("SKILL_RUNNER_TASK_EVENTS", "0").strip().lower() in ("1", "true", "yes"),
    )


def _snapshot_mode(value: str) -> str:
    mode = value.strip().lower() or "link"
    if mode not in ("link", "copy"):
        raise ValueError(f"SKILL_RUNNER_SNAPSHOT must be 'link' or 'copy', not {value!r}")
    return mode
