"""requests: index (skill_id, created_at, id) for the filtered job list

GET /v1/jobs?skill_id=...&status=... orders by requests.created_at, id. Without this index
SQLite found the runs by status and sorted every match in a temp B-tree; with it, it walks
one skill's requests newest first and stops at the page size (the many-runs bench figure).

Revision ID: 0004
Revises: 0003
"""
from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_requests_skill_created", "requests", ["skill_id", "created_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_requests_skill_created", table_name="requests")
