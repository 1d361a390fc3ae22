"""webhooks: a job's callback URL and state, and every delivery attempt

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        batch.add_column(sa.Column("callback_url", sa.Text(), nullable=True))
        batch.add_column(sa.Column("callback_state", sa.String(length=16), nullable=True))
        batch.create_index("ix_requests_callback_state", ["callback_state"], unique=False)
    op.create_table(
        "webhook_attempts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("request_id", sa.String(length=36), nullable=False),
        sa.Column("event", sa.String(length=16), nullable=False),
        sa.Column("run_status", sa.String(length=16), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("delivered", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["request_id"], ["requests.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_webhook_attempts_request", "webhook_attempts", ["request_id", "id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_attempts_request", table_name="webhook_attempts")
    op.drop_table("webhook_attempts")
    with op.batch_alter_table("requests") as batch:
        batch.drop_index("ix_requests_callback_state")
        batch.drop_column("callback_state")
        batch.drop_column("callback_url")
