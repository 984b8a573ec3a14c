"""pytest fixtures for the fake OpenAI-compatible server (and an HTTPS endpoint).

``tests/conftest.py`` loads this module as a plugin (``pytest_plugins``), so its
fixtures are available to the whole suite.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hermes.testing.llm_server import FakeLLMServer
from tests.fakes.https_endpoint import https_endpoint

__all__ = ["fake_llm", "https_endpoint"]


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A started fake server with an empty script, stopped after the test.

    Point a client at ``fake_llm.url``; script it with ``fake_llm.enqueue(...)``.
    """
    with FakeLLMServer() as server:
        yield server
