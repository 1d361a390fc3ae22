"""The demo LLM's script (fake_llm.demo): a session chosen per skill, and the programs its
tool calls run, executed here the way an agent CLI's shell runs them."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from fake_llm import FakeLLM
from fake_llm.demo import NO_SESSION, SESSIONS, demo_script, session_command
from fake_llm.script import Conversation, Script, render_final_text


def ask(llm: FakeLLM, text: str) -> str:
    """The answer of the server to a one-message chat request."""
    body = json.dumps({"messages": [{"role": "user", "content": text}]}).encode()
    request = urllib.request.Request(f"{llm.base_url}/v1/chat/completions", data=body)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=5) as resp:
        return json.loads(resp.read())["choices"][0]["message"]["content"]


def run_session(skill: str, run_dir: Path, resolved: dict) -> str:
    (run_dir / "resolved_input.json").write_text(json.dumps(resolved))
    command = session_command(SESSIONS[skill]).replace("python3 -", f"{sys.executable} -", 1)
    done = subprocess.run(
        ["bash", "-c", command], cwd=run_dir, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_a_session_is_chosen_by_the_skill_named_in_the_request(tmp_path):
    path = tmp_path / "script.json"
    path.write_text(json.dumps(demo_script()))
    script = Script.load(path)
    echo = script.for_request("Use the skill named 'demo-echo' (Echo a text...)")
    zotero = script.for_request("Use the skill named 'zotero-parse-attachment' (...)")
    other = script.for_request("Use the skill named 'my-skill' (...)")
    assert echo.tool and '"""demo-echo, as the demo LLM plays it' in echo.command
    assert zotero.tool and "zotero-parse-attachment" in zotero.command
    assert other.tool is False and other.final_text == NO_SESSION
    with FakeLLM(path) as llm:  # the server reads the file and plays the matching session
        assert ask(llm, "Use the skill named 'my-skill'") == NO_SESSION


def test_final_text_can_quote_the_last_line_the_command_printed():
    convo = Conversation({}, True, 'Exit code: 0\nOutput:\n{"a": 1}\n\n')
    assert render_final_text(Script(final_text="$tool_output_last_line"), convo) == '{"a": 1}'


@pytest.mark.parametrize("skill", SESSIONS)
def test_session_commands_hold_nothing_gemini_refuses(skill):
    command = session_command(SESSIONS[skill])
    for banned in ("`", "$(", "<(", ">("):
        assert banned not in command, banned


def test_the_echo_session_answers_for_the_runs_input(tmp_path):
    out = run_session("demo-echo", tmp_path, {"input": {"text": " A  b "}, "parameter": {}})
    expected = {
        "text": " A  b ",
        "length": 6,
        "normalized": True,
        "normalized_text": "a b",
        "warnings": ["the text has leading or trailing whitespace"],
    }
    assert json.loads(out) == expected
    assert json.loads((tmp_path / "result" / "result.json").read_text()) == expected
    assert "2 words" in (tmp_path / "artifacts" / "notes.md").read_text()


def test_the_zotero_session_reads_the_attachment_and_orders_its_files(tmp_path):
    paper = tmp_path / "uploads" / "attachment_path.txt"
    paper.parent.mkdir()
    paper.write_text("Deep Nets\n\nDeep nets learn features. Features help. A third. A fourth.\n")
    resolved = {
        "input": {"attachment_path": str(paper), "item_key": "ABCD1234"},
        "parameter": {"output_format": "json"},
    }
    result = json.loads(run_session("zotero-parse-attachment", tmp_path, resolved))
    assert result["title"] == "Deep Nets"
    assert result["summary"] == "Deep nets learn features. Features help. A third."
    assert result["tags"] == ["deep", "nets", "features", "learn", "help"]  # most frequent
    assert [a["role"] for a in result["attachments"]] == ["parsed", "notes"]
    parsed = json.loads((tmp_path / "artifacts" / "parsed.json").read_text())
    assert parsed["item_key"] == "ABCD1234" and parsed["title"] == "Deep Nets"
    assert (tmp_path / "artifacts" / "notes.md").read_text().startswith("# Deep Nets\n")


def test_the_choose_summary_session_asks_then_finishes_with_the_users_choice(tmp_path):
    from runner_core.interaction import parse_question, reply_prompt

    text = "Transformers replaced recurrence. They train faster on long sequences of tokens."
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "prompt.txt").write_text("Use the skill named 'demo-choose-summary'")
    (tmp_path / "input.json").write_text(
        json.dumps({"runtime_options": {"execution_mode": "interactive"}})
    )
    resolved = {"input": {"text": text}, "parameter": {}}
    out = run_session("demo-choose-summary", tmp_path, resolved).strip().splitlines()[-1]
    question, warning = parse_question(out)
    assert warning is None and question.kind == "choose_one"
    assert [o["value"] for o in question.options] == ["1", "2", "3"]
    assert not (tmp_path / "result" / "result.json").exists()
    with (tmp_path / "logs" / "prompt.txt").open("a") as fh:  # as the runner appends turn 2
        fh.write("\n\n--- turn 2 ---\n" + reply_prompt({"prompt": question.prompt}, "2"))
    final = json.loads(run_session("demo-choose-summary", tmp_path, resolved))
    assert final["__SKILL_DONE__"] is True
    assert final["chosen"] == "2" and final["chosen_by"] == "user"
    assert final["summary"] == question.options[1]["label"].split(": ", 1)[1]
    saved = json.loads((tmp_path / "result" / "result.json").read_text())
    assert saved == {k: v for k, v in final.items() if k != "__SKILL_DONE__"}


def test_the_choose_summary_session_decides_itself_in_auto_mode(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "prompt.txt").write_text("Use the skill named 'demo-choose-summary'")
    (tmp_path / "input.json").write_text(json.dumps({"runtime_options": {}}))
    resolved = {"input": {"text": "One sentence here. Another one."}, "parameter": {}}
    final = json.loads(run_session("demo-choose-summary", tmp_path, resolved))
    assert final["chosen_by"] == "agent" and final["summary"] == "One sentence here."


def test_the_last_printed_line_skips_what_the_cli_wraps_around_the_output():
    from fake_llm.script import last_printed_line

    gemini = '<untrusted_context>\nOutput: {"a": 1}\nExit Code: 0\nProcess Group PGID: 7\n</untrusted_context>'
    assert last_printed_line(gemini) == '{"a": 1}'
    asked = "Exit code: 0\nOutput:\n<ASK_USER_YAML>{}</ASK_USER_YAML>\n"
    assert last_printed_line(asked) == "<ASK_USER_YAML>{}</ASK_USER_YAML>"
    assert last_printed_line("plain words\n</wrapper>\n") == "plain words"
