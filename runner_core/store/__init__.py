"""SQL state shared by the API and the worker (SQLAlchemy 2, migrated by Alembic)."""
