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

Answer = bool | Callable[[dict[str, Any]], dict[str, Any]]

PROTOCOLS: dict[str, Answer] = {
    JOB: True,
    SEQUENCE: False,
}


def protocol_answer(name: str, body: dict[str, Any]) -> dict[str, Any]:
    """`{"supported": bool, ...}` for one requested protocol."""
    entry = PROTOCOLS.get(name, False)
    if callable(entry):
        return {"supported": True, **entry(body)}
    return {"supported": bool(entry)}
