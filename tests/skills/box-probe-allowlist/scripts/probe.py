"""Connect to `target` (host:port) from inside the run's box, directly or through the box's
HTTPS_PROXY, and print what happened as JSON."""

import json
import os
import socket
from pathlib import Path

given = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())["input"]
action, target = given["action"], given["target"]
host, port = target.rsplit(":", 1)
try:
    if action == "connect":
        with socket.create_connection((host, int(port)), timeout=5) as conn:
            conn.settimeout(5)
            outcome, detail = "connected", conn.recv(64).decode(errors="replace")
    else:  # proxy_connect
        proxy_host, proxy_port = os.environ["HTTPS_PROXY"].rsplit("/", 1)[-1].rsplit(":", 1)
        with socket.create_connection((proxy_host, int(proxy_port)), timeout=5) as conn:
            conn.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
            outcome = "answered"
            detail = conn.recv(256).decode(errors="replace").split("\r\n")[0]
except (OSError, KeyError) as exc:
    outcome, detail = "refused", repr(exc)
print(json.dumps({"action": action, "outcome": outcome, "detail": detail}))
