"""The sessions API and /openapi.json, over real HTTP with ``aiohttp`` against a real gateway."""

from __future__ import annotations

from tests.gateway.api_calls import ask, call


def test_list_get_and_page_messages_of_conversations(client, gateway) -> None:
    _, first = ask(client, "the tortoise wins")
    for n in range(4):
        ask(client, f"more {n}", first)
    _, second = ask(client, "the hare sleeps")
    status, listing = call(gateway, "GET", "/api/sessions")
    assert status == 200
    assert [row["id"] for row in listing["data"]] == [second, first]
    assert listing["data"][1]["message_count"] == 10
    status, page = call(gateway, "GET", "/api/sessions?limit=1&offset=1")
    assert [row["id"] for row in page["data"]] == [first] and page["has_more"] is False
    status, found = call(gateway, "GET", "/api/sessions?q=tortoise")
    assert status == 200 and [row["id"] for row in found["data"]] == [first]
    assert "tortoise" in found["data"][0]["snippet"]

    status, one = call(gateway, "GET", f"/api/sessions/{first}")
    assert status == 200 and one["id"] == first and [s["id"] for s in one["lineage"]] == [first]
    status, messages = call(gateway, "GET", f"/api/sessions/{first}/messages?limit=3&offset=2")
    assert status == 200 and messages["has_more"] is True
    assert [m["content"] for m in messages["data"]] == ["more 0", "echo: more 0", "more 1"]


def test_an_old_segment_id_resolves_to_its_conversation(client, gateway) -> None:
    _, root = ask(client, "before compression")
    ask(client, "second turn", root)
    db = gateway.db  # a compression published by another process on the same store
    assert db.try_acquire_compression_lock(root, "elsewhere")
    db.publish_compression_child(
        root, holder="elsewhere", messages=[{"role": "user", "content": "[CONTEXT COMPACTION] hi"}]
    )
    db.release_compression_lock(root, "elsewhere")
    lineage = db.get_lineage(root)
    assert len(lineage) == 2
    ask(client, "after compression", root)
    status, one = call(gateway, "GET", f"/api/sessions/{root}")
    assert status == 200 and one["tip_id"] == lineage[-1]
    assert [s["id"] for s in one["lineage"]] == lineage
    status, messages = call(gateway, "GET", f"/api/sessions/{lineage[-1]}/messages")
    contents = [m["content"] for m in messages["data"]]
    assert contents[0] == "before compression" and contents[-1] == "echo: after compression"
    status, listing = call(gateway, "GET", "/api/sessions")
    assert [row["id"] for row in listing["data"]] == [root]
    assert listing["data"][0]["segments"] == 2


def test_rename_and_delete(client, gateway) -> None:
    _, session = ask(client, "name me")
    status, body = call(gateway, "PATCH", f"/api/sessions/{session}", json={"title": " Fables "})
    assert status == 200 and body["title"] == "Fables"
    assert call(gateway, "GET", f"/api/sessions/{session}")[1]["title"] == "Fables"
    status, body = call(gateway, "PATCH", f"/api/sessions/{session}", json={"name": "x"})
    assert status == 400 and "'title'" in body["error"]["message"]
    status, body = call(gateway, "DELETE", f"/api/sessions/{session}")
    assert status == 200 and body["messages_removed"] == 2
    assert gateway.db.get_session(session) is None
    assert call(gateway, "GET", "/api/sessions")[1]["data"] == []


def test_unknown_ids_and_bad_pages_get_clear_errors(gateway) -> None:
    for method, path in [
        ("GET", "/api/sessions/nope"),
        ("GET", "/api/sessions/nope/messages"),
        ("DELETE", "/api/sessions/nope"),
    ]:
        status, body = call(gateway, method, path)
        assert status == 404 and body["error"]["message"] == "No conversation holds session 'nope'."
    status, body = call(gateway, "GET", "/api/sessions?limit=lots")
    assert status == 400 and "whole numbers" in body["error"]["message"]
    status, body = call(gateway, "GET", "/api/sessions?limit=0")
    assert status == 400


def test_openapi_describes_every_route(gateway) -> None:
    status, document = call(gateway, "GET", "/openapi.json")
    assert status == 200 and document["openapi"].startswith("3.")
    app = gateway.runner.adapters["api_server"].app_runner.app
    routes = {
        (route.resource.canonical, route.method.lower())
        for route in app.router.routes()
        if route.method != "HEAD"
    }
    described = {(path, method) for path, ops in document["paths"].items() for method in ops}
    assert routes - described == set()
    assert described - routes == set()
