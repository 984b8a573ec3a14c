"""hermes's secrets: which they are, and keeping them out of everything shown or stored.

One redactor for every room (docs/design.md, invariant 13). Secrets are known two ways:

- registered values: the model key, the gateway key, platform tokens, the state URL's
  password, every value of ``$HERMES_HOME/.env`` and of secret-named environment
  variables (``register``, ``register_environment``);
- key shapes: provider keys (``sk-``, ``gsk_``, ``xai-``, ``AIza``, ``hf_``, GitHub and
  Slack tokens), Telegram bot tokens, ``Bearer`` tokens and the password of a URL
  (``postgres://user:pw@``, ``https://user:pw@``), found even when nobody registered them.

``redact`` replaces both with ``[redacted]`` (``StreamRedactor`` does it for a text that
arrives in pieces, a streamed answer); ``tool_environment`` is the environment
tools run in, without the secret variables; ``install_log_scrubber`` makes every log
record of the process pass through ``redact`` before any handler sees it. A leaf: this
module imports nothing of hermes, so the store may use it too.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlsplit

MASK = "[redacted]"
# Shorter values are not treated as secrets: masking them would mangle ordinary text.
MIN_SECRET_LENGTH = 8

# Environment variables of hermes's own secrets, whatever their value.
SECRET_ENV_NAMES = frozenset(
    {
        "HERMES_API_KEY",
        "HERMES_GATEWAY_KEY",
        "HERMES_STATE_URL",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "TELEGRAM_BOT_TOKEN",
        "DISCORD_TOKEN",
        "DISCORD_BOT_TOKEN",
        "SLACK_BOT_TOKEN",
        "SLACK_APP_TOKEN",
    }
)
_SECRET_NAME = re.compile(r"^HERMES_.*KEY|_API_KEY$|_TOKEN$|SECRET|PASSWORD", re.IGNORECASE)

# Config fields that hold a secret wherever they appear (gateway.api_key,
# gateway.platforms.telegram.token, slack's bot_token and app_token, ...).
# A webhook's ``secret`` and each of its routes' too.
SECRET_FIELDS = frozenset(
    {"api_key", "key", "token", "bot_token", "app_token", "password", "secret"}
)

_KEY_SHAPES = re.compile(
    r"""
      \bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}       # OpenAI, Anthropic, OpenRouter
    | \bgsk_[A-Za-z0-9]{20,}                        # Groq
    | \bxai-[A-Za-z0-9]{20,}                        # xAI
    | \bAIza[0-9A-Za-z_\-]{30,}                     # Google
    | \bhf_[A-Za-z0-9]{20,}                         # Hugging Face
    | \bgh[pousr]_[A-Za-z0-9]{20,}                  # GitHub tokens
    | \bgithub_pat_[A-Za-z0-9_]{20,}                # GitHub fine-grained tokens
    | \bxox[abprs]-[A-Za-z0-9\-]{10,}               # Slack
    | \b\d{6,}:[A-Za-z0-9_\-]{30,}                  # Telegram bot tokens
    """,
    re.VERBOSE,
)
_BEARER = re.compile(r"(\bBearer\s+)[A-Za-z0-9._~+/=\-]{8,}", re.IGNORECASE)
# The password of any ``scheme://user:password@host`` URL (a database's, a proxy's basic
# auth); a password never holds "/", so ``host:8080/@scope`` is not one.
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@\s/]+(@)", re.IGNORECASE)
_PASSWORD_PARAM = re.compile(r"(\bpassword=)[^\s&'\"]+", re.IGNORECASE)  # conninfo, ?password=

_secrets: set[str] = set()
# Encoded forms of the registered secrets (base64 at each byte alignment, hex), as
# patterns that also match across the line breaks `base64` and `xxd -p` insert.
_encoded: set[str] = set()
_encoded_pattern: re.Pattern[str] | None = None  # all of them, one alternation
_prefixes: frozenset[str] | None = None  # every start of a secret or encoded form, for streams
# The end of a streamed text that may be an unfinished key shape: a word not yet ended.
_WORD_TAIL = re.compile(r"[A-Za-z0-9_\-:.~+/=%]{1,256}\Z")
# Reentrant: a log record made while the lock is held (a finalizer run by the garbage
# collector, say) passes through ``redact`` on the same thread and must not deadlock.
_lock = threading.RLock()
_log_scrubber_installed = False


def register(*values: str | None) -> None:
    """Treat each of ``values`` as a secret from now on, and its common encodings too:
    URL-encoded, hex and base64 (found inside a longer base64 text at any alignment)."""
    global _encoded_pattern
    fresh: set[str] = set()
    encoded: set[str] = set()
    for value in values:
        if value and len(value) >= MIN_SECRET_LENGTH:
            fresh.update({value, quote(value, safe=""), quote_plus(value)})
            encoded.update(encodings(value))
    if fresh:
        with _lock:
            _secrets.update(fresh)
            _forget_prefixes()
            forms = None if encoded <= _encoded else _encoded | encoded
        while forms is not None:  # compiled outside the lock: it may take a while
            pattern = _encodings_pattern(forms)
            with _lock:
                if forms >= _encoded:
                    _encoded.update(forms)
                    _encoded_pattern = pattern
                    _forget_prefixes()
                    forms = None
                else:  # another thread published more meanwhile: include it, again
                    forms = forms | _encoded
        install_log_scrubber()


def _encodings_pattern(forms: set[str]) -> re.Pattern[str]:
    """One alternation of ``forms``, each also matching with line breaks between characters."""
    ordered = sorted(forms, key=len, reverse=True)
    return re.compile("|".join(r"\r?\n?".join(re.escape(c) for c in form) for form in ordered))


def encodings(value: str) -> list[str]:
    """The hex and base64 forms of ``value`` that any text encoding it must contain.

    Inside a longer base64 text the secret starts at one of three byte alignments;
    for each, only the characters made of the secret's bits alone are kept."""
    raw = value.encode("utf-8")
    forms = [raw.hex(), raw.hex().upper()]
    for alignment in range(3):
        text = base64.b64encode(b"\0" * alignment + raw).decode("ascii")
        for alphabet in (text, text.replace("+", "-").replace("/", "_")):
            start = -(-8 * alignment // 6)
            end = 8 * (alignment + len(raw)) // 6
            forms.append(alphabet[start:end])
    return [f for f in dict.fromkeys(forms) if len(f) >= MIN_SECRET_LENGTH]


def register_environment(environ: Mapping[str, str], dotenv: Mapping[str, str]) -> None:
    """Register every value of ``dotenv`` and of the secret-named variables of ``environ``."""
    register(*dotenv.values())
    register(*(environ[name] for name in secret_env_names(environ)))


def redact(text: str) -> str:
    """``text`` with every registered secret and every key shape replaced by ``[redacted]``."""
    with _lock:
        known = sorted(_secrets, key=len, reverse=True)
        encoded = _encoded_pattern
        forms = list(_encoded) if encoded is not None else []
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    if forms:
        joined = text.replace("\r", "").replace("\n", "")  # the regex runs only on a hit
        if any(form in joined for form in forms):
            text = encoded.sub(MASK, text)  # type: ignore[union-attr]
    text = mask_url(text)
    text = _BEARER.sub(rf"\1{MASK}", text)
    return _KEY_SHAPES.sub(MASK, text)


class StreamRedactor:
    """``redact`` for a text that arrives in pieces (a streamed answer): the end of what
    came so far is held back while it may still be the start of a secret (a registered
    secret's or an encoded form's first characters, or an unfinished word that may be a
    key shape), and sent, scrubbed, with the next piece or at ``flush``."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self._emit = emit
        self._held = ""

    def feed(self, piece: str) -> None:
        text = redact(self._held + piece)
        held = _unfinished(text)
        self._held = text[len(text) - held :] if held else ""
        if len(text) > held:
            self._emit(text[: len(text) - held])

    def flush(self) -> None:
        """Send what is held back (the text ended)."""
        if self._held:
            text, self._held = redact(self._held), ""
            self._emit(text)


def _unfinished(text: str) -> int:
    """How many characters at the end of ``text`` may be the start of a secret."""
    prefixes = _secret_prefixes()
    longest = max(map(len, prefixes), default=0)
    for start in range(max(0, len(text) - longest), len(text)):
        if text[start:] in prefixes:
            held = len(text) - start
            break
    else:
        held = 0
    word = _WORD_TAIL.search(text)
    return max(held, len(word.group()) if word else 0)


def _secret_prefixes() -> frozenset[str]:
    global _prefixes
    with _lock:
        if _prefixes is None:
            forms = _secrets | _encoded
            _prefixes = frozenset(form[:end] for form in forms for end in range(1, len(form)))
        return _prefixes


def _forget_prefixes() -> None:
    global _prefixes
    _prefixes = None


def is_secret_name(name: str) -> bool:
    """True for an environment variable that holds a secret by its name."""
    return name.upper() in SECRET_ENV_NAMES or bool(_SECRET_NAME.search(name))


def secret_env_names(environ: Mapping[str, str], dotenv_names: Iterable[str] = ()) -> set[str]:
    """The variables of ``environ`` that are secrets: by name, or defined in .env."""
    from_dotenv = set(dotenv_names)
    return {name for name in environ if name in from_dotenv or is_secret_name(name)}


def tool_environment(
    environ: Mapping[str, str], dotenv_names: Iterable[str] = (), keep: Iterable[str] = ()
) -> dict[str, str]:
    """``environ`` without hermes's secrets, except the names in ``keep``."""
    dropped = secret_env_names(environ, dotenv_names) - set(keep)
    return {name: value for name, value in environ.items() if name not in dropped}


def url_password(url: str) -> str | None:
    """The password of a ``scheme://user:password@host`` URL, decoded, if it has one."""
    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return unquote(password) if password else None


def mask_url(url: str) -> str:
    """``url`` (or a conninfo string) with its password shown as ``[redacted]``."""
    return _PASSWORD_PARAM.sub(rf"\1{MASK}", _URL_PASSWORD.sub(rf"\1{MASK}\2", url))


def mask_fields(key: str, value: Any) -> Any:
    """A config value for display: secret fields masked, nested mappings too."""
    field = key.rsplit(".", 1)[-1]
    if isinstance(value, Mapping):
        return {k: mask_fields(f"{key}.{k}", v) for k, v in value.items()}
    if field in SECRET_FIELDS and value:
        return MASK
    if key.rsplit(".", 2)[-2:-1] == ["api_keys"] and isinstance(value, str | int) and value:
        return MASK  # gateway.api_keys.<name>: a principal's key itself
    if isinstance(value, str):
        return mask_url(value)
    return value


# -- logs -------------------------------------------------------------------------------


def install_log_scrubber() -> None:
    """Pass every log record of this process through ``redact`` (once per process).

    A record factory, not a handler filter: it runs before any handler sees the record,
    ours, a library's or pytest's, so no handler can be added that misses it.
    """
    global _log_scrubber_installed
    with _lock:
        if _log_scrubber_installed:
            return
        _log_scrubber_installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        _scrub(record)
        return record

    logging.setLogRecordFactory(factory)


def _scrub(record: logging.LogRecord) -> None:
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
