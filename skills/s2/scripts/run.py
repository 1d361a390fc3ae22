"""s2: reads the run's input, writes the result file (see docs/skills.md, Script skills)."""

import json
import os
from pathlib import Path

run_input = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())
text = run_input["input"]["text"]
result = {"summary": text.strip().split(".")[0][:200], "words": len(text.split())}
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps(result))

art = Path(os.environ.get("SKILL_RUNNER_RUN_DIR", ".")) / "artifacts"
art.mkdir(exist_ok=True)
for name in ["odd #1?%20ü.md", "sub dir/x&y=z.txt", "..hidden", "a%2F..%2Fb.md"]:
    (art / name).parent.mkdir(parents=True, exist_ok=True)
    (art / name).write_text(name)
