"""Executing one claimed run: its directory, its entrypoint (a script, an engine CLI or both)
under the supervisor and its box, the output chain and the artifact index. Imports runner_core
only: no Celery app, no other worker package (tests/unit/test_layering.py holds it to that)."""
