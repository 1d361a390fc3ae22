"""Wait, then print a tick line at a steady pace, then the result."""

import json
import os
import time

params = json.loads(open(os.environ["SKILL_RUNNER_INPUT_FILE"]).read()).get("parameter", {})
time.sleep(float(params.get("wait_sec", 3)))
for n in range(int(params.get("ticks", 50))):
    print(f"tick {n}", flush=True)
    time.sleep(float(params.get("tick_sec", 0.2)))
print(json.dumps({"ok": True}))
