"""Token counts a CLI reports for a turn, added up over a run's turns and repair rounds."""

from __future__ import annotations

from collections.abc import Mapping


def add_tokens(
    total: Mapping[str, int] | None, more: Mapping[str, int] | None
) -> dict[str, int] | None:
    """Token counts of two turns added up (None when neither reported any)."""
    if more is None:
        return dict(total) if total is not None else None
    if total is None:
        return dict(more)
    return {key: total.get(key, 0) + more.get(key, 0) for key in {**total, **more}}
