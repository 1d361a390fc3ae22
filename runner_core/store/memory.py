"""openEvo's `ctx.memory` and `ctx.session`, kept in the service's database.

Memory is an owner's (a token name's; "" without tokens) long-term store, shared by that
owner's skills as the seed's memory_store and memory_search share it: entries of text under a
key, found by `search` (the query's words, and for Chinese or Japanese text its character
pairs, counted in each entry). A session is a conversation's messages in the order appended,
named by the client (`runtime_options.session_id`) or else the root run's request.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session

from runner_core.store.models import MemoryEntry, SessionMessage, utcnow

MAX_TEXT = 64 * 1024  # characters of one entry or message
MAX_KEY = 255
MAX_ENTRIES = 10_000  # per owner
MAX_RESULTS = 100  # search and list
MAX_HISTORY = 1000
MAX_TERMS = 32
SNIPPET = 240  # characters around the first hit
CANDIDATES = 5000  # entries scored per search, the newest first
ROLE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


class Refused(ValueError):
    """A request the store refuses; its message is what the skill's ctx call raises."""


@dataclass(frozen=True)
class Scope:
    """Whose memory and which conversation a run's ctx reaches."""

    owner: str
    session_id: str
    skill_id: str


def search_terms(query: str) -> list[str]:
    """The query's words, lowercased; a run of CJK characters gives its character pairs (the
    text has no spaces between words); at most MAX_TERMS, each once, in order."""
    terms: list[str] = []
    for word in _WORD.findall(query.lower()):
        if _CJK.search(word) and len(word) > 2:
            terms += [word[i : i + 2] for i in range(len(word) - 1)]
        else:
            terms.append(word)
    return list(dict.fromkeys(terms))[:MAX_TERMS]


def score(text: str, terms: list[str]) -> int:
    """How many of the terms the text holds."""
    lowered = text.lower()
    return sum(1 for term in terms if term in lowered)


