"""Hermes Agent 0.19's per-provider TLS, headers and context length (``hermes_cli.config``),
read from a real config.yaml, and honoured by the openai clients hermes makes for 0.19's
tools (``agent.auxiliary_client.resolve_provider_client``) on real HTTP and HTTPS."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import openai
import pytest

PROVIDERS = """\
providers:
  work:
    api: HTTPS://LLM.Example.com/v1/
    extra_headers: {{CF-Access-Client-Id: abc, X-Empty: null}}
    ssl_verify: "no"
    models:
      big: {{context_length: 200000}}
      odd: {{context_length: lots}}
custom_providers:
  - name: lab
    base_url: {lab}
    ssl_ca_cert: " /etc/lab-ca.pem "
    models:
      small: {{context_length: 8192}}
"""


def test_provider_settings_read_as_0_19_reads_them(hermes_home: Path) -> None:
    from hermes_cli.config import (
        apply_custom_provider_extra_headers_to_client_kwargs,
        apply_custom_provider_tls_to_client_kwargs,
        clear_model_endpoint_credentials,
        get_custom_provider_context_length,
        get_custom_provider_extra_headers,
        get_custom_provider_tls_settings,
    )

    (hermes_home / "config.yaml").write_text(
        PROVIDERS.format(lab="http://10.0.0.5:8080/v1"), encoding="utf-8"
    )
    work = "https://llm.example.com/v1"  # the entry's URL, case and slash aside
    assert get_custom_provider_tls_settings(work) == {"ssl_verify": False}
    assert get_custom_provider_tls_settings("http://10.0.0.5:8080/v1/") == {
        "ssl_ca_cert": "/etc/lab-ca.pem"
    }
    assert get_custom_provider_tls_settings("https://elsewhere/v1") == {}
    assert get_custom_provider_extra_headers(work) == {"CF-Access-Client-Id": "abc"}
    kwargs = {"default_headers": {"CF-Access-Client-Id": "old", "User-Agent": "tool"}}
    apply_custom_provider_extra_headers_to_client_kwargs(kwargs, work)
    apply_custom_provider_tls_to_client_kwargs(kwargs, work)
    assert kwargs == {
        "default_headers": {"CF-Access-Client-Id": "abc", "User-Agent": "tool"},
        "ssl_verify": False,
    }
    assert get_custom_provider_context_length("small", "http://10.0.0.5:8080/v1") == 8192
    assert get_custom_provider_context_length("big", "https://llm.example.com/v1") is None
    assert get_custom_provider_context_length("odd", "HTTPS://LLM.Example.com/v1") is None
    assert get_custom_provider_context_length("big", "HTTPS://LLM.Example.com/v1") == 200000
    listed = [{"base_url": "http://x/v1", "extra_headers": {"A": 1}}]
    assert get_custom_provider_extra_headers("http://x/v1", listed) == {"A": "1"}

    model = {"default": "m", "api_key": "sk-x", "api": "sk-y", "api_mode": "r", "base_url": "u"}
    assert clear_model_endpoint_credentials(model) is model
    assert model == {"default": "m", "base_url": "u"}
    assert clear_model_endpoint_credentials(model, clear_base_url=True) == {"default": "m"}


def test_a_providers_extra_headers_reach_its_endpoint(hermes_home: Path, fake_llm) -> None:
    from agent.auxiliary_client import resolve_provider_client

    (hermes_home / "config.yaml").write_text(
        f"model:\n  default: fake-model\n  base_url: {fake_llm.url}\n"
        f"providers:\n  mine:\n    api: {fake_llm.url}/\n"
        "    extra_headers:\n      X-Proxy-Auth: let-me-in\n",
        encoding="utf-8",
    )
    client, model = resolve_provider_client("main")
    answer = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}]
    )
    assert answer.choices[0].message.content == "echo: hi"
    assert fake_llm.request_headers[-1]["x-proxy-auth"] == "let-me-in"


def test_a_providers_ca_and_verify_settings_reach_the_tls_check(
    hermes_home: Path, https_endpoint: tuple[str, Path]
) -> None:
    from agent.auxiliary_client import resolve_provider_client

    url, cert = https_endpoint

    def ask(entry: str) -> str | None:
        (hermes_home / "config.yaml").write_text(
            f"model:\n  default: m\n  base_url: {url}\n  max_retries: 0\n"
            f"custom_providers:\n  - name: lab\n    base_url: {url}\n{entry}",
            encoding="utf-8",
        )
        client, model = resolve_provider_client("main")
        answer = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}]
        )
        return answer.choices[0].message.content

    with pytest.raises(openai.APIConnectionError):
        ask("")  # a certificate no CA the system trusts signed: refused
    assert ask(f"    ssl_ca_cert: {cert}\n") == "over tls"
    assert ask("    ssl_verify: false\n") == "over tls"


# The questions, asked of ``c`` (0.19's module there, the facade here).
ANSWERS = """
def answers(c, tree):
    urls = ["https://llm.example.com/v1", "HTTPS://LLM.Example.com/v1",
            "http://10.0.0.5:8080/v1/", "https://elsewhere/v1"]
    kwargs = {"default_headers": {"CF-Access-Client-Id": "old"}}
    c.apply_custom_provider_extra_headers_to_client_kwargs(kwargs, urls[0])
    c.apply_custom_provider_tls_to_client_kwargs(kwargs, urls[2])
    return {
        "tls": [c.get_custom_provider_tls_settings(u) for u in urls],
        "headers": [c.get_custom_provider_extra_headers(u) for u in urls],
        "context": [c.get_custom_provider_context_length(m, u)
                    for m in ("big", "odd", "small") for u in urls],
        "kwargs": kwargs,
        "redacted": c.redact_config_value(tree),
        "keys": [c.redact_key(k) for k in ("sk-proj-abcdef1234567890", "short", "12345678901")],
        "cleared": c.clear_model_endpoint_credentials(
            {"default": "m", "api_key": "k", "api": "a", "api_mode": "r", "base_url": "u"}),
    }
