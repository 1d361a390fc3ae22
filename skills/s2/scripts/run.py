"""s2: reads the run's input, writes the result file (see docs/skills.md, Script skills)."""

import json
import os
from pathlib import Path

run_input = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())
text = run_input["input"]["text"]
result = {"summary": text.strip().split(".")[0][:200], "words": len(text.split())}
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps(result))
