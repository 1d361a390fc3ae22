"""Logging: console plus a rotating file under data/logs/."""

from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler

from runner_core.settings import Settings

_configured = False


def configure_logging(settings: Settings) -> None:
    """Idempotent: LOG_LEVEL, LOG_FILE, LOG_MAX_BYTES, LOG_BACKUP_COUNT."""
    global _configured
    if _configured:
        return
    _configured = True
    root = logging.getLogger()
    root.setLevel(settings.log_level)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not any(isinstance(h, logging.StreamHandler) for h in root.handlers):
        console = logging.StreamHandler()
        console.setFormatter(fmt)
        root.addHandler(console)
    path = settings.log_file or str(settings.data_dir / "logs" / "skill_runner.log")
    try:
        from pathlib import Path

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handler = RotatingFileHandler(
            path, maxBytes=settings.log_max_bytes, backupCount=settings.log_backup_count
        )
        handler.setFormatter(fmt)
        root.addHandler(handler)
    except OSError as exc:  # a read-only data dir must not stop the API
        logging.getLogger(__name__).warning("file logging disabled: %s", exc)
