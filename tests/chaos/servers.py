"""The chaos test's own Redis and Postgres, which it restarts.

Postgres is a private cluster (initdb into a scratch directory as the `postgres` user, its own
port) restarted for real: `pg_ctl stop -m immediate` is a crash, every connection is cut, and
it answers again only after crash recovery. Without root (no `postgres` user to run it as)
a database of the shared server stands in, and a "restart" is every backend of that database
terminated (pg_terminate_backend) and new connections refused for the same gap (ALLOW_CONNECTIONS
false, then true): what a client sees of a restart, without touching the server others use.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
import redis as redis_lib

from tests.helpers import fill_disk, wait_for


def free_port(first: int) -> int:
    """The first port from `first` up that nothing listens on."""
    for port in range(first, first + 200):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port from {first}")


class RedisServer:
    """A redis-server without persistence: a restart loses every message and key in it."""

    def __init__(self, workdir: Path, first_port: int = 6404) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port(first_port)
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        argv += ["--save", "", "--appendonly", "no", "--dir", str(self.workdir)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self.answers, 10, what="redis answering")

    def answers(self) -> bool:
        try:
            return bool(redis_lib.Redis.from_url(self.url, socket_timeout=1).ping())
        except redis_lib.RedisError:
            return False

    def crash(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        self.crash()


class PrivatePostgres:
    """A Postgres cluster of the test's own, run as the `postgres` user."""

    real = True

    def __init__(self, first_port: int = 55432) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="chaos-pg-"))
        shutil.chown(self.root, "postgres", "postgres")
        self.data = self.root / "data"
        self.port = free_port(first_port)
        self._as_postgres("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
                          "--no-sync", "-E", "UTF8")  # fmt: skip
        self.start()
        admin = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE DATABASE chaos")
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/chaos"

    def _as_postgres(self, *argv: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *argv], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=self.root)  # fmt: skip

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
        options += "-c max_connections=300"  # commits stay durable: a crash keeps them
        self._as_postgres("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"),
                          "-o", options, "-w", "-t", "60", "start")  # fmt: skip

    def outage(self, gap_sec: float) -> None:
        """A crash (immediate stop: connections cut, no checkpoint), down `gap_sec`, started."""
        self._as_postgres("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        time.sleep(gap_sec)  # the outage itself
        self.start()

    def stop(self) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", "pg_ctl", "-D", str(self.data),
                        "-m", "immediate", "stop"], capture_output=True)  # fmt: skip
        shutil.rmtree(self.root, ignore_errors=True)


class SharedPostgresDatabase:
    """A database of its own on the shared server; an outage closes it (see the module doc)."""

    real = False

    def __init__(self, server_url: str) -> None:
        self.server_url = server_url
        self.name = f"chaos_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
        self.url = f"{server_url.rsplit('/', 1)[0]}/{self.name}"

    def outage(self, gap_sec: float) -> None:
        with psycopg.connect(self.server_url, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{self.name}" WITH ALLOW_CONNECTIONS false')
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (self.name,),
            )
            time.sleep(gap_sec)  # the outage itself
            admin.execute(f'ALTER DATABASE "{self.name}" WITH ALLOW_CONNECTIONS true')

    def stop(self) -> None:
        with psycopg.connect(self.server_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def make_postgres(shared_server_url: str) -> PrivatePostgres | SharedPostgresDatabase:
    """The private cluster when this runs as root with the binaries, else the shared stand-in."""
    if os.geteuid() == 0 and shutil.which("initdb") and shutil.which("runuser"):
        try:
            import pwd

            pwd.getpwnam("postgres")
            return PrivatePostgres()
        except (KeyError, subprocess.CalledProcessError):
            pass
    return SharedPostgresDatabase(shared_server_url)


class SmallDisk:
    """A tmpfs mounted on `path` (root only); `mounted` says whether it could be."""

    def __init__(self, path: Path, size_mb: int) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs",
                               str(path)], capture_output=True, text=True)  # fmt: skip
        self.mounted = done.returncode == 0
        self.why_not = done.stderr.strip()
        self.filler = path / "chaos-fill"

    def fill(self) -> None:
        fill_disk(self.filler)

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)
