import json
import os
from pathlib import Path

text = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())["input"]["text"]
print("Here is the result you asked for:\n```json")
print(json.dumps({"text": text, "length": len(text)}, indent=2).replace("\n}", ",\n}"))
print("```\nDone.")
