"""Try `action` on `target` from inside the run's box and print what happened as JSON."""

import json
import os
import socket
import time
from pathlib import Path

given = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())["input"]
action, target = given["action"], given.get("target", "")


def report(outcome: str, detail: str = "") -> None:
    print(json.dumps({"action": action, "outcome": outcome, "detail": detail}))


if action == "fork_bomb":
    while True:
        try:
            os.fork()
        except OSError:
            pass
elif action == "allocate":  # target: GiB, touched so it is real memory
    block = bytearray(int(target) * 1024**3)
    report("allocated", str(len(block)))
elif action == "connect":  # target: host:port
    host, port = target.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
        report("connected")
    except OSError as exc:
        report("refused", str(exc))
elif action == "write":  # target: a file path
    try:
        Path(target).write_text("escaped")
        report("written")
    except OSError as exc:
        report("refused", str(exc))
elif action == "list":  # target: a folder
    try:
        report("listed", "|".join(sorted(os.listdir(target))))
    except OSError as exc:
        report("refused", str(exc))
elif action == "sleep":
    time.sleep(float(target))
    report("slept")
else:
    report("ok", os.environ.get("SKILL_RUNNER_RUN_DIR", ""))
