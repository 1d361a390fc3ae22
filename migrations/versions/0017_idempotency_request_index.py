"""idempotency_keys.request_id indexed: cleanup deletes the keys of the requests it deletes

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_idempotency_keys_request_id", "idempotency_keys", ["request_id"])


def downgrade() -> None:
    op.drop_index("ix_idempotency_keys_request_id", "idempotency_keys")
