"""Hermes Agent 0.19's self-describing routes and model aliases, over real HTTP."""

from __future__ import annotations

from pathlib import Path

from tests.gateway.api_calls import call


def test_capabilities_have_the_shape_hermes_agent_clients_check(gateway) -> None:
    status, caps = call(gateway, "GET", "/v1/capabilities")
    assert status == 200
    # What hermes-agent-api-client refuses a server without.
    assert caps["object"] == "hermes.api_server.capabilities"
    assert caps["platform"] == "hermes-agent"
    assert caps["model"] == "fake-model"
    assert caps["auth"] == {"type": "bearer", "required": True}
    features = caps["features"]
    assert features["chat_completions"] is True
    assert features["chat_completions_streaming"] is True
    assert features["responses_api"] is True and features["session_fork"] is True
    for run_feature in ("run_submission", "run_status", "run_events_sse", "run_stop"):
        assert features[run_feature] is True
    assert features["run_approval_response"] is True and features["approval_events"] is True
    assert caps["endpoints"]["runs"] == {"method": "POST", "path": "/v1/runs"}
    assert caps["endpoints"]["run_events"]["path"] == "/v1/runs/{run_id}/events"
    # Truthful: what hermes does not serve says false.
    assert features["jobs_admin"] is True  # the store's scheduled jobs (api_jobs)
    assert caps["endpoints"]["job_run"] == {"method": "POST", "path": "/api/jobs/{job_id}/run"}
    assert features["audio_api"] is False
    assert features["admin_config_rw"] is False
    assert features["session_continuity_header"] == "X-Hermes-Session-Id"
    # Every advertised endpoint is served.
    for name, endpoint in caps["endpoints"].items():
        path = endpoint["path"].replace("{session_id}", "nope").replace("{run_id}", "nope")
        path = path.replace("{job_id}", "0123456789ab")
        if endpoint["method"] == "GET":
            status, _ = call(gateway, "GET", path)
            assert status in (200, 404), name


def test_capabilities_need_the_key(gateway) -> None:
    status, body = call(gateway, "GET", "/v1/capabilities", headers={"Authorization": "Bearer x"})
    assert status == 401 and body["error"]["code"] == "invalid_api_key"


def test_health_detailed_toolsets_and_skills(gateway, hermes_home: Path) -> None:
    status, health = call(gateway, "GET", "/health/detailed")
    assert status == 200 and health["status"] == "ok" and health["platform"] == "hermes-agent"
    assert health["platforms"] == {"api_server": {"state": "connected"}}
    assert isinstance(health["pid"], int) and health["active_agents"] == 0
    status, toolsets = call(gateway, "GET", "/v1/toolsets")
    assert status == 200 and toolsets["object"] == "list"
    by_name = {row["name"]: row for row in toolsets["data"]}
    assert "terminal" in by_name["terminal"]["tools"] and by_name["terminal"]["enabled"] is True
    status, skills = call(gateway, "GET", "/v1/skills")
    assert status == 200 and skills == {"object": "list", "data": []}
    for rel, name in (("zeta", "zeta"), ("devops/alpha", "alpha"), ("devops/beta", "beta")):
        folder = hermes_home / "skills" / rel
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name} work\n---\nx\n")
    status, skills = call(gateway, "GET", "/v1/skills")
    assert status == 200 and skills["data"] == [
        {"name": "zeta", "description": "zeta work", "category": None, "owner": "operator"},
        {"name": "alpha", "description": "alpha work", "category": "devops", "owner": "operator"},
        {"name": "beta", "description": "beta work", "category": "devops", "owner": "operator"},
    ]


def test_model_aliases_mean_the_configured_model(client, fake_llm) -> None:
    for alias in ("hermes-agent", "default"):
        answer = client.chat.completions.create(
            model=alias, messages=[{"role": "user", "content": f"hello {alias}"}]
        )
        assert answer.choices[0].message.content == f"echo: hello {alias}"
        assert fake_llm.last_request["model"] == "fake-model"
        assert answer.model == "fake-model"
        streamed = client.chat.completions.create(
            model=alias, messages=[{"role": "user", "content": "stream"}], stream=True
        )
        # Every chunk names the model that answers, as the plain answer does.
        assert {chunk.model for chunk in streamed} == {"fake-model"}
