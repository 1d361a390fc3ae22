"""Test hosts made of Linux namespaces (root only): each host is a network namespace on one
private bridge, with its own host name and mount namespace for what it runs. The machine the
tests run on is one more host on that bridge (the "database host"): Redis listens on its bridge
address, and Postgres is relayed there from its loopback port."""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

_networks = itertools.count()


def ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


class Network:
    """A bridge in a namespace of its own, joined by this machine and by each Host."""

    def __init__(self) -> None:
        tag = (os.getpid() * 10 + next(_networks)) % 100_000  # names of its own per network
        self.prefix = f"sr{tag}"
        self.subnet = f"10.213.{tag % 250}"
        self.lan = f"{self.prefix}-lan"
        self.address = f"{self.subnet}.254"  # this machine on the bridge
        self.hosts: list[Host] = []
        ip("netns", "add", self.lan)
        ip("-n", self.lan, "link", "add", "br0", "type", "bridge")
        ip("-n", self.lan, "link", "set", "br0", "up")
        self._join(None, self.address, f"{self.prefix}h")

    def _join(self, netns: str | None, address: str, name: str) -> None:
        """A veth pair: one end `name` in `netns` (None: this machine) with `address`, the
        other on the bridge."""
        ip("link", "add", name, "type", "veth", "peer", "name", f"{name}b")
        ip("link", "set", f"{name}b", "netns", self.lan)
        ip("-n", self.lan, "link", "set", f"{name}b", "master", "br0", "up")
        if netns:
            ip("link", "set", name, "netns", netns)
        where = ["-n", netns] if netns else []
        ip(*where, "addr", "add", f"{address}/24", "dev", name)
        ip(*where, "link", "set", name, "up")

    def host(self, name: str, number: int) -> Host:
        netns = f"{self.prefix}-{name}"
        ip("netns", "add", netns)
        ip("-n", netns, "link", "set", "lo", "up")
        self._join(netns, f"{self.subnet}.{number}", f"{self.prefix}{number}")
        host = Host(name, netns, f"{self.subnet}.{number}")
        self.hosts.append(host)
        return host

    def close(self) -> None:
        for host in self.hosts:
            host.power_off()
        for netns in [h.netns for h in self.hosts] + [self.lan]:
            subprocess.run(["ip", "netns", "del", netns], capture_output=True)
        subprocess.run(["ip", "link", "del", f"{self.prefix}h"], capture_output=True)


class Host:
    """A network namespace with its own host name; commands run in a mount namespace of their
    own, so a host can mount the shared directory where its layout wants it."""

    def __init__(self, name: str, netns: str, address: str) -> None:
        self.name, self.netns, self.address = name, netns, address
        self.procs: list[subprocess.Popen] = []

    def start(
        self,
        argv: Sequence[str],
        env: dict[str, str],
        log: Path,
        cwd: Path,
        binds: Sequence[tuple[Path, Path]] = (),
    ) -> subprocess.Popen:
        """Run `argv` on this host; `binds` are (source, mount point) bind mounts it sees."""
        mounts = "".join(f'mount --bind "{src}" "{dst}" && ' for src, dst in binds)
        script = f'hostname "{self.name}" && {mounts}exec "$@"'
        for _, dst in binds:
            dst.mkdir(parents=True, exist_ok=True)
        out = log.open("ab")
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, "unshare", "--uts", "--mount",
             "sh", "-c", script, "sh", *argv],
            env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        out.close()
        self.procs.append(proc)
        return proc

    def pids(self) -> list[int]:
        done = subprocess.run(["ip", "netns", "pids", self.netns], capture_output=True, text=True)
        return [int(p) for p in done.stdout.split()]

    def power_off(self) -> None:
        """SIGKILL every process in the host's network namespace, as a host that dies."""
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in self.procs:
            proc.wait(10)


class Relay:
    """TCP relay from (host, port) on this machine to a loopback service (Postgres here listens
    on loopback only); one thread per connection direction."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int]) -> None:
        self.target = target
        self.server = socket.create_server(listen)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.server.close()
