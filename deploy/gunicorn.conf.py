"""gunicorn settings; HOST/PORT/WEB_CONCURRENCY from the environment."""

import os
import sys

# gevent's patches go in before the app is imported: it is loaded in the master (below). Only
# when gunicorn reads this file: a test reading it in its own process must stay unpatched.
if (
    os.environ.get("WEB_WORKER_CLASS", "gevent") == "gevent"
    and os.environ.get("WEB_PRELOAD", "1") != "0"
    and "gunicorn.app.wsgiapp" in sys.modules
):
    from gevent import monkey

    monkey.patch_all()

from runner_core.settings import SettingsError, count_setting, load_settings  # noqa: E402


def _stop(exc: SettingsError) -> None:
    """One line and exit code 2, as `skill-runner` says it (no traceback of gunicorn's)."""
    print(f"skill-runner: configuration error: {exc}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def _count(name: str, default: int) -> int:
    try:
        return count_setting(dict(os.environ), name, default)
    except SettingsError as exc:
        _stop(exc)
        raise


if "gunicorn.app.wsgiapp" in sys.modules:  # the service's settings, checked before the app loads
    try:
        load_settings()
    except SettingsError as exc:
        _stop(exc)

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
workers = _count("WEB_CONCURRENCY", 2)
# gevent: an event stream (SSE) or a long poll is a greenlet, not one of a few threads, so
# hundreds of subscribers leave ordinary requests their capacity. WEB_WORKER_CLASS=gthread
# (with WEB_THREADS) is the fallback; each stream then holds a thread for its whole life.
worker_class = os.environ.get("WEB_WORKER_CLASS", "gevent")
threads = _count("WEB_THREADS", 4)
worker_connections = _count("WEB_CONNECTIONS", 1000)
# The app is loaded once in the master and the workers share its pages (copy on write);
# WEB_PRELOAD=0 loads it in each worker instead.
preload_app = os.environ.get("WEB_PRELOAD", "1") != "0"
timeout = 120
graceful_timeout = 20
accesslog = "-" if os.environ.get("ACCESS_LOG", "0") == "1" else None
# Each worker touches a heartbeat file on every turn of its loop: in memory it costs less and
# never waits on the disk.
worker_tmp_dir = (
    "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
)


def on_starting(server):
    """The master keeps no secret in its environment (any process of the same user, a skill
    script included, can read /proc/<pid>/environ); the workers it forks read them from
    runner_core.secret_values."""
    from runner_core.settings import hold_service_secrets, load_settings

    hold_service_secrets(load_settings())


def pre_fork(server, worker):
    """What the master loaded stays out of the collector's passes in the workers: a pass would
    write to every object's header and unshare the pages the preload shares."""
    import gc

    gc.freeze()


def post_fork(server, worker):
    """A connection the master's app opened is not shared with a forked worker."""
    if server.cfg.preload_app:
        server.app.wsgi().extensions["db_engine"].dispose(close=False)


def post_worker_init(worker):
    """Move the loaded app's objects out of the collector's reach: a full collection over
    them is a pause that lands on whatever request triggers it."""
    import gc

    gc.freeze()


def when_ready(server):
    """Say so when the API is reachable beyond this host with no token asked for."""
    from runner_core.secret_values import env_value

    host = bind.rsplit(":", 1)[0].strip("[]")
    if (
        host not in ("127.0.0.1", "localhost", "::1")
        and not (env_value("SKILL_RUNNER_API_TOKEN") or "").strip()
        and not (env_value("SKILL_RUNNER_TOKENS_FILE") or "").strip()
    ):
        server.log.warning(
            "listening on %s without API tokens: anyone who can reach "
            "this address can run skills; set a token (README: Configuration)",
            bind,
        )


def child_exit(server, worker):
    """A worker that ended no longer holds event streams (prometheus-client's multiprocess
    recipe: its live gauges are dropped)."""
    from runner_core.metrics import forget_process

    forget_process(worker.pid)
