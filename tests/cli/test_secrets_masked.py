"""`hermes config show|get` and `hermes sessions show|export` print no secret, run as a user would."""

from __future__ import annotations

import json

import yaml

from hermes.state import SessionDB

TELEGRAM = "123456789:AAtelegram-token-printed-nowhere-x"
SLACK_BOT, SLACK_APP = "xoxb-1111-2222-printed-nowhere", "xapp-1-A0-printed-nowhere-abc"
DISCORD = "discord-token-printed-nowhere"
GATEWAY_KEY = "gateway-key-printed-nowhere"
DB_PASSWORD = "db-password-printed-nowhere"
SECRETS = (TELEGRAM, SLACK_BOT, SLACK_APP, DISCORD, GATEWAY_KEY, DB_PASSWORD)


def write_secret_config(cli_env) -> None:
    config = {
        "state": {"url": f"postgresql://hermes:{DB_PASSWORD}@db.example:5432/hermes"},
        "gateway": {
            "api_key": GATEWAY_KEY,
            "platforms": {
                "telegram": {"token": TELEGRAM, "allowed_users": [42]},
                "slack": {"bot_token": SLACK_BOT, "app_token": SLACK_APP},
                "discord": {"token": DISCORD},
            },
        },
    }
    (cli_env.home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def test_config_show_masks_every_secret(hermes, cli_env) -> None:
    write_secret_config(cli_env)
    for args in (("config", "show"), ("config", "show", "--json")):
        shown = hermes(*args)
        assert shown.returncode == 0, shown.stderr
        assert [s for s in SECRETS if s in shown.stdout] == []
    tree = yaml.safe_load(hermes("config", "show").stdout)
    platforms = tree["gateway"]["platforms"]
    assert platforms["telegram"] == {"token": "[redacted]", "allowed_users": [42]}
    assert platforms["slack"] == {"bot_token": "[redacted]", "app_token": "[redacted]"}
    assert tree["state"]["url"] == "postgresql://hermes:[redacted]@db.example:5432/hermes"


def test_config_get_masks_secrets_at_every_depth(hermes, cli_env) -> None:
    write_secret_config(cli_env)
    token = hermes("config", "get", "gateway.platforms.telegram.token")
    assert token.returncode == 0, token.stderr
    assert token.stdout.strip() == "[redacted]"
    users = hermes("config", "get", "gateway.platforms.telegram.allowed_users")
    assert json.loads(users.stdout) == [42]
    for key in ("gateway", "gateway.platforms", "gateway.api_key", "state.url", "state"):
        shown = hermes("config", "get", key)
        assert shown.returncode == 0, shown.stderr
        assert [s for s in SECRETS if s in shown.stdout] == [], key


def test_sessions_show_and_export_scrub_secrets_stored_before(hermes, cli_env) -> None:
    """A row written before tool results were scrubbed (or by an older hermes)."""
    model_key = "sk-or-v1-0123456789abcdef0123456789abcdef"
    dotenv_value = "credential-from-dotenv-0123"
    (cli_env.home / ".env").write_text(f"SERVICE_CREDENTIAL={dotenv_value}\n", encoding="utf-8")
    cli_env.vars["TELEGRAM_BOT_TOKEN"] = TELEGRAM
    with SessionDB(db_path=cli_env.home / "state.db") as db:
        conversation = db.create_session(source="telegram", title="Leaky")
        db.append_message(conversation, "user", "run env")
        leaked = f"TELEGRAM_BOT_TOKEN={TELEGRAM}\nKEY={model_key}\nSERVICE={dotenv_value}"
        db.append_message(conversation, "assistant", leaked)
    for args in (("export", conversation), ("export", conversation, "--format", "md"),
                 ("show", conversation)):  # fmt: skip
        result = hermes("sessions", *args)
        assert result.returncode == 0, result.stderr
        assert "TELEGRAM_BOT_TOKEN=[redacted]" in result.stdout
        assert [s for s in (TELEGRAM, model_key, dotenv_value) if s in result.stdout] == []
