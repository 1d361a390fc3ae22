"""composite steps: runs.parent_run_id and runs.step_name (a composite's step is a child run)

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("parent_run_id", sa.String(36), nullable=True))
        batch.add_column(sa.Column("step_name", sa.String(128), nullable=True))
    # one child per step of a parent: two callbacks racing to start a step create it once
    op.create_index("ix_runs_parent_step", "runs", ["parent_run_id", "step_name"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_runs_parent_step", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("step_name")
        batch.drop_column("parent_run_id")
