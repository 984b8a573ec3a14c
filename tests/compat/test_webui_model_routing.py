"""hermes-webui's provider routing and in-chat model switch, called as it calls them.

The web UI asks ``hermes_cli.runtime_provider.resolve_runtime_provider(requested=...)``
for the endpoint and key of a chat's provider and builds ``run_agent.AIAgent`` with
them; for some providers it switches a live agent with
``agent.switch_model(model, provider, api_key=, base_url=, api_mode=)``. Real home,
real store, real HTTP to the fake model servers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_state import SessionDB
from run_agent import AIAgent
from tests.fakes import llm_server as fake

RUNTIME_KEYS = {"provider", "api_mode", "base_url", "api_key", "source", "requested_provider"}


def write_home(home: Path, config: str, dotenv: str = "") -> None:
    (home / "config.yaml").write_text(config, encoding="utf-8")
    if dotenv:
        (home / ".env").write_text(dotenv, encoding="utf-8")


def resolve(**kwargs: Any) -> dict[str, Any]:
    """As hermes-webui's api/streaming.py calls it (keywords only)."""
    from hermes_cli.runtime_provider import resolve_runtime_provider

    return resolve_runtime_provider(**kwargs)


def test_the_configured_endpoint_and_its_key(hermes_home: Path) -> None:
    write_home(
        hermes_home,
        "model:\n  default: local-model\n  base_url: http://127.0.0.1:9/v1/\n",
        "OPENAI_API_KEY=sk-from-dotenv\n",
    )
    runtime = resolve(requested=None, target_model="local-model")
    assert set(runtime) == RUNTIME_KEYS
    assert runtime == {
        "provider": "custom",
        "api_mode": "chat_completions",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "sk-from-dotenv",
        "source": "env/config",
        "requested_provider": "auto",
    }
    assert resolve(requested="custom")["api_key"] == "sk-from-dotenv"


