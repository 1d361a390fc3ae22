"""runs.cancel_error: why a run's cancel was requested when no user asked for it (its composite
parent ended, an operator revoked it): the error the canceled run ends with

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("cancel_error", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "cancel_error")
