"""``hermes.testing`` stands on its own: importing it needs neither pytest nor the
repository's tests, and the suite's old import name is the same server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import hermes.testing
from hermes.testing import llm_server
from tests.fakes import llm_server as old_name

PROBE = (
    "import json, sys, hermes.testing; "
    "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
    "('pytest', '_pytest', 'tests', 'openai'))))"
)


def test_importing_hermes_testing_pulls_no_test_only_module(tmp_path: Path) -> None:
    # Run away from the repository, as a user's project would.
    found = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert json.loads(found.stdout) == []


def test_the_suites_import_name_is_the_shipped_server() -> None:
    assert old_name.FakeLLMServer is llm_server.FakeLLMServer
    assert old_name.content_text is llm_server.content_text
    assert set(old_name.__all__) == set(llm_server.__all__)
    assert hermes.testing.FakeLLMServer is llm_server.FakeLLMServer


def test_the_shipped_server_answers_the_openai_client() -> None:
    import openai

    with llm_server.FakeLLMServer() as server:
        server.script(llm_server.text("hi from the package"))
        client = openai.OpenAI(api_key="k", base_url=server.url)
        answer = client.chat.completions.create(
            model=llm_server.DEFAULT_MODEL, messages=[{"role": "user", "content": "hello"}]
        )
    assert answer.choices[0].message.content == "hi from the package"
    assert server.requests[0]["messages"] == [{"role": "user", "content": "hello"}]
