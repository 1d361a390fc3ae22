"""runs: indexes (status, created_at, id) and (status, skill_id, created_at, id)

GET /v1/jobs?status=<failed|queued|running|waiting_user|canceled>&skill_id=... walks runs by
status newest first (those runs have exactly one request each) instead of a skill's whole
request history (the rare-status pages of the many-runs bench figure).

Revision ID: 0005
Revises: 0004
"""
from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_runs_status_created", "runs", ["status", "created_at", "id"])
    op.create_index("ix_runs_status_skill_created", "runs", ["status", "skill_id", "created_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_runs_status_skill_created", table_name="runs")
    op.drop_index("ix_runs_status_created", table_name="runs")
