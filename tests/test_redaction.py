"""The one redactor: registered secrets, key shapes, tool environments, masked config."""

from __future__ import annotations

import base64
import logging
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest

from hermes import redaction
from hermes.config import load_config, register_secrets
from hermes.redaction import MASK, mask_fields, redact, tool_environment

# One made-up value of every key shape the redactor must know without being told.
KEY_SHAPES = {
    "openai": "sk-abcdefghijklmnopqrstuvwx1234",
    "openai project": "sk-proj-AbCdEfGhIjKlMnOpQrStUv_12-34",
    "anthropic": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
    "openrouter": "sk-or-v1-0123456789abcdef0123456789abcdef",
    "groq": "gsk_abcdefghijklmnopqrstuvwxyz012345",
    "xai": "xai-abcdefghijklmnopqrstuvwxyz012345",
    "google": "AIzaSyA-abcdefghijklmnopqrstuvwxyz0123",
    "hugging face": "hf_abcdefghijklmnopqrstuvwxyzABCD",
    "github classic": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "github oauth": "gho_abcdefghijklmnopqrstuvwxyz0123456789",
    "github fine-grained": "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "slack bot": "xoxb-1234567890-0987654321-AbCdEfGhIjKlMn",
    "slack app": "xoxa-2-1234567890-abcdefabcdef",
    "slack user": "xoxp-1234567890-0987654321-abcdef",
    "telegram": "123456789:AAHfakeTelegramBotToken_abcdefghijkl",
}


@pytest.mark.parametrize("shape", sorted(KEY_SHAPES))
def test_every_key_shape_is_redacted_unregistered(shape: str) -> None:
    key = KEY_SHAPES[shape]
    text = f"the provider said: invalid key {key}. Try again."
    assert redact(text) == f"the provider said: invalid key {MASK}. Try again."


def test_a_bearer_token_and_a_postgres_password_are_redacted() -> None:
    text = (
        "Authorization: Bearer opaque.token-value_123 and "
        "postgresql://hermes:s3cr%40t-pw@db.example:5432/hermes, postgres://u:pw@h/d"
    )
    assert redact(text) == (
        f"Authorization: Bearer {MASK} and "
        f"postgresql://hermes:{MASK}@db.example:5432/hermes, postgres://u:{MASK}@h/d"
    )


def test_ordinary_text_is_left_alone() -> None:
    text = (
        "sk-learn is a library; the key-value store on port 5432; ask 12:30 at "
        "postgresql://localhost/db, a Bearer of bad news; hf_hub; xoxo-gossip."
    )
    assert redact(text) == text


def test_a_registered_value_is_redacted_plain_and_url_encoded() -> None:
    secret = f"opaque/{uuid.uuid4().hex}+value"
    redaction.register(secret)
    encoded = secret.replace("/", "%2F").replace("+", "%2B")
    assert redact(f"a={secret} b={encoded}") == f"a={MASK} b={MASK}"


def test_short_values_are_never_registered() -> None:
    redaction.register("1234567", "", None)
    assert redact("call 1234567 now") == "call 1234567 now"


def test_the_environment_and_dotenv_values_are_registered() -> None:
    from_env, from_dotenv = f"env-{uuid.uuid4().hex}", f"dotenv-{uuid.uuid4().hex}"
    plain = f"plain-{uuid.uuid4().hex}"
    environ = {"DEPLOY_TOKEN": from_env, "EDITOR_THEME": plain}
    redaction.register_environment(environ, {"SERVICE_CREDENTIAL": from_dotenv})
    assert redact(f"{from_env} {from_dotenv} {plain}") == f"{MASK} {MASK} {plain}"


def test_tool_environment_drops_secrets_and_keeps_the_rest() -> None:
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "LANG": "C.UTF-8",
        "HERMES_HOME": "/home/me/.hermes",
        "HERMES_API_KEY": "x",
        "HERMES_GATEWAY_KEY": "x",
        "HERMES_STATE_URL": "x",
        "OPENAI_API_KEY": "x",
        "OPENROUTER_API_KEY": "x",
        "ANTHROPIC_API_KEY": "x",
        "TELEGRAM_BOT_TOKEN": "x",
        "SLACK_BOT_TOKEN": "x",
        "SLACK_APP_TOKEN": "x",
        "DISCORD_TOKEN": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "PGPASSWORD": "x",
        "SERVICE_CREDENTIAL": "x",  # named harmlessly, but defined in .env
        "GITHUB_TOKEN": "x",
    }
    env = tool_environment(environ, ["SERVICE_CREDENTIAL"], keep=["GITHUB_TOKEN"])
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "LANG": "C.UTF-8",
        "HERMES_HOME": "/home/me/.hermes",
        "GITHUB_TOKEN": "x",
    }


