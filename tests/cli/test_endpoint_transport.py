"""A config.yaml carried over from Hermes Agent whose endpoint sits behind an access proxy
(``extra_headers``) or has a private certificate (``ssl_ca_cert``, ``ssl_verify``) in its
``providers``/``custom_providers`` entry: hermes's own chat sends those headers and checks
the certificate that way, as Hermes Agent's client does, over real HTTP and HTTPS."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import assert_one_line_error


def test_a_chat_sends_the_headers_of_the_endpoints_provider_entry(hermes, cli_env, fake_llm):
    (cli_env.home / "config.yaml").write_text(
        f"providers:\n  gated:\n    api: {fake_llm.url.upper()}/\n"  # case and slash aside
        "    extra_headers:\n      CF-Access-Client-Id: id-1\n"
        "      CF-Access-Client-Secret: secret-value-123456\n"
        "  other:\n    api: https://elsewhere.example/v1\n"
        "    extra_headers: {X-Not-Mine: 'no'}\n",
        encoding="utf-8",
    )
    result = hermes("chat", "-q", "hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "echo: hello\n"
    sent = fake_llm.request_headers[-1]
    assert sent["cf-access-client-id"] == "id-1"
    assert sent["cf-access-client-secret"] == "secret-value-123456"
    assert "x-not-mine" not in sent


def test_a_chat_checks_the_certificate_as_the_provider_entry_says(
    hermes, cli_env, https_endpoint: tuple[str, Path]
):
    url, cert = https_endpoint
    cli_env.vars["HERMES_BASE_URL"] = url
    config = cli_env.home / "config.yaml"
    config.write_text("model:\n  max_retries: 0\n", encoding="utf-8")
    assert_one_line_error(hermes("chat", "-q", "hi"))  # no CA the system trusts signed it

    config.write_text(
        f"model:\n  max_retries: 0\ncustom_providers:\n  - name: lab\n    base_url: {url}\n"
        f"    ssl_ca_cert: {cert}\n",
        encoding="utf-8",
    )
    result = hermes("chat", "-q", "hi")
    assert (result.returncode, result.stdout) == (0, "over tls\n"), result.stderr

    config.write_text(
        f"model:\n  max_retries: 0\nproviders:\n  lab:\n    api: {url}\n    ssl_verify: false\n",
        encoding="utf-8",
    )
    result = hermes("chat", "-q", "hi")
    assert (result.returncode, result.stdout) == (0, "over tls\n"), result.stderr


def test_doctor_and_models_reach_an_endpoint_with_a_private_certificate(
    hermes, cli_env, https_endpoint: tuple[str, Path]
):
    url, cert = https_endpoint
    cli_env.vars["HERMES_BASE_URL"] = url
    cli_env.vars["HERMES_MODEL"] = "m"
    (cli_env.home / "config.yaml").write_text(
        f"custom_providers:\n  - name: lab\n    base_url: {url}\n    ssl_ca_cert: {cert}\n",
        encoding="utf-8",
    )
    listed = hermes("models")
    assert (listed.returncode, listed.stdout.split()) == (0, ["*", "m"]), listed.stderr
    doctor = hermes("doctor")
    assert f"ok    endpoint: {url} answers (1 model)." in doctor.stdout, doctor.stdout


def test_a_providers_header_values_are_secrets_to_the_redactor(hermes_home):
    from hermes import redaction
    from hermes.config import endpoint_transport, load_config

    (hermes_home / "config.yaml").write_text(
        "model:\n  base_url: https://gated.example/v1\n"
        "custom_providers:\n  - base_url: https://gated.example/v1/\n"
        "    extra_headers: {X-Gate: gate-secret-0123456789}\n",
        encoding="utf-8",
    )
    config = load_config()
    transport = endpoint_transport(config, config.get("model.base_url"))
    assert transport.headers == (("X-Gate", "gate-secret-0123456789"),)
    assert "gate-secret" not in redaction.redact("the gate said gate-secret-0123456789")
