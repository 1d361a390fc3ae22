"""The run form the UI draws from a skill's schemas: a property given by a local `$ref` gets
the widget of what it refers to, as the API validates it."""

from __future__ import annotations

import json
import re
from pathlib import Path

SKILL = "ref-form"
PARAMETER = {
    "type": "object",
    "$defs": {
        "mode": {"type": "string", "enum": ["fast", "careful"], "default": "careful"},
        "count": {"type": "integer", "minimum": 1, "default": 3},
    },
    "properties": {"mode": {"$ref": "#/$defs/mode"}, "count": {"$ref": "#/$defs/count"}},
}


def write_skill(skills_dir: Path) -> None:
    root = skills_dir / SKILL
    (root / "assets").mkdir(parents=True)
    (root / "SKILL.md").write_text(f'---\nname: {SKILL}\ndescription: "A form."\n---\n')
    manifest = {
        "id": SKILL,
        "version": "1.0.0",
        "execution_modes": ["auto"],
        "entrypoint": {"type": "script", "script": {"command": "python run.py"}},
        "schemas": {
            "input": "assets/input.schema.json",
            "parameter": "assets/parameter.schema.json",
            "output": "assets/output.schema.json",
        },
    }
    (root / "assets" / "runner.json").write_text(json.dumps(manifest))
    (root / "assets" / "input.schema.json").write_text('{"type": "object", "properties": {}}')
    (root / "assets" / "parameter.schema.json").write_text(json.dumps(PARAMETER))
    (root / "assets" / "output.schema.json").write_text('{"type": "object"}')


def test_a_property_by_ref_gets_the_widget_of_what_it_refers_to(settings, client):
    write_skill(settings.skills_dir)
    page = client.get(f"/ui/skills/{SKILL}").get_data(as_text=True)
    assert '<select id="f-parameter-mode"' in page  # an enum: a list, not JSON text
    assert '<option value="&#34;careful&#34;" selected>careful</option>' in page
    count = re.search(r'<input[^>]*id="f-parameter-count"[^>]*>', page)[0]
    assert 'type="number"' in count and 'value="3"' in count and 'min="1"' in count
