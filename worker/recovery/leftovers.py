"""Local scratch that runs left behind (SKILL_RUNNER_WORK_DIR).

A run's local directory is removed when its files are published; a pool process killed hard,
or a host that went down mid-run, leaves it behind (the run itself is reconciled from the
database when its lease expires). At each worker start and in each sweep, the local
directories of runs that ended, or that no longer exist, are removed; a run still going keeps
its own.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from sqlalchemy import select

from runner_core import scratch
from runner_core.settings import Settings
from runner_core.statuses import TERMINAL_STATUSES
from runner_core.store.models import Run

log = logging.getLogger(__name__)
BATCH = 500  # directories looked up per pass


def clear_leftovers(settings: Settings, sessions: Callable) -> int:
    """Remove the local directories of ended or unknown runs; returns how many."""
    if settings.work_dir is None:
        return 0
    root = settings.work_runs_dir
    try:
        names = sorted(os.listdir(root))[:BATCH]
    except FileNotFoundError:
        return 0
    if not names:
        return 0
    with sessions() as session:
        going = set(
            session.scalars(
                select(Run.id).where(Run.id.in_(names), Run.status.not_in(TERMINAL_STATUSES))
            )
        )
    gone = [name for name in names if name not in going]
    for name in gone:
        scratch.remove_quietly(root / name)
    if gone:
        log.info("removed the local directories of %d ended run(s)", len(gone))
    return len(gone)
