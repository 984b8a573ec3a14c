"""Hermes Agent 0.19's ``hermes_cli.runtime_provider.PROVIDER_REGISTRY`` and its OAuth
endpoints, read from a real home: the providers hermes knows with 0.19's names and URLs,
config.yaml's named endpoints, and 0.19's sign-in providers, which hermes refuses."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from hermes.config import API_KEY_ENV

CONFIG = """\
model:
  provider: deepseek
providers:
  mylab:
    name: My Lab
    base_url: http://127.0.0.1:9/v1/
    key_env: LAB_KEY
"""

THEIRS = """
import json
from hermes_cli.runtime_provider import PROVIDER_REGISTRY as R
print(json.dumps({k: [p.name, p.inference_base_url, p.auth_type] for k, p in R.items()}))
"""


def test_the_registry_lists_what_hermes_reaches_in_0_19s_shape(
    hermes_home: Path, tmp_path: Path, hermes_agent_python: Path
) -> None:
    from hermes_cli.runtime_provider import (
        DEFAULT_CODEX_BASE_URL,
        DEFAULT_QWEN_BASE_URL,
        DEFAULT_XAI_OAUTH_BASE_URL,
        PROVIDER_REGISTRY,
        AuthError,
        resolve_runtime_provider,
    )

    (hermes_home / "config.yaml").write_text(CONFIG, encoding="utf-8")
    registry = dict(PROVIDER_REGISTRY)
    # The configured endpoint carries the key variables hermes reads; the others none.
    assert registry["deepseek"].api_key_env_vars == tuple(API_KEY_ENV)
    assert registry["xai"].api_key_env_vars == () and registry["xai"].auth_type == "api_key"
    lab = registry["mylab"]
    assert (lab.name, lab.inference_base_url, lab.api_key_env_vars) == (
        "My Lab",
        "http://127.0.0.1:9/v1",
        ("LAB_KEY",),
    )
    assert "openrouter" not in registry and "auto" not in registry  # as in 0.19
    urls = {pid: registry[pid].inference_base_url for pid in ("openai-codex", "qwen-oauth")}
    assert urls == {"openai-codex": DEFAULT_CODEX_BASE_URL, "qwen-oauth": DEFAULT_QWEN_BASE_URL}
    assert registry["xai-oauth"].inference_base_url == DEFAULT_XAI_OAUTH_BASE_URL
    with pytest.raises(AuthError, match="signs in to none"):
        resolve_runtime_provider(requested="openai-codex")

    # Each provider both list is named, reached and signed in to as in 0.19 (but Nous,
    # which hermes reaches with a key where 0.19 signs in).
    ran = subprocess.run(
        [str(hermes_agent_python), "-c", THEIRS],
        env={**os.environ, "HERMES_HOME": str(tmp_path), "HERMES_DISABLE_LAZY_INSTALLS": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    theirs = json.loads(ran.stdout.strip().splitlines()[-1])
    shared = sorted(set(registry) & set(theirs))
    assert len(shared) == len(registry) - 1  # all but config.yaml's own endpoint
    for pid in shared:
        ours = [registry[pid].name, registry[pid].inference_base_url, registry[pid].auth_type]
        if pid == "nous":
            assert ours[:2] == theirs[pid][:2] and ours[2] == "api_key"
        else:
            assert ours == theirs[pid], pid
