"""The tokens of a turn cut short, read from what each CLI wrote before it stopped: its stdout so
far and, where the stream has no counts until the end, its session log in the run's HOME (the
layouts of codex 0.169, claude 2.1 and gemini 0.61, written here in small)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner_core.engines import get_adapter
from runner_core.engines.session_logs import codex_turn_usage, gemini_usage
from tests.helpers import printed

THREAD = "01a22075-9301-78f1-904e-2450faa766df"
SESSION = "9177e162-c2cf-44e3-8338-306876eaaa1a"


def jsonl(*entries: dict[str, Any]) -> str:
    return "".join(json.dumps(entry) + "\n" for entry in entries)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def token_count(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    total = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    return {
        "type": "event_msg",
        "payload": {"type": "token_count", "info": {"total_token_usage": total}},
    }


def codex_rollout(home: Path, *entries: dict[str, Any]) -> Path:
    name = f"sessions/2026/11/28/rollout-2026-11-28T04-41-45-{THREAD}.jsonl"
    return write(home / name, jsonl({"type": "session_meta", "payload": {"id": THREAD}}, *entries))


TURN = {"type": "turn_context", "payload": {"turn_id": "t"}}


def test_codex_counts_the_last_turn_of_its_rollout(tmp_path: Path) -> None:
    home = tmp_path / ".codex-home"
    codex_rollout(
        home,
        TURN,
        token_count(100, 10),
        token_count(250, 20),  # the first turn ended here (a resumed turn follows)
        TURN,
        token_count(400, 31),
        {"type": "event_msg", "payload": {"type": "token_count", "info": None}},
        token_count(600, 45),
    )
    assert codex_turn_usage(home, THREAD) == {"input_tokens": 350, "output_tokens": 25}


def test_codex_cut_short_reads_the_rollout_of_the_thread_it_printed(tmp_path: Path) -> None:
    codex_rollout(tmp_path / ".codex-home", TURN, token_count(300, 12), token_count(700, 30))
    stdout = jsonl({"type": "thread.started", "thread_id": THREAD}, {"type": "turn.started"})
    result = printed(tmp_path, None, stdout, canceled=True, cwd=tmp_path)
    assert get_adapter("codex").parse_output(result).tokens == {
        "input_tokens": 700,
        "output_tokens": 30,
    }


def test_codex_prefers_the_turn_completed_usage(tmp_path: Path) -> None:
    codex_rollout(tmp_path / ".codex-home", TURN, token_count(1, 1))
    usage = {"input_tokens": 20806, "output_tokens": 91}
    stdout = jsonl(
        {"type": "thread.started", "thread_id": THREAD}, {"type": "turn.completed", "usage": usage}
    )
    result = printed(tmp_path, 0, stdout, cwd=tmp_path)
    assert get_adapter("codex").parse_output(result).tokens == usage


def test_a_session_log_reached_through_a_symlink_is_not_read(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    codex_rollout(elsewhere, TURN, token_count(5, 5))
    home = tmp_path / ".codex-home"
    home.mkdir()
    (home / "sessions").symlink_to(elsewhere / "sessions")
    assert codex_turn_usage(home, THREAD) == {}
    assert codex_turn_usage(elsewhere, "../" + THREAD) == {}  # not a session id


def assistant(message_id: str, usage: dict[str, int], **kw: Any) -> dict[str, Any]:
    message = {"id": message_id, "role": "assistant", "content": [], "usage": usage}
    return {"type": "assistant", "session_id": SESSION, "message": message, **kw}


INIT = {"type": "system", "subtype": "init", "session_id": SESSION}


def test_qwen_cut_short_adds_up_each_answer_once(tmp_path: Path) -> None:
    stdout = jsonl(
        INIT,
        assistant("m1", {"input_tokens": 100, "output_tokens": 6}),
        assistant("m2", {"input_tokens": 120, "output_tokens": 7}),
        assistant("m2", {"input_tokens": 120, "output_tokens": 7}),  # one message, two blocks
    )
    result = printed(tmp_path, None, stdout, timed_out=True, cwd=tmp_path)
    assert get_adapter("qwen").parse_output(result).tokens == {
        "input_tokens": 220,
        "output_tokens": 13,
    }


def test_claude_cut_short_takes_each_answer_s_final_usage_from_its_session_log(
    tmp_path: Path,
) -> None:
    log = tmp_path / ".claude-home/.claude/projects/-run" / f"{SESSION}.jsonl"
    earlier = assistant("m0", {"input_tokens": 999, "output_tokens": 99})  # an earlier turn's
    write(
        log,
        jsonl(
            earlier,
            assistant("m1", {"input_tokens": 100, "output_tokens": 38}),
            assistant("m2", {"input_tokens": 150, "output_tokens": 40}),
        ),
    )
    stdout = jsonl(  # the stream carries the counts as each answer started
        INIT,
        assistant("m1", {"input_tokens": 100, "output_tokens": 1}),
        assistant("m2", {"input_tokens": 150, "output_tokens": 1}),
    )
    result = printed(tmp_path, None, stdout, canceled=True, cwd=tmp_path)
    assert get_adapter("claude").parse_output(result).tokens == {
        "input_tokens": 250,
        "output_tokens": 78,
    }


def gemini_message(message_id: str, at: str, tokens: tuple[int, int]) -> dict[str, Any]:
    # as gemini logs them: cached inside input, thoughts (here 2) only in the total
    counts = {"input": tokens[0], "output": tokens[1], "cached": tokens[0] // 4, "thoughts": 2}
    counts["total"] = sum(tokens) + 2
    return {"id": message_id, "timestamp": at, "type": "gemini", "tokens": counts}


def test_gemini_counts_the_messages_logged_since_its_invocation_began(tmp_path: Path) -> None:
    home = tmp_path / ".home"
    write(
        home / ".gemini/tmp/run/chats" / f"session-2026-11-28T04-43-{SESSION[:8]}.jsonl",
        jsonl(
            {"sessionId": SESSION, "kind": "main"},
            {"$set": {"messages": [gemini_message("a", "2026-11-28T04:40:00.000Z", (9, 9))]}},
            gemini_message("b", "2026-11-28T04:43:35.760Z", (100, 5)),
            gemini_message("b", "2026-11-28T04:43:35.760Z", (100, 5)),  # logged again
            gemini_message("c", "2026-11-28T04:43:35.880Z", (130, 6)),
        ),
    )
    assert gemini_usage(home, SESSION, "2026-11-28T04:43:35.563Z") == {
        "input_tokens": 230,
        "output_tokens": 11,
        "cached": 25 + 32,
        "total_tokens": 245,
    }
    stdout = jsonl({"type": "init", "timestamp": "2026-11-28T04:43:35.563Z", "session_id": SESSION})
    result = printed(tmp_path, None, stdout, timed_out=True, cwd=tmp_path)
    assert get_adapter("gemini").parse_output(result).tokens == {
        "input_tokens": 230,
        "output_tokens": 15,  # the thoughts counted in
        "cached_input_tokens": 57,
        "reasoning_tokens": 4,
    }


def test_opencode_cut_short_adds_up_its_finished_steps(tmp_path: Path) -> None:
    def step(tokens: dict[str, int]) -> dict[str, Any]:
        return {"type": "step_finish", "sessionID": "ses_1", "part": {"tokens": tokens}}

    stdout = jsonl(step({"input": 70, "output": 4}), step({"input": 80, "output": 5}))
    result = printed(tmp_path, None, stdout, timed_out=True, cwd=tmp_path)
    assert get_adapter("opencode").parse_output(result).tokens == {
        "input_tokens": 150,
        "output_tokens": 9,
    }


# -- a resumed turn: the CLI's own figure is the session's running total


def test_codex_resumed_turn_counts_its_own_tokens_not_the_thread_s(tmp_path: Path) -> None:
    codex_rollout(tmp_path / ".codex-home", TURN, token_count(250, 20), TURN, token_count(600, 45))
    usage = {"input_tokens": 600, "output_tokens": 45}  # the thread's total, as printed
    stdout = jsonl(
        {"type": "thread.started", "thread_id": THREAD}, {"type": "turn.completed", "usage": usage}
    )
    result = printed(tmp_path, 0, stdout, cwd=tmp_path)
    assert get_adapter("codex").parse_output(result).tokens == {
        "input_tokens": 350,
        "output_tokens": 25,
    }


def test_qwen_resumed_turn_adds_up_its_own_answers_not_the_session_total(tmp_path: Path) -> None:
    result_event = {
        "type": "result", "subtype": "success", "is_error": False, "result": "{}",
        "session_id": SESSION, "usage": {"input_tokens": 500, "output_tokens": 30},
    }  # fmt: skip
    stdout = jsonl(
        INIT,
        assistant("m3", {"input_tokens": 130, "output_tokens": 8}),
        assistant("m4", {"input_tokens": 140, "output_tokens": 9}),
        result_event,
    )
    result = printed(tmp_path, 0, stdout, cwd=tmp_path)
    assert get_adapter("qwen").parse_output(result).tokens == {
        "input_tokens": 270,
        "output_tokens": 17,
    }


def test_claude_resumed_turn_costs_its_own_answers_not_the_session_s(tmp_path: Path) -> None:
    since = {"m": {"inputTokens": 100, "outputTokens": 5, "costUSD": 0.085}}
    result_event = {
        "type": "result", "subtype": "success", "is_error": False, "result": "{}",
        "session_id": SESSION, "usage": {"input_tokens": 100, "output_tokens": 5},
        "total_cost_usd": 0.17, "model_usage_since_last_result": since,
    }  # fmt: skip
    result = printed(tmp_path, 0, jsonl(INIT, result_event), cwd=tmp_path)
    assert get_adapter("claude").parse_output(result).tokens == {
        "input_tokens": 100,
        "output_tokens": 5,
        "cost_usd": 0.085,
    }
    del result_event["model_usage_since_last_result"]  # a CLI that does not print it
    result = printed(tmp_path, 0, jsonl(INIT, result_event), cwd=tmp_path)
    assert (get_adapter("claude").parse_output(result).tokens or {})["cost_usd"] == 0.17
