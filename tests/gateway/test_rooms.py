"""The HTTP room attaches to every gateway, not only to one that serves the API.

Any gateway on a store may claim an API run from the shared queue (a released one, or
one a gateway that is gone left), so the run registry the HTTP room registers at
start-up (``core.attach_rooms``) must be there on a gateway that serves only a chat
platform too: else it would run the turn and leave the run queued forever.
"""

from __future__ import annotations

from pathlib import Path

from hermes.gateway.envelopes import Origin
from hermes.gateway.lanes import MESSAGE, WorkItem
from hermes.gateway.queued_turn import QueuedTurn
from hermes.gateway.routing import Router
from hermes.gateway.settings import API_SERVER
from hermes.state import SessionDB
from hermes.state.gateway.api_runs import RunStore
from tests.gateway.fakechat import FakeChat
from tests.gateway.harness import GatewayThread, wait_for


def _queue_a_released_run(db: SessionDB, run_id: str, question: str) -> str:
    """A run and its input as a gateway that took the request and then stopped leaves
    them; returns the run's conversation."""
    conversation = db.create_session(source=API_SERVER)
    key = f"{API_SERVER}:{conversation}"
    Router(db).route_new(key, conversation, platform=API_SERVER)
    item = WorkItem(
        kind=MESSAGE,
        key=key,
        conversation_id=conversation,
        origin=Origin(platform=API_SERVER, chat_id=conversation),
        asked=QueuedTurn(text=question, model="fake-model", run_id=run_id),
    )
    RunStore(db.gateway.backend).create(
        run_id,
        conversation_id=conversation,
        session_key=key,
        model="fake-model",
        queued=item.payload(),
        owner=None,  # released: the next gateway to start claims it
    )
    return conversation


def test_a_gateway_without_the_api_server_completes_an_api_run_it_claims(
    hermes_home: Path, config_file: Path, fake_llm
) -> None:
    db = SessionDB(db_path=hermes_home / "state.db")
    conversation = _queue_a_released_run(db, "run_claimed", "answered by a chat gateway")
    runs = RunStore(db.gateway.backend)
    with GatewayThread(
        hermes_home,
        api=None,
        platforms={"telegram": {"token": "123:t", "allowed_users": [42]}},
        adapters={"telegram": FakeChat},
        db=db,
    ) as gateway:
        assert API_SERVER not in gateway.runner.adapters
        wait_for(lambda: (runs.get("run_claimed") or {}).get("status") == "completed")
        run = runs.get("run_claimed")
        assert run is not None and run["output"] == "echo: answered by a chat gateway"
        names = [event["event"] for event in runs.events_after("run_claimed", 0)]
        assert names[-1] == "run.completed" and names.count("run.completed") == 1
        rows = db.get_conversation_messages(conversation)
        assert [m["content"] for m in rows] == [
            "answered by a chat gateway",
            "echo: answered by a chat gateway",
        ]