def snippet(text: str, terms: list[str]) -> tuple[str, int, int]:
    """The text around its first hit, and the first and last line it spans (1-based)."""
    lowered = text.lower()
    hits = [i for i in (lowered.find(t) for t in terms) if i >= 0]
    at = min(hits) if hits else 0
    start = max(0, at - SNIPPET // 3)
    end = min(len(text), start + SNIPPET)
    return (
        text[start:end],
        text.count("\n", 0, start) + 1,
        text.count("\n", 0, max(start, end - 1)) + 1,
    )


def store(
    session: Session, scope: Scope, text: Any, key: Any = None, meta: Any = None
) -> dict[str, Any]:
    """Write `text` under `key` (a new key when none), replacing what the key held."""
    text = _text(text, "text")
    key = _key(key) if key is not None else uuid.uuid4().hex
    if meta is not None and not isinstance(meta, dict):
        raise Refused("ctx.memory.store: meta must be an object")
    now = utcnow()
    entry = session.scalars(
        select(MemoryEntry).where(MemoryEntry.owner == scope.owner, MemoryEntry.key == key)
    ).first()
    if entry is None:
        count = session.scalar(
            select(func.count()).select_from(MemoryEntry).where(MemoryEntry.owner == scope.owner)
        )
        if (count or 0) >= MAX_ENTRIES:
            raise Refused(f"ctx.memory is full ({MAX_ENTRIES} entries): forget some first")
        entry = MemoryEntry(owner=scope.owner, key=key, created_at=now)
        session.add(entry)
    entry.text, entry.meta, entry.skill_id, entry.updated_at = text, meta or {}, scope.skill_id, now
    return {"key": key}


def get(session: Session, scope: Scope, key: Any) -> dict[str, Any] | None:
    entry = session.scalars(
        select(MemoryEntry).where(MemoryEntry.owner == scope.owner, MemoryEntry.key == _key(key))
    ).first()
    return _entry(entry) if entry is not None else None


def forget(session: Session, scope: Scope, key: Any) -> dict[str, Any]:
    done = session.execute(
        delete(MemoryEntry).where(MemoryEntry.owner == scope.owner, MemoryEntry.key == _key(key))
    )
    return {"forgotten": bool(getattr(done, "rowcount", 0))}


def entries(session: Session, scope: Scope, limit: Any = 20) -> list[dict[str, Any]]:
    """The most recently written entries."""
    rows = session.scalars(
        select(MemoryEntry)
        .where(MemoryEntry.owner == scope.owner)
        .order_by(MemoryEntry.updated_at.desc(), MemoryEntry.id.desc())
        .limit(_limit(limit, 20, MAX_RESULTS))
    )
    return [_entry(e) for e in rows]


def search(session: Session, scope: Scope, query: Any, limit: Any = 5) -> list[dict[str, Any]]:
    """The entries holding most of the query's terms, best first (newest first on a tie), as
    the seed's results: snippet, score, path (the entry's own or `memory/<key>`), lines."""
    if not isinstance(query, str):
        raise Refused("ctx.memory.search: the query must be a string")
    terms = search_terms(query)
    if not terms:
        return []
    lowered = func.lower(MemoryEntry.text)
    rows = session.scalars(
        select(MemoryEntry)
        .where(
            MemoryEntry.owner == scope.owner,
            or_(*(lowered.like(f"%{_like(t)}%", escape="\\") for t in terms)),
        )
        .order_by(MemoryEntry.updated_at.desc(), MemoryEntry.id.desc())
        .limit(CANDIDATES)
    ).all()
    scored = [(score(e.text, terms), n, e) for n, e in enumerate(rows)]
    best = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
    found = []
    for value, _, entry in best[: _limit(limit, 5, MAX_RESULTS)]:
        text, first, last = snippet(entry.text, terms)
        path = entry.meta.get("path") if isinstance(entry.meta.get("path"), str) else None
        found.append(
            {
                "key": entry.key,
                "snippet": text,
                "score": value,
                "path": path or f"memory/{entry.key}",
                "startLine": first,
                "endLine": last,
            }
        )
    return found


def history(session: Session, scope: Scope, limit: Any = 50) -> list[dict[str, Any]]:
    """The session's last `limit` messages, oldest first."""
    rows = session.scalars(
        select(SessionMessage)
        .where(SessionMessage.owner == scope.owner, SessionMessage.session_id == scope.session_id)
        .order_by(SessionMessage.id.desc())
        .limit(_limit(limit, 50, MAX_HISTORY))
    ).all()
    return [{"role": m.role, "content": m.content, "at": m.at.isoformat()} for m in reversed(rows)]


def append(session: Session, scope: Scope, role: Any, content: Any) -> dict[str, Any]:
    if not isinstance(role, str) or not ROLE.match(role):
        raise Refused(
            "ctx.session.append: role must be a short lowercase name (user, assistant, ...)"
        )
    session.add(
        SessionMessage(
            owner=scope.owner,
            session_id=scope.session_id,
            role=role,
            content=_text(content, "content"),
        )
    )
    return {"session_id": scope.session_id}


def clear(session: Session, scope: Scope) -> dict[str, Any]:
    done = session.execute(
        delete(SessionMessage).where(
            SessionMessage.owner == scope.owner, SessionMessage.session_id == scope.session_id
        )
    )
    return {"removed": int(getattr(done, "rowcount", 0) or 0)}


def _entry(entry: MemoryEntry) -> dict[str, Any]:
    return {
        "key": entry.key,
        "text": entry.text,
        "meta": entry.meta,
        "updated_at": entry.updated_at.isoformat(),
    }


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise Refused(f"{name} must be a string")
    if len(value) > MAX_TEXT:
        raise Refused(f"{name} is longer than {MAX_TEXT} characters")
    return value


def _key(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_KEY:
        raise Refused(f"a memory key is a non-empty string of at most {MAX_KEY} characters")
    return value


def _limit(value: Any, default: int, most: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 1:
        raise Refused("limit must be a positive number")
    return min(int(value), most)


def _like(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
