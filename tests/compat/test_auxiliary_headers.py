"""agent.auxiliary_client's attribution helpers: what 0.19's ``build_or_headers``,
``build_nvidia_nim_headers`` and ``NOUS_EXTRA_BODY`` give a caller that sends its own
request to OpenRouter, NVIDIA NIM or Nous Portal."""

from __future__ import annotations

from pathlib import Path

import pytest

ATTRIBUTION = {
    "HTTP-Referer": "https://hermes-agent.nousresearch.com",
    "X-Title": "Hermes Agent",
    "X-OpenRouter-Categories": "productivity,cli-agent",
}


@pytest.fixture(autouse=True)
def _no_cache_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_OPENROUTER_CACHE", raising=False)
    monkeypatch.delenv("HERMES_OPENROUTER_CACHE_TTL", raising=False)


def test_openrouter_headers_without_caching_are_the_attribution_alone() -> None:
    from agent.auxiliary_client import build_or_headers

    assert build_or_headers({}) == ATTRIBUTION
    assert build_or_headers({"response_cache": False, "response_cache_ttl": 60}) == ATTRIBUTION


def test_openrouter_response_cache_from_the_section_given() -> None:
    from agent.auxiliary_client import build_or_headers

    cached = {**ATTRIBUTION, "X-OpenRouter-Cache": "true"}
    assert build_or_headers({"response_cache": True, "response_cache_ttl": 60}) == {
        **cached,
        "X-OpenRouter-Cache-TTL": "60",
    }
    # 300 s when no time to live is set; none sent outside 1 s .. a day.
    assert build_or_headers({"response_cache": True})["X-OpenRouter-Cache-TTL"] == "300"
    assert build_or_headers({"response_cache": True, "response_cache_ttl": 0}) == cached
    assert build_or_headers({"response_cache": True, "response_cache_ttl": 86_401}) == cached


def test_openrouter_cache_variables_win_over_the_section(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent.auxiliary_client import build_or_headers

    monkeypatch.setenv("HERMES_OPENROUTER_CACHE", "off")
    assert build_or_headers({"response_cache": True}) == ATTRIBUTION
    monkeypatch.setenv("HERMES_OPENROUTER_CACHE", "yes")
    monkeypatch.setenv("HERMES_OPENROUTER_CACHE_TTL", "120")
    headers = build_or_headers({"response_cache": False, "response_cache_ttl": 60})
    assert headers["X-OpenRouter-Cache"] == "true"
    assert headers["X-OpenRouter-Cache-TTL"] == "120"
    monkeypatch.setenv("HERMES_OPENROUTER_CACHE_TTL", "soon")  # not a number: no TTL sent
    assert "X-OpenRouter-Cache-TTL" not in build_or_headers({"response_cache_ttl": 60})


def test_openrouter_headers_read_the_homes_openrouter_section(hermes_home: Path) -> None:
    """Without a section given, config.yaml's ``openrouter`` over 0.19's defaults (caching
    on, 300 s)."""
    from agent.auxiliary_client import build_or_headers

    assert build_or_headers()["X-OpenRouter-Cache-TTL"] == "300"
    (hermes_home / "config.yaml").write_text(
        "openrouter:\n  response_cache: true\n  response_cache_ttl: 900\n", encoding="utf-8"
    )
    assert build_or_headers()["X-OpenRouter-Cache-TTL"] == "900"
    (hermes_home / "config.yaml").write_text(
        "openrouter:\n  response_cache: false\n", encoding="utf-8"
    )
    assert build_or_headers() == ATTRIBUTION


@pytest.mark.parametrize(
    ("base_url", "headers"),
    [
        ("https://integrate.api.nvidia.com/v1", {"X-BILLING-INVOKE-ORIGIN": "HermesAgent"}),
        ("integrate.api.nvidia.com", {"X-BILLING-INVOKE-ORIGIN": "HermesAgent"}),
        ("https://eu.integrate.api.nvidia.com/v1", {"X-BILLING-INVOKE-ORIGIN": "HermesAgent"}),
        ("http://nim.lan:8000/v1", {}),  # an on-premises NIM is billed by nobody
        ("https://proxy.example/integrate.api.nvidia.com/v1", {}),
        ("https://integrate.api.nvidia.com.example/v1", {}),
        (None, {}),
    ],
)
def test_nvidia_nim_billing_header_only_for_nvidias_cloud(
    base_url: str | None, headers: dict[str, str]
) -> None:
    from agent.auxiliary_client import build_nvidia_nim_headers

    assert build_nvidia_nim_headers(base_url) == headers


def test_nous_extra_body_is_the_portal_tags_of_this_client() -> None:
    from agent.auxiliary_client import NOUS_EXTRA_BODY

    from hermes import __version__

    assert list(NOUS_EXTRA_BODY) == ["tags"]
    assert NOUS_EXTRA_BODY["tags"] == [
        "product=hermes-agent",
        f"client=hermes-client-v{__version__}",
    ]
