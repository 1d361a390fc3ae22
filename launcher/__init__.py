"""`skill-runner`: the command that starts the service (migrate, serve with its embedded broker
and demo LLM) and manages its tokens file. It starts the API and the worker as processes
(`gunicorn api.wsgi:app`, `celery -A worker.celery_app`) and imports neither."""