"""
ASK_0_19 = (
    ANSWERS
    + "import json, sys\nfrom hermes_cli import config\n"
    + "print(json.dumps(answers(config, json.loads(sys.argv[1]))))\n"
)
TREE = {
    "model": {"API_KEY": "sk-or-v1-abcdefghij", "token_count": 5, "Key": "abcdefghijklmnop"},
    "list": [{"password": "hunter2"}, "text", {"bearer": ""}],
    "auth": "x" * 30,
}


def test_provider_helpers_answer_as_0_19_answers(
    hermes_home: Path, hermes_agent_python: Path, tmp_path: Path
) -> None:
    """The same config.yaml, asked the same questions, in a real 0.19 install and here."""
    import hermes_cli.config as ours

    theirs_home = tmp_path / "ha-home"
    for home in (hermes_home, theirs_home):
        home.mkdir(exist_ok=True)
        (home / "config.yaml").write_text(
            PROVIDERS.format(lab="http://10.0.0.5:8080/v1"), encoding="utf-8"
        )
    env = {**os.environ, "HERMES_HOME": str(theirs_home), "HOME": str(tmp_path)}
    run = subprocess.run(
        [str(hermes_agent_python), "-c", ASK_0_19, json.dumps(TREE)],
        env=env, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    theirs = json.loads(run.stdout.strip().splitlines()[-1])
    namespace: dict[str, Any] = {}
    exec(ANSWERS, namespace)  # the very questions asked of 0.19
    assert json.loads(json.dumps(namespace["answers"](ours, TREE))) == theirs


def test_call_llm_takes_the_endpoints_provider_headers_and_certificate_check(
    hermes_home: Path, fake_llm, https_endpoint: tuple[str, Path]
) -> None:
    """0.19's ``call_llm`` (hermes-lcm's summaries) on hermes: the same entry's headers and
    TLS settings as hermes's own chat."""
    from agent.auxiliary_client import call_llm

    hi = [{"role": "user", "content": "hi"}]
    (hermes_home / "config.yaml").write_text(
        f"model:\n  default: fake-model\n  base_url: {fake_llm.url}\n"
        f"providers:\n  mine:\n    api: {fake_llm.url}\n    extra_headers: {{X-Gate: open}}\n",
        encoding="utf-8",
    )
    assert call_llm(messages=hi).choices[0].message.content == "echo: hi"
    assert fake_llm.request_headers[-1]["x-gate"] == "open"

    url, cert = https_endpoint
    for entry, answered in (("", False), (f"ssl_ca_cert: {cert}", True), ("ssl_verify: no", True)):
        (hermes_home / "config.yaml").write_text(
            f"model:\n  default: m\n  base_url: {url}\n  max_retries: 0\n"
            f"custom_providers:\n  - name: lab\n    base_url: {url}\n    {entry}\n",
            encoding="utf-8",
        )
        if answered:
            assert call_llm(messages=hi).choices[0].message.content == "over tls"
        else:
            with pytest.raises(openai.APIConnectionError):
                call_llm(messages=hi)


def test_switch_model_sends_each_endpoint_its_own_headers_only(hermes_home: Path) -> None:
    """hermes-webui's in-chat switch to another endpoint: the gate token of the first is
    never sent to the second, which gets its own entry's."""
    from hermes.testing.llm_server import FakeLLMServer
    from hermes_state import SessionDB
    from run_agent import AIAgent

    with FakeLLMServer() as first, FakeLLMServer() as second, FakeLLMServer() as third:
        (hermes_home / "config.yaml").write_text(
            f"providers:\n  a:\n    api: {first.url}\n    extra_headers: {{X-Gate: first-only}}\n"
            f"  b:\n    api: {second.url}\n    extra_headers: {{X-Gate: second-own}}\n",
            encoding="utf-8",
        )
        with SessionDB(db_path=hermes_home / "state.db") as db:
            agent = AIAgent(
                model="m", provider="custom", base_url=first.url, api_key="k",
                platform="webui", quiet_mode=True, session_id="s1", session_db=db,
            )  # fmt: skip
            agent.run_conversation(user_message="one")
            agent.switch_model("m", "other", api_key="k2", base_url=second.url)
            agent.run_conversation(user_message="two")
            agent.switch_model("m", "plain", api_key="k3", base_url=third.url)
            agent.run_conversation(user_message="three")
    assert first.request_headers[-1]["x-gate"] == "first-only"
    assert second.request_headers[-1]["x-gate"] == "second-own"
    assert "x-gate" not in third.request_headers[-1]
