"""Inside a run's network box: the only way out. Started by bwrap in the box's own network
namespace (only its loopback) in front of the engine CLI:

    python -I -S egress_forward.py SOCKET PROXY_PORT [DIRECT_PORT ...] -- ARGV...

binds 127.0.0.1:PROXY_PORT (the CLI's HTTP(S)_PROXY) and each 127.0.0.1:DIRECT_PORT (a provider
on the host's loopback, such as a local model server, reached without a proxy), forks a child
that relays every connection to the worker's egress proxy on the unix SOCKET bound into the box
(a direct port first asks it for `CONNECT 127.0.0.1:PORT`), and execs ARGV. The child ends with
the box (its pid namespace). Standard library only: it runs with the service's interpreter in
isolated mode, before anything of the service is importable.
"""

from __future__ import annotations

import os
import socket
import sys
import threading

CHUNK = 65536


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _relay(client: socket.socket, socket_path: str, direct_port: int | None) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
        if direct_port is not None:
            target = f"127.0.0.1:{direct_port}"
            upstream.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head and len(head) < CHUNK:
                data = upstream.recv(CHUNK)
                if not data:
                    raise OSError("the egress proxy closed the connection")
                head += data
            if head.split(b" ", 2)[1:2] != [b"200"]:
                raise OSError("refused by the egress proxy")
            rest = head.split(b"\r\n\r\n", 1)[1]
            if rest:
                client.sendall(rest)
        back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        back.start()
        _pump(client, upstream)
        back.join()
    except OSError:
        pass
    finally:
        client.close()
        upstream.close()


def _serve(listener: socket.socket, socket_path: str, direct_port: int | None) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(
            target=_relay, args=(client, socket_path, direct_port), daemon=True
        ).start()


def _listen(port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    return listener


def main(argv: list[str]) -> int:
    if "--" not in argv or len(argv) < 3:
        print("usage: egress_forward.py SOCKET PROXY_PORT [PORT ...] -- ARGV", file=sys.stderr)
        return 2
    split = argv.index("--")
    socket_path, ports, command = argv[0], [int(p) for p in argv[1:split]], argv[split + 1 :]
    # bound before the fork: they accept from the moment ARGV starts
    listeners = [(_listen(port), None if i == 0 else port) for i, port in enumerate(ports)]
    if os.fork() == 0:  # ends with the box's pid namespace (or the run's process group)
        threads = [
            threading.Thread(target=_serve, args=(sock, socket_path, direct), daemon=True)
            for sock, direct in listeners
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        os._exit(0)
    for sock, _ in listeners:
        sock.close()
    try:
        os.execvp(command[0], command)
    except OSError as exc:  # as the supervisor says it when no box is around the command
        print(f"cannot start {command[0]}: {exc}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
