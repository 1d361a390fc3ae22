"""runs: the cache lookup's own index (cache_key, status, finished_at)

The lookup `cache_key = ? AND status = 'succeeded' ORDER BY finished_at DESC LIMIT 1` had
only ix_runs_cache_key to use; since 0005 added (status, created_at, id), SQLite (which keeps
no statistics unless ANALYZE runs) walked every succeeded run with that index and sorted the
matches, on every POST /v1/jobs. This index answers it with one seek on both databases.

Revision ID: 0006
Revises: 0005
"""
from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_runs_cache_lookup", "runs", ["cache_key", "status", "finished_at"])
    op.drop_index("ix_runs_cache_key", table_name="runs")


def downgrade() -> None:
    op.create_index("ix_runs_cache_key", "runs", ["cache_key"])
    op.drop_index("ix_runs_cache_lookup", table_name="runs")
