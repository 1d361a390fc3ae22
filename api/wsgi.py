"""WSGI entry point for gunicorn: `gunicorn api.wsgi:app`."""

from api import create_app
from runner_core.settings import hold_service_secrets

app = create_app()
hold_service_secrets(app.config["SETTINGS"])
