"""The deterministic step after the agent: complete its draft and write a summary."""

import json
import os
import sys
from pathlib import Path

context = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())
if context["parameter"]["fail"]:
    print("refusing: the parameter fail is set", file=sys.stderr)
    sys.exit(3)
message = Path(os.environ["SKILL_RUNNER_ENGINE_OUTPUT"]).read_text()
draft = json.loads(message[message.index("{") : message.rindex("}") + 1])
text = context["input"]["text"]
result = {
    "text": text,
    "length": len(text),
    "engine": os.environ["SKILL_RUNNER_ENGINE"],
    "draft": draft,
}
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps(result))
artifacts = Path(os.environ["SKILL_RUNNER_ARTIFACTS_DIR"])
made = artifacts / "agent.txt"
summary = f"agent wrote: {made.read_text() if made.exists() else '(nothing)'}\n"
(artifacts / "summary.txt").write_text(summary)
print("summary written")
