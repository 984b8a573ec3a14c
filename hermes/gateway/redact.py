"""Keeping secrets out of logs (DESIGN invariant 13).

Bot tokens travel inside URLs (Telegram's ``/bot<TOKEN>/getUpdates``), and libraries
log those URLs. So every secret the gateway loads is registered here, and a log-record
factory installed once per process rewrites any record whose message or traceback
contains one, before any handler (ours, a library's or pytest's) sees it.
"""

from __future__ import annotations

import logging
import threading
import traceback
from typing import Any

MASK = "[redacted]"
# Shorter values are not treated as secrets: masking them would mangle ordinary text.
MIN_SECRET_LENGTH = 6

_secrets: set[str] = set()
_lock = threading.Lock()
_installed = False


def protect(*values: str | None) -> None:
    """Never let any of ``values`` appear in a log record of this process."""
    global _installed
    fresh = {v for v in values if v and len(v) >= MIN_SECRET_LENGTH}
    if not fresh:
        return
    with _lock:
        _secrets.update(fresh)
        if not _installed:
            _install()
            _installed = True


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``[redacted]``."""
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def _install() -> None:
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        _scrub(record)
        return record

    logging.setLogRecordFactory(factory)


def _scrub(record: logging.LogRecord) -> None:
    if not _secrets:
        return
    try:
        message = record.getMessage()
    except Exception:  # a malformed record is the logging module's to report
        return
    cleaned = redact(message)
    if cleaned != message:
        record.msg, record.args = cleaned, None
    if record.exc_info and record.exc_info[1] is not None:
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        cleaned = redact(text)
        if cleaned != text:
            # Formatters use exc_text when it is set instead of formatting exc_info.
            record.exc_text = cleaned
