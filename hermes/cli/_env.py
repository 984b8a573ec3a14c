"""API keys for the CLI: where one is found, whether one is needed, where one is saved.

A key comes from the environment (``HERMES_API_KEY``, ``OPENROUTER_API_KEY``,
``OPENAI_API_KEY``, in that order), from ``$HERMES_HOME/.env``, which `hermes setup`
writes with mode 0600, or from ``model.api_key`` in config.yaml. Endpoints on this machine
(Ollama, llama.cpp, vLLM) need none, and neither does any endpoint but the default hosted
one until it says otherwise.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from urllib.parse import urlparse

from hermes.config import API_KEY_ENV, DEFAULT_BASE_URL, dotenv_values, ensure_home, hermes_home

ENV_FILE = ".env"
KEY_NAME = API_KEY_ENV[0]


def env_file(home: Path | None = None) -> Path:
    return (home or hermes_home()) / ENV_FILE


def find_api_key() -> tuple[str | None, str | None]:
    """The key and where it came from (an env var name or the .env path), or (None, None)."""
    for name in API_KEY_ENV:
        if os.environ.get(name):
            return os.environ[name], name
    saved = dotenv_values()
    for name in API_KEY_ENV:
        if saved.get(name):
            return saved[name], str(env_file())
    from hermes.config import load_config

    in_file = load_config().get("model.api_key")  # Hermes Agent keeps a custom endpoint's here
    return (in_file, "model.api_key in config.yaml") if in_file else (None, None)


def is_loopback(base_url: str) -> bool:
    """True when the endpoint runs on this machine (so it needs no key)."""
    host = (urlparse(base_url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def needs_key(base_url: str) -> bool:
    """True for the default hosted endpoint, which always wants a key. Any other one is
    tried without: an Ollama or vLLM on another machine needs none, and one that does
    answers 401, which hermes reports with what to do."""
    return not is_loopback(base_url) and base_url.rstrip("/") == DEFAULT_BASE_URL.rstrip("/")


def missing_key_message(base_url: str) -> str:
    return (
        f"No API key is configured for {base_url}: export HERMES_API_KEY=<your key> "
        "(OPENROUTER_API_KEY and OPENAI_API_KEY work too), point model.base_url at a local "
        "endpoint such as http://localhost:11434/v1 (it needs no key), or run `hermes setup` "
        f"in a terminal to save a key in {env_file()}."
    )


def save_api_key(key: str, home: Path | None = None) -> Path:
    """Write ``HERMES_API_KEY=key`` into the .env file (0600), keeping its other lines."""
    home = ensure_home(home)
    path = env_file(home)
    try:
        old = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        old = []
    kept = [line for line in old if line.split("=", 1)[0].strip() != KEY_NAME]
    text = "\n".join([*kept, f"{KEY_NAME}={key}"]) + "\n"
    tmp = path.with_name(ENV_FILE + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(tmp, 0o600)  # O_CREAT's mode does not apply to a file that already existed
    os.replace(tmp, path)
    return path
