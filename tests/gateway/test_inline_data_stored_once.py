"""An image sent inline is stored once, however often compression copies its message.

The first exchange of a conversation is the head every compression keeps, so each
rotation copies the image's message into the new segment; the data URL itself must be
in the store once (a ``blobs`` row), the model must still get it inline after the
rotations, and an export must still say what it was. A real gateway process on each
backend, the stock ``openai`` client.
"""

from __future__ import annotations

import base64
from pathlib import Path

import openai
import pytest

from hermes.state import export
from tests.fakes.llm_server import text
from tests.gateway.compaction import PADDING, SUMMARY, is_summary_request
from tests.gateway.harness import stored_api_key, write_config
from tests.gateway.processes import HEADER, free_port
from tests.state.helpers import StoreSpec

PAYLOAD = base64.b64encode(bytes(range(256)) * 64).decode()  # 16 KB of image
PIXELS = "data:image/png;base64," + PAYLOAD
PICTURE = [
    {"type": "text", "text": "what is in this picture?"},
    {"type": "image_url", "image_url": {"url": PIXELS}},
]


def _count(store: StoreSpec, sql: str, *params: object) -> tuple:
    [row] = store.execute(sql, params)
    return row


@pytest.mark.parametrize("store", ["sqlite", "postgres"], indirect=True)
def test_an_inline_image_is_stored_once_across_two_compressions(
    gateways_store: StoreSpec,
    hermes_home: Path,
    fake_llm,
    model_key: str,
    run_gateway,
) -> None:
    write_config(hermes_home, fake_llm.url, model={"context_length": 8000})
    fake_llm.responder = lambda body: text(SUMMARY) if is_summary_request(body) else None
    store = gateways_store
    port = free_port()
    url = run_gateway("--api-server", f"127.0.0.1:{port}").wait_ready(port)
    db = store.open()
    with openai.OpenAI(base_url=url, api_key=stored_api_key(), max_retries=0) as api:
        raw = api.chat.completions.with_raw_response.create(
            model="fake-model", messages=[{"role": "user", "content": PICTURE}]
        )
        session = raw.headers[HEADER]
        for n in range(60):
            api.chat.completions.create(
                model="fake-model",
                messages=[{"role": "user", "content": f"note {n}: {PADDING}"}],
                extra_headers={HEADER: session},
            )
            if len(db.get_segments(session)) >= 3:
                break
    try:
        conversation = db.get_session(session)["conversation_id"]
        assert len(db.get_segments(conversation)) >= 3, "the conversation never compressed twice"
        # The image's message is in every segment (the original and two copies) ...
        like = "SELECT COUNT(*) FROM messages WHERE content LIKE ?"
        assert _count(store, like, "%image_url%")[0] >= 3
        # ... and its bytes are in the store once.
        assert _count(store, like, f"%{PAYLOAD[:64]}%")[0] == 0
        assert _count(store, "SELECT COUNT(*), SUM(size) FROM blobs") == (1, len(PIXELS))
        # The model got it inline in the last turn, after both rotations.
        last = [b for b in fake_llm.requests if not is_summary_request(b)][-1]
        assert PICTURE in [m["content"] for m in last["messages"]]
        assert db.get_conversation_messages(conversation)[0]["content"] == PICTURE
        markdown = "".join(export.render(db, conversation, "md"))
        assert "[image: image/png, 16 KB inline]" in markdown and PAYLOAD[:64] not in markdown
    finally:
        db.close()
