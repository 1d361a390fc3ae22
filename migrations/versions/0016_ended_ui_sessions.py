"""ended_ui_sessions: the web UI sessions ended by a logout, refused until their cookie expires

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ended_ui_sessions",
        sa.Column("sid", sa.String(64), primary_key=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_ended_ui_sessions_expires_at", "ended_ui_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_ended_ui_sessions_expires_at", "ended_ui_sessions")
    op.drop_table("ended_ui_sessions")
