"""skill installs: one row per uploaded skill package

Revision ID: 0002
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "skill_installs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("skill_id", sa.String(length=128), nullable=True),
        sa.Column("version", sa.String(length=64), nullable=True),
        sa.Column("previous_version", sa.String(length=64), nullable=True),
        sa.Column("action", sa.String(length=16), nullable=True),
        sa.Column("package_sha256", sa.String(length=64), nullable=True),
        sa.Column("package_size", sa.Integer(), nullable=True),
        sa.Column("archive_path", sa.Text(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("warnings", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("skill_installs") as batch:
        batch.create_index("ix_skill_installs_skill_created", ["skill_id", "created_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("skill_installs") as batch:
        batch.drop_index("ix_skill_installs_skill_created")
    op.drop_table("skill_installs")
