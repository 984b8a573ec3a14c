"""The HTTP API's bearer key when none is configured: generated once, kept in HERMES_HOME.

Loopback is no exception (any web page or local user could otherwise drive the agent),
so on first start without ``gateway.api_key``/``HERMES_GATEWAY_KEY`` a random key is
written, readable by its owner only, to ``$HERMES_HOME/api_key``; later starts reuse it.
Clients read it from there (``cat ~/.hermes/api_key``). Its value is never printed.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

from hermes.errors import ConfigError
from hermes.redaction import register

KEY_FILE = "api_key"


def key_path(home: Path) -> Path:
    return Path(home) / KEY_FILE


def read_api_key(home: Path) -> str | None:
    """The stored key, or None when there is none yet."""
    try:
        return key_path(home).read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None


def ensure_api_key(home: Path) -> tuple[str, Path]:
    """The stored key (created 0600 if missing, known to the redactor) and its file."""
    key, path = _ensure(home)
    register(key)
    return key, path


def _ensure(home: Path) -> tuple[str, Path]:
    path = key_path(home)
    try:
        existing = read_api_key(home)
        if existing:
            path.chmod(0o600)
            return existing, path
        _create(path, secrets.token_urlsafe(32))
        key = read_api_key(home)
        if key is None:  # another start created it and has not written it yet
            raise ConfigError(f"The HTTP API key file {path} is empty; remove it and start again.")
    except OSError as exc:
        raise ConfigError(
            f"Cannot read or create the HTTP API key file {path}: {exc.strerror}. "
            "Make HERMES_HOME writable or set gateway.api_key in config.yaml."
        ) from exc
    return key, path


def _create(path: Path, key: str) -> None:
    """Write the key whole, then link it in: of gateways starting at once, one key wins."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".api_key.")  # mkstemp: 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(key + "\n")
        os.link(temp, path)
    except FileExistsError:
        pass  # another start wrote it first; its key is the one
    finally:
        os.unlink(temp)
