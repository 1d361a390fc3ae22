"""The protocols the handshake (`POST /v1/system/handshake`) declares, as the Zotero plugin
names them: only what this service serves. Each part that delivers a protocol adds its entry
here; a protocol not listed (or listed False) answers `supported: false`.

An entry is either a bool or a function of the request body giving the protocol's answer
object (for protocols that carry limits), so extra fields are computed only when asked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

JOB = "skillrunner.job.v1"
SEQUENCE = "skillrunner.sequence.v1"  # chained by the client itself: see docs/compatibility.md
INTERACTION_FILES = "skillrunner.interaction-files.v1"  # POST .../interaction/reply/files

Answer = bool | Callable[[dict[str, Any]], dict[str, Any]]

PROTOCOLS: dict[str, Answer] = {
    JOB: True,
    SEQUENCE: False,
    INTERACTION_FILES: lambda _body: _interaction_files(),
}
ON_REQUEST = frozenset({INTERACTION_FILES})  # answered only when a client names it


def default_protocols() -> list[str]:
    """What a handshake naming no protocol is told about."""
    return [name for name in PROTOCOLS if name not in ON_REQUEST]


def _interaction_files() -> dict[str, Any]:
    from api.jobs.reply_files import interaction_files_protocol  # the limits it enforces

    return {k: v for k, v in interaction_files_protocol().items() if k != "supported"}


def protocol_answer(name: str, body: dict[str, Any]) -> dict[str, Any]:
    """`{"supported": bool, ...}` for one requested protocol."""
    entry = PROTOCOLS.get(name, False)
    if callable(entry):
        return {"supported": True, **entry(body)}
    return {"supported": bool(entry)}
