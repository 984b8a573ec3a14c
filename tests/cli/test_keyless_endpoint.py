"""A keyless model endpoint on another machine (an Ollama or vLLM on the LAN): `hermes`
talks to it as `hermes models` does, instead of asking for a key it does not need.

``0.0.0.0`` reaches this machine's fake model while not being a loopback address, so
hermes treats it as an endpoint elsewhere.
"""

from __future__ import annotations

from hermes.config import API_KEY_ENV


def test_a_keyless_endpoint_elsewhere_is_used_without_a_key(hermes, cli_env, fake_llm) -> None:
    for name in API_KEY_ENV:
        cli_env.vars.pop(name, None)
    cli_env.vars["HERMES_BASE_URL"] = fake_llm.url.replace("127.0.0.1", "0.0.0.0")
    listed = hermes("models")
    assert listed.returncode == 0 and "fake-model" in listed.stdout
    asked = hermes("chat", "-q", "hello over the LAN")
    assert asked.returncode == 0, asked.stderr
    assert "echo: hello over the LAN" in asked.stdout
    assert fake_llm.requests[-1]["messages"][-1]["content"] == "hello over the LAN"
