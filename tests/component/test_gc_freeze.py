"""The API's gunicorn workers and the worker's pool processes freeze their startup objects; gevent is
patched in gunicorn's master only."""

from __future__ import annotations

import subprocess
import sys

from runner_core.settings import REPO_ROOT


def run_python(code: str, tmp_path) -> str:
    env = {
        "SKILL_RUNNER_DATA_DIR": str(tmp_path / "data"),
        "PATH": "/usr/bin:/bin",
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",
    }  # nothing connects at import
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.stdout.strip()


def test_gunicorn_workers_freeze_the_loaded_app(tmp_path):
    code = (
        "import gc, runpy; conf = runpy.run_path('deploy/gunicorn.conf.py'); "
        "import api.wsgi; before = gc.get_freeze_count(); conf['post_worker_init'](None); "
        "print(before, gc.get_freeze_count() > 10000)"
    )
    assert run_python(code, tmp_path) == "0 True"


def test_worker_pool_processes_freeze_after_fork(tmp_path):
    code = (
        "import gc; from celery.signals import worker_process_init; import worker.tasks as t; "
        "hooked = any(r() is t._freeze_startup_objects for _k, r in worker_process_init.receivers); "
        "before = gc.get_freeze_count(); worker_process_init.send(sender=None); "
        "print(hooked, before, gc.get_freeze_count() > 10000)"
    )
    assert run_python(code, tmp_path) == "True 0 True"


def test_the_config_patches_gevent_in_gunicorns_master_only(tmp_path):
    """gunicorn loads the app in its master, so gevent is patched there first; a process that
    only reads the file (a test) keeps real threads."""
    read = "import runpy; runpy.run_path('deploy/gunicorn.conf.py'); "
    patched = "from gevent import monkey; print(monkey.is_module_patched('threading'))"
    assert run_python(read + patched, tmp_path) == "False"
    assert run_python("import gunicorn.app.wsgiapp; " + read + patched, tmp_path) == "True"
