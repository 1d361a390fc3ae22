"""owners and audit: the token name that owns each run and request, Idempotency-Keys per owner,
and the audit log

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("owner", sa.String(length=64), nullable=True))
    with op.batch_alter_table("requests") as batch:
        batch.add_column(sa.Column("owner", sa.String(length=64), nullable=True))
        batch.create_index("ix_requests_owner_created", ["owner", "created_at", "id"])
    # the same key sent by two clients is two keys: the owner joins the primary key (a new
    # table, copied: the same steps on SQLite and Postgres)
    _keys_table("idempotency_keys_0012", ["scope", "owner", "key"])
    op.execute(
        'INSERT INTO idempotency_keys_0012 (scope, owner, "key", body_sha256, request_id, '
        "status_code, response, created_at) SELECT scope, '', \"key\", body_sha256, request_id, "
        "status_code, response, created_at FROM idempotency_keys"
    )
    op.drop_index("ix_idempotency_keys_created_at", "idempotency_keys")
    op.drop_table("idempotency_keys")
    op.rename_table("idempotency_keys_0012", "idempotency_keys")
    op.create_index("ix_idempotency_keys_created_at", "idempotency_keys", ["created_at"])
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("token_name", sa.String(length=64), nullable=True),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("target", sa.String(length=255), nullable=True),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("http_request_id", sa.String(length=128), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    op.drop_table("audit_log")
    _keys_table("idempotency_keys_0011", ["scope", "key"])
    op.execute(
        'INSERT INTO idempotency_keys_0011 (scope, "key", body_sha256, request_id, status_code, '
        'response, created_at) SELECT scope, "key", body_sha256, request_id, status_code, '
        "response, created_at FROM idempotency_keys WHERE owner = ''"
    )
    op.drop_index("ix_idempotency_keys_created_at", "idempotency_keys")
    op.drop_table("idempotency_keys")
    op.rename_table("idempotency_keys_0011", "idempotency_keys")
    op.create_index("ix_idempotency_keys_created_at", "idempotency_keys", ["created_at"])
    with op.batch_alter_table("requests") as batch:
        batch.drop_index("ix_requests_owner_created")
        batch.drop_column("owner")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("owner")


def _keys_table(name: str, key_columns: list[str]) -> None:
    owner = [sa.Column("owner", sa.String(64), nullable=False)] if "owner" in key_columns else []
    op.create_table(
        name,
        sa.Column("scope", sa.String(16), nullable=False),
        *owner,
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("body_sha256", sa.String(64), nullable=False),
        sa.Column("request_id", sa.String(36), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("response", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint(*key_columns, name=f"pk_{name}"),
    )