def test_config_values_are_masked_by_field() -> None:
    platforms = {
        "telegram": {"token": "123:abc", "allowed_users": [1]},
        "slack": {"bot_token": "xoxb-1", "app_token": "xapp-1"},
        "discord": {"token": "d"},
        "api_server": {"key": "k", "port": 8642},
    }
    assert mask_fields("gateway.platforms", platforms) == {
        "telegram": {"token": MASK, "allowed_users": [1]},
        "slack": {"bot_token": MASK, "app_token": MASK},
        "discord": {"token": MASK},
        "api_server": {"key": MASK, "port": 8642},
    }
    assert mask_fields("gateway.api_key", "gw") == MASK
    assert mask_fields("gateway.api_key", None) is None
    assert mask_fields("state.url", "postgresql://u:pw@h/d") == f"postgresql://u:{MASK}@h/d"
    assert mask_fields("model.default", "gpt-4o") == "gpt-4o"


def test_log_records_are_scrubbed_before_any_handler(caplog: pytest.LogCaptureFixture) -> None:
    secret = f"logged-{uuid.uuid4().hex}"
    redaction.register(secret)
    caplog.set_level(logging.INFO)
    logging.getLogger("any.library").info("GET /bot%s/getMe with %s", secret, KEY_SHAPES["groq"])
    assert secret not in caplog.text and KEY_SHAPES["groq"] not in caplog.text
    assert f"GET /bot{MASK}/getMe with {MASK}" in caplog.text


ENCODED_SECRET = "tg-bot-7f3a9c2e5b1d8a4f"


@pytest.mark.parametrize("prefix", ["", "K", "KE", "KEY=", "OPENAI_API_KEY=", "x" * 70])
def test_base64_of_a_text_holding_a_secret_is_redacted_at_any_alignment(prefix: str) -> None:
    redaction.register(ENCODED_SECRET)
    document = f"{prefix}{ENCODED_SECRET}\nmore\n".encode()
    wrapped = base64.encodebytes(
        document
    ).decode()  # broken into 76-character lines, as `base64` does
    shown = redact(wrapped)
    assert MASK in shown
    joined = shown.replace("\n", "")
    assert not any(form in joined for form in redaction.encodings(ENCODED_SECRET))


def test_hex_and_url_encoded_forms_of_a_secret_are_redacted() -> None:
    redaction.register(ENCODED_SECRET)
    raw = f"TOKEN={ENCODED_SECRET}".encode()
    xxd_plain = "\n".join(raw.hex()[i : i + 60] for i in range(0, len(raw.hex()), 60))
    for shown in (raw.hex(), raw.hex().upper(), xxd_plain, quote(ENCODED_SECRET, safe="")):
        assert ENCODED_SECRET.encode().hex() not in redact(shown).replace("\n", "").lower()
        assert MASK in redact(shown)


def test_a_token_anywhere_in_config_is_a_secret(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(
        "gateway:\n  api_key: gw-key-8c1e55aa0b\n", encoding="utf-8"
    )
    register_secrets(load_config(tmp_path / "config.yaml"), tmp_path)
    assert redact("key gw-key-8c1e55aa0b") == f"key {MASK}"
    assert MASK in redact(base64.b64encode(b"api_key: gw-key-8c1e55aa0b").decode())


def _streamed(pieces: list[str]) -> list[str]:
    sent: list[str] = []
    stream = redaction.StreamRedactor(sent.append)
    for piece in pieces:
        stream.feed(piece)
    stream.flush()
    return sent


@pytest.mark.parametrize("size", [1, 3, 7, 64])
def test_a_streamed_answer_never_carries_a_secret_split_across_pieces(size: int) -> None:
    """A streamed answer (issue 54): the secret, its base64, hex and URL-encoded forms and
    an unregistered key shape, each cut across pieces of every size, never go out."""
    secret = f"stream-secret-{uuid.uuid4().hex[:12]}/x+y"
    redaction.register(secret)
    answer = (
        f"Here: {secret} and {base64.b64encode(secret.encode()).decode()} and "
        f"{secret.encode().hex()} and {quote(secret, safe='')} and {KEY_SHAPES['groq']} done."
    )
    pieces = [answer[i : i + size] for i in range(0, len(answer), size)]
    sent = _streamed(pieces)
    joined = "".join(sent)
    for form in (secret, secret.encode().hex(), quote(secret, safe=""), KEY_SHAPES["groq"]):
        assert form not in joined
    assert base64.b64encode(secret.encode()).decode()[4:-4] not in joined
    assert joined.startswith("Here: [redacted] and") and joined.endswith(" done.")
    assert all(MASK[:3] not in piece or MASK in piece for piece in sent)  # no mask cut


def test_a_streamed_ordinary_text_goes_out_whole_and_in_order() -> None:
    text = "Ordinary words, no secret at all: 42 apples.\nNext line."
    sent = _streamed([text[i : i + 5] for i in range(0, len(text), 5)])
    assert "".join(sent) == text
    assert len(sent) > 1  # it streams: not all held until the end
