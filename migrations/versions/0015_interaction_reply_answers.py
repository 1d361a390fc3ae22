"""interactions.reply_sha256 and reply_answer: the hash of the reply that answered a question
and the API's answer to it, so a repeated idempotency key is answered the same, and the same
key with another reply is refused

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("interactions", sa.Column("reply_sha256", sa.String(64), nullable=True))
    op.add_column("interactions", sa.Column("reply_answer", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("interactions", "reply_answer")
    op.drop_column("interactions", "reply_sha256")