def test_a_configured_provider_name_and_another_known_one(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_home(hermes_home, "model:\n  provider: deepseek\n  api_key: sk-in-config\n")
    monkeypatch.setenv("HERMES_API_KEY", "sk-from-env")
    own = resolve()
    assert (own["provider"], own["base_url"], own["api_key"]) == (
        "deepseek",
        "https://api.deepseek.com/v1",
        "sk-from-env",
    )
    assert resolve(requested="DeepSeek")["api_key"] == "sk-from-env"
    # Another provider hermes knows: its endpoint, and not the key meant for deepseek.
    other = resolve(requested="openai")
    assert (other["provider"], other["base_url"], other["api_key"]) == (
        "openai",
        "https://api.openai.com/v1",
        "",
    )
    explicit = resolve(requested="openai", explicit_api_key="sk-given")
    assert (explicit["api_key"], explicit["source"]) == ("sk-given", "explicit")


def test_the_key_goes_only_to_the_endpoint_it_is_for(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_home(hermes_home, "model:\n  default: openai/gpt-4o-mini\n")  # OpenRouter, by default
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or")
    routed = resolve(requested="openrouter")
    assert (routed["base_url"], routed["api_key"]) == ("https://openrouter.ai/api/v1", "sk-or")
    elsewhere = resolve(requested=None, explicit_base_url="http://127.0.0.1:3/v1")
    assert (elsewhere["base_url"], elsewhere["api_key"], elsewhere["source"]) == (
        "http://127.0.0.1:3/v1",
        "",
        "explicit",
    )


def test_an_unknown_provider_is_refused_as_0_19_refuses_it(hermes_home: Path) -> None:
    from hermes_cli.runtime_provider import AuthError

    write_home(hermes_home, "model:\n  default: m\n")
    with pytest.raises(RuntimeError, match=r"^Unknown provider 'nope'\.") as caught:
        resolve(requested="nope")
    assert isinstance(caught.value, AuthError)
    assert caught.value.code == "invalid_provider"
    assert "model.base_url" in str(caught.value)


def test_each_call_reads_the_home_of_its_context(hermes_home: Path, tmp_path: Path) -> None:
    from hermes_constants import reset_hermes_home_override, set_hermes_home_override

    write_home(hermes_home, "model:\n  base_url: http://127.0.0.1:1/v1\n")
    profile = tmp_path / "profiles" / "coder"
    profile.mkdir(parents=True)
    write_home(profile, "model:\n  base_url: http://127.0.0.1:2/v1\n", "HERMES_API_KEY=sk-coder\n")
    token = set_hermes_home_override(profile)
    try:
        runtime = resolve(requested=None)
    finally:
        reset_hermes_home_override(token)
    assert (runtime["base_url"], runtime["api_key"]) == ("http://127.0.0.1:2/v1", "sk-coder")
    assert resolve(requested=None)["base_url"] == "http://127.0.0.1:1/v1"


def test_the_webui_builds_its_agent_from_the_answer_and_reaches_the_endpoint(
    hermes_home: Path,
) -> None:
    with fake.FakeLLMServer(api_key="sk-routed") as server:
        write_home(hermes_home, f"model:\n  base_url: {server.url}\n", "HERMES_API_KEY=sk-routed\n")
        server.script(fake.text("Routed."))
        runtime = resolve(requested=None, target_model=fake.DEFAULT_MODEL)
        with SessionDB(db_path=hermes_home / "state.db") as db:
            agent = AIAgent(
                model=fake.DEFAULT_MODEL,
                provider=runtime["provider"],
                base_url=runtime["base_url"],
                api_key=runtime["api_key"],
                api_mode=runtime["api_mode"],
                platform="webui",
                quiet_mode=True,
                session_id="webui-routed",
                session_db=db,
            )
            result = agent.run_conversation(user_message="hello", task_id="webui-routed")
    assert result["final_response"] == "Routed."
    assert len(server.requests) == 1


# -- switch_model ---------------------------------------------------------------------------


@pytest.fixture
def servers() -> Iterator[tuple[fake.FakeLLMServer, fake.FakeLLMServer]]:
    """The chat's endpoint, and another one that wants its own key."""
    with (
        fake.FakeLLMServer() as first,
        fake.FakeLLMServer(api_key="sk-second", models=["second-model"]) as second,
    ):
        yield first, second


def webui_agent(db: SessionDB, server: fake.FakeLLMServer, session_id: str) -> AIAgent:
    return AIAgent(
        model=fake.DEFAULT_MODEL,
        provider="custom",
        base_url=server.url,
        api_key="sk-first",
        platform="webui",
        quiet_mode=True,
        session_id=session_id,
        session_db=db,
    )


def test_switch_model_sends_the_next_turn_to_the_new_endpoint(
    hermes_home: Path, servers: tuple[fake.FakeLLMServer, fake.FakeLLMServer]
) -> None:
    first, second = servers
    first.script(fake.text("From the first."))
    second.script(fake.text("From the second."))
    with SessionDB(db_path=hermes_home / "state.db") as db:
        agent = webui_agent(db, first, "webui-switch")
        assert agent.run_conversation(user_message="one")["final_response"] == "From the first."
        # hermes-webui's call (api/streaming.py _refresh_cached_agent_runtime).
        agent.switch_model(
            "second-model",
            "openrouter",
            api_key="sk-second",
            base_url=second.url,
            api_mode="chat_completions",
        )
        result = agent.run_conversation(user_message="two")
        stored_model = db.get_session("webui-switch")["model"]
    assert result["final_response"] == "From the second."
    assert (result["model"], result["provider"], result["base_url"]) == (
        "second-model",
        "openrouter",
        second.url,
    )
    assert len(first.requests) == 1
    assert [r["model"] for r in second.requests] == ["second-model"]
    assert stored_model == "second-model"
    assert agent.context_compressor.model == "second-model"


def test_switch_model_on_the_same_provider_keeps_the_endpoint(
    hermes_home: Path, servers: tuple[fake.FakeLLMServer, fake.FakeLLMServer]
) -> None:
    first, _ = servers
    first.script(fake.text("Still here."))
    with SessionDB(db_path=hermes_home / "state.db") as db:
        agent = webui_agent(db, first, "webui-same")
        # Before the first turn: the segment is then stored with the new model.
        agent.switch_model("other-model", "custom", api_key="", base_url="", api_mode="")
        agent.run_conversation(user_message="hi")
        stored_model = db.get_session("webui-same")["model"]
    assert [r["model"] for r in first.requests] == ["other-model"]
    assert stored_model == "other-model"


@pytest.mark.parametrize(
    ("provider", "base_url", "api_mode", "said"),
    [
        ("anthropic", "", "", "no base_url given for provider 'anthropic'"),
        ("custom", "http://127.0.0.1:1/v1", "anthropic_messages", "only the chat_completions"),
    ],
)
def test_a_switch_hermes_cannot_make_changes_nothing(
    hermes_home: Path,
    servers: tuple[fake.FakeLLMServer, fake.FakeLLMServer],
    provider: str,
    base_url: str,
    api_mode: str,
    said: str,
) -> None:
    first, _ = servers
    first.script(fake.text("Unchanged."))
    with SessionDB(db_path=hermes_home / "state.db") as db:
        agent = webui_agent(db, first, "webui-refused")
        with pytest.raises(ValueError, match=said):
            agent.switch_model("x-model", provider, base_url=base_url, api_mode=api_mode)
        agent.run_conversation(user_message="hi")
    assert (agent.model, agent.provider, agent.base_url) == (
        fake.DEFAULT_MODEL,
        "custom",
        first.url,
    )
    assert [r["model"] for r in first.requests] == [fake.DEFAULT_MODEL]


def test_a_named_endpoint_of_config_yaml_is_found_and_resolved_as_0_19(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """config.yaml's ``providers:`` and 0.19's older ``custom_providers:`` name endpoints:
    asked for by name or ``custom:<name>``, one answers its own URL and key; the identity
    helpers find it by URL or by the configured provider, as 0.19's do."""
    from hermes_cli.runtime_provider import (
        OPENROUTER_BASE_URL,
        canonical_custom_identity,
        find_custom_provider_identity,
        has_named_custom_provider,
    )

    monkeypatch.setenv("LAB_KEY", "sk-lab")
    write_home(
        hermes_home,
        "model:\n  default: m\n  provider: Lab Box\n  base_url: http://127.0.0.1:9/v1\n"
        "providers:\n"
        "  Lab Box:\n    api: http://10.0.0.5:8000/v1/\n    key_env: LAB_KEY\n"
        "  old-box:\n    api: http://10.0.0.6:8000/v1\n    enabled: false\n"
        "  deepseek:\n    api: http://10.0.0.7:8000/v1\n"
        "custom_providers:\n  - name: Legacy\n    base_url: http://10.0.0.8/v1\n"
        "    api_key: sk-legacy\n",
    )
    assert has_named_custom_provider("lab-box") and has_named_custom_provider("custom:lab-box")
    assert has_named_custom_provider("legacy")
    assert not has_named_custom_provider("old-box")  # switched off
    assert not has_named_custom_provider("deepseek")  # the provider hermes knows wins
    assert has_named_custom_provider("custom:deepseek")
    assert not has_named_custom_provider("nowhere")

    assert find_custom_provider_identity("HTTP://10.0.0.5:8000/v1") == "custom:lab-box"
    assert find_custom_provider_identity("http://10.0.0.8/v1/") == "custom:legacy"
    assert find_custom_provider_identity("http://10.0.0.6:8000/v1") is None
    assert canonical_custom_identity(base_url="http://10.0.0.8/v1") == "custom:legacy"
    assert canonical_custom_identity() == "custom:lab-box"  # model.provider names it
    assert canonical_custom_identity(config_provider="openrouter") is None

    lab = resolve(requested="custom:lab-box")
    assert (lab["provider"], lab["base_url"], lab["api_key"]) == (
        "custom",
        "http://10.0.0.5:8000/v1",
        "sk-lab",
    )
    legacy = resolve(requested="Legacy")
    assert (legacy["base_url"], legacy["api_key"]) == ("http://10.0.0.8/v1", "sk-legacy")
    elsewhere = resolve(requested="legacy", explicit_base_url="http://10.9.9.9/v1")
    assert elsewhere["api_key"] == ""  # an endpoint's key goes to that endpoint only
    assert OPENROUTER_BASE_URL == "https://openrouter.ai/api/v1"
