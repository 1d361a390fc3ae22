"""runner_core.store.memory on an in-memory SQLite database: terms, scoring, snippets, owners
kept apart, limits refused with a reason."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from runner_core.store import memory
from runner_core.store.models import Base

ALICE = memory.Scope(owner="alice", session_id="s1", skill_id="memory_store")
BOB = memory.Scope(owner="bob", session_id="s1", skill_id="memory_store")


@pytest.fixture
def session():
    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        yield session


def test_terms_are_words_and_cjk_character_pairs():
    assert memory.search_terms("Queue, RUNS queue") == ["queue", "runs"]
    assert memory.search_terms("工作队列 redis") == ["工作", "作队", "队列", "redis"]
    assert memory.search_terms("队列") == ["队列"]
    assert memory.search_terms("  ...  ") == []


def test_a_snippet_starts_near_the_first_hit_and_names_its_lines():
    text = "line one\n" * 40 + "the needle here\nafter"
    cut, first, last = memory.snippet(text, ["needle"])
    assert "the needle here" in cut and len(cut) <= memory.SNIPPET
    assert first == text.count("\n", 0, text.find(cut)) + 1 and last == 42


def test_owners_do_not_see_each_other_s_entries(session):
    memory.store(session, ALICE, "alice likes tea", key="drink")
    memory.store(session, BOB, "bob likes coffee", key="drink")
    assert memory.get(session, ALICE, "drink")["text"] == "alice likes tea"
    assert [r["snippet"] for r in memory.search(session, BOB, "likes")] == ["bob likes coffee"]
    assert memory.forget(session, ALICE, "drink") == {"forgotten": True}
    assert memory.get(session, BOB, "drink") is not None
    assert memory.forget(session, ALICE, "drink") == {"forgotten": False}


def test_search_ranks_by_terms_held_and_escapes_like_wildcards(session):
    memory.store(session, ALICE, "a queue of runs", key="both")
    memory.store(session, ALICE, "runs only", key="one")
    memory.store(session, ALICE, "100% sure", key="percent")
    assert [(r["key"], r["score"]) for r in memory.search(session, ALICE, "queue runs")] == [
        ("both", 2),
        ("one", 1),
    ]
    assert [r["key"] for r in memory.search(session, ALICE, "0%")] == ["percent"]
    assert memory.search(session, ALICE, "% _") == []  # wildcards match only themselves
    assert len(memory.search(session, ALICE, "runs", limit=1)) == 1


def test_a_stored_key_is_replaced_and_entries_are_listed_newest_first(session):
    memory.store(session, ALICE, "v1", key="k", meta={"path": "a.md"})
    memory.store(session, ALICE, "other", key="o")
    memory.store(session, ALICE, "v2", key="k")
    listed = memory.entries(session, ALICE)
    assert [(e["key"], e["text"]) for e in listed] == [("k", "v2"), ("o", "other")]
    assert listed[0]["meta"] == {}  # the new write's meta, not the old one's


def test_refusals_say_what_was_wrong(session):
    with pytest.raises(memory.Refused, match="text must be a string"):
        memory.store(session, ALICE, 42)
    with pytest.raises(memory.Refused, match="longer than"):
        memory.store(session, ALICE, "x" * (memory.MAX_TEXT + 1))
    with pytest.raises(memory.Refused, match="memory key"):
        memory.get(session, ALICE, "")
    with pytest.raises(memory.Refused, match="limit must be a positive number"):
        memory.search(session, ALICE, "x", limit=0)
    with pytest.raises(memory.Refused, match="role must be"):
        memory.append(session, ALICE, "User Role", "hi")


def test_the_entry_limit_holds_per_owner(session, monkeypatch):
    monkeypatch.setattr(memory, "MAX_ENTRIES", 2)
    memory.store(session, ALICE, "one")
    memory.store(session, ALICE, "two", key="two")
    memory.store(session, ALICE, "two again", key="two")  # a replacement is no new entry
    with pytest.raises(memory.Refused, match="ctx.memory is full"):
        memory.store(session, ALICE, "three")
    memory.store(session, BOB, "bob's first")


def test_a_session_keeps_its_messages_in_order_and_the_last_ones_on_a_limit(session):
    other = memory.Scope(owner="alice", session_id="s2", skill_id="x")
    for text in ("one", "two", "three"):
        memory.append(session, ALICE, "user", text)
    memory.append(session, other, "assistant", "elsewhere")
    assert [m["content"] for m in memory.history(session, ALICE)] == ["one", "two", "three"]
    assert [m["content"] for m in memory.history(session, ALICE, limit=2)] == ["two", "three"]
    assert memory.clear(session, ALICE) == {"removed": 3}
    assert memory.history(session, ALICE) == []
    assert [m["content"] for m in memory.history(session, other)] == ["elsewhere"]
