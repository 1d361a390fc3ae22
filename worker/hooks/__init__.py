"""Hooks into signals: SIGTERM to a pool process (termination), operators' revokes (revokes),
Celery's task and worker signals for logs and metrics (observability)."""
