"""engine upgrades: one row per POST /v1/engines/{engine}/upgrade (npm install of a CLI
version), one at a time per engine through the unique active_engine

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "engine_upgrades",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("engine", sa.String(length=32), nullable=False),
        sa.Column("version_requested", sa.String(length=64), nullable=False),
        sa.Column("version_installed", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("active_engine", sa.String(length=32), nullable=True),
        sa.Column("requested_by", sa.String(length=64), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("log_path", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_engine_upgrades_engine_created", "engine_upgrades", ["engine", "created_at"]
    )
    op.create_index(
        "ix_engine_upgrades_active_engine", "engine_upgrades", ["active_engine"], unique=True
    )


def downgrade() -> None:
    op.drop_table("engine_upgrades")
