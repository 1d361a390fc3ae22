"""Network namespaces lent to boxes cut from the network (runner_core/netns.py): a box has its
own loopback and not the host's, two boxes at once never share one, one lent again holds
nothing of the box before, and the spawning thread stays in its own."""

from __future__ import annotations

import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from runner_core import netns
from runner_core.engines.base import CommandSpec
from runner_core.sandbox import Box, Limits, find_bwrap, plan_box
from runner_core.skills.model import Automation
from worker.execution import supervisor
from worker.execution.supervisor import Watch, run_command

LIMITS = Limits(memory_bytes=2**30, processes=64, open_files=256)
# prints its namespace, then whether its own loopback works and the host's port answers
PROBE = """
import os, socket, sys
print(os.readlink("/proc/self/ns/net"))
own = socket.create_server(("127.0.0.1", 0))
socket.create_connection(own.getsockname(), timeout=2).close()
print("own loopback ok")
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
    print("host port reached")
except OSError as exc:
    print("host port:", type(exc).__name__)
"""


@pytest.fixture
def namespaces(monkeypatch) -> netns.Namespaces:
    """The worker's lender, fresh for the test."""
    if os.geteuid() != 0:
        pytest.skip("entering a network namespace needs root (elsewhere boxes make their own)")
    if find_bwrap() is None:
        pytest.fail("bubblewrap must work here: deploy/install-sandbox.sh installs it")
    lender = netns.Namespaces()
    monkeypatch.setattr(supervisor, "NAMESPACES", lender)
    return lender


@pytest.fixture
def host_port():
    """A port listening on the host's loopback."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def boxed(tmp_path: Path, name: str, argv: list[str]) -> list[str]:
    run = tmp_path / "runs" / name
    run.mkdir(parents=True)
    box = plan_box("auto", LIMITS, run, Automation(network="off"))
    assert box is not None and box.cuts_network
    spec = CommandSpec(argv, run, {"PATH": "/usr/bin:/bin"})
    result = run_command(spec, run / "out.txt", run / "err.txt", Watch(box=box))
    assert result.exit_code == 0, (run / "err.txt").read_text()
    return (run / "out.txt").read_text().splitlines()


def probe(tmp_path: Path, name: str, port: int) -> list[str]:
    return boxed(tmp_path, name, [sys.executable, "-I", "-S", "-c", PROBE, str(port)])


def ns_of_thread() -> str:
    return os.readlink("/proc/thread-self/ns/net")


def test_a_box_has_its_own_loopback_in_a_lent_namespace_and_not_the_hosts(
    tmp_path, namespaces, host_port
):
    host = ns_of_thread()
    inside, *rest = probe(tmp_path, "r1", host_port)
    assert rest == ["own loopback ok", "host port: ConnectionRefusedError"]
    assert inside != host and ns_of_thread() == host
    (lent,) = namespaces._free  # made for this box, and free again now
    assert inside == f"net:[{os.fstat(lent).st_ino}]"


def test_a_namespace_lent_again_holds_nothing_of_the_box_before(tmp_path, namespaces):
    # the first box leaves a listener behind, detached from its command, on a known port
    leave = (
        "import os, socket, sys, time\n"
        "server = socket.create_server(('127.0.0.1', 0))\n"
        "print(os.readlink('/proc/self/ns/net'), server.getsockname()[1], flush=True)\n"
        "if os.fork() == 0:\n"
        "    os.setsid(); time.sleep(30)\n"
    )
    first, port = boxed(tmp_path, "r1", [sys.executable, "-I", "-S", "-c", leave])[0].split()
    inside, *rest = probe(tmp_path, "r2", int(port))
    assert inside == first  # the same namespace, lent again
    assert rest == ["own loopback ok", "host port: ConnectionRefusedError"]


def test_two_boxes_at_once_never_share_a_namespace(tmp_path, namespaces):
    seen: dict[str, str] = {}
    start = threading.Barrier(2)

    def one(name: str) -> None:
        start.wait()
        seen[name] = boxed(
            tmp_path, name, ["/bin/sh", "-c", "readlink /proc/self/ns/net; sleep 1"]
        )[0]

    threads = [threading.Thread(target=one, args=(name,)) for name in ("r1", "r2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(seen.values())) == 2 and ns_of_thread() not in seen.values()
    assert len(namespaces._free) == 2


def test_the_spawning_thread_is_back_in_its_own_namespace_when_the_spawn_fails(
    tmp_path, namespaces
):
    host = ns_of_thread()
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    box = Box(LIMITS, bwrap=str(tmp_path / "no-bwrap"), run_dir=run, network=False)
    spec = CommandSpec(["true"], run, {})
    result = run_command(spec, run / "out.txt", run / "err.txt", Watch(box=box))
    assert result.exit_code == 127 and "cannot start" in (run / "err.txt").read_text()
    assert ns_of_thread() == host and len(namespaces._free) == 1
    with socket.create_server(("127.0.0.1", 0)):  # this thread still has the host's network
        pass


def test_without_a_namespace_to_lend_a_box_makes_its_own(
    tmp_path, namespaces, host_port, monkeypatch
):
    monkeypatch.setattr(netns, "_can_enter", lambda: False)  # not root, or green threads
    host = ns_of_thread()
    inside, *rest = probe(tmp_path, "r1", host_port)
    assert rest == ["own loopback ok", "host port: ConnectionRefusedError"]
    assert inside != host and namespaces._free == []


def test_a_forked_process_never_lends_its_parents_namespaces(namespaces):
    with namespaces.lease() as fd:
        parent = os.fstat(fd).st_ino
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the namespace it is lent
        try:
            with namespaces.lease() as fd:
                os.write(write, str(os.fstat(fd).st_ino).encode())
        finally:
            os._exit(0)
    os.close(write)
    child = int(os.read(read, 64))
    os.close(read)
    os.waitpid(pid, 0)
    assert child != parent
    with namespaces.lease() as fd:  # the parent's own is still lent to the parent
        assert os.fstat(fd).st_ino == parent
