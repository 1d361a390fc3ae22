"""The Celery worker: claims runs, executes them, records outcomes."""
