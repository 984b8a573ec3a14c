"""``$HERMES_HOME/logs/``: agent.log, errors.log and gateway.log, as Hermes Agent 0.19 keeps them.

Dashboards made for Hermes Agent (hermes-webui's Logs panel, hermesd) tail these files,
so hermes writes them in 0.19's line format (``2026-02-03 14:00:00,123 INFO name:
message``) and split: ``agent.log`` takes every record at INFO and above, ``errors.log``
WARNING and above, and ``gateway.log`` (a gateway only) the ``hermes.gateway`` records.
Each file rotates at a few MB and is private to its owner (0600); secrets are scrubbed
from every record first (hermes.redaction). A home hermes cannot write to keeps no files
and loses nothing else.
"""

from __future__ import annotations

import logging
import os
from logging.handlers import RotatingFileHandler
from pathlib import Path

from hermes.redaction import install_log_scrubber

LINE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"  # 0.19's, without a session
HANDLER_PREFIX = "hermes-logs:"  # names our handlers, so a second set-up adds none
# file, level, bytes before it rotates, rotated copies kept, logger prefix (None: all)
FILES = (
    ("agent.log", logging.INFO, 5 * 1024 * 1024, 3, None),
    ("errors.log", logging.WARNING, 2 * 1024 * 1024, 2, None),
)
GATEWAY_FILE = ("gateway.log", logging.INFO, 5 * 1024 * 1024, 3, "hermes.gateway")


class _Component(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name == self.prefix or record.name.startswith(self.prefix + ".")


def log_to_files(home: Path, *, gateway: bool = False) -> list[Path]:
    """Add the home's log files to the root logger; the files now written."""
    root = logging.getLogger()
    present = {h.get_name() for h in root.handlers}
    folder = Path(home) / "logs"
    written = []
    for name, level, size, keep, prefix in (*FILES, *((GATEWAY_FILE,) if gateway else ())):
        path = folder / name
        if HANDLER_PREFIX + str(path) in present:
            written.append(path)
            continue
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not path.exists():
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
            handler = RotatingFileHandler(path, maxBytes=size, backupCount=keep, encoding="utf-8")
        except OSError:
            continue  # a read-only home: the other handlers still have the records
        handler.setLevel(level)
        handler.setFormatter(logging.Formatter(LINE_FORMAT))
        if prefix is not None:
            handler.addFilter(_Component(prefix))
        handler.set_name(HANDLER_PREFIX + str(path))
        root.addHandler(handler)
        written.append(path)
    install_log_scrubber()
    return written
