"""Old tool outputs reach the model as stubs; the store keeps them whole; summaries are
appended to, not rewritten (on both stores, against the fake model over HTTP).

What is checked is what the fake model received: the request bodies, byte for byte.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.agent.masking import PREVIEW_CHARS, STORED_ID, MaskPolicy, Planner, preview, stub
from hermes.agent.summariser import FOLLOWS, is_summary_message
from hermes.config import load_config
from hermes.tools.registry import ToolContext
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake
from tests.stores import DBFactory

STUB = re.compile(
    r"^\[tool output masked: (\w+), (\d+) chars; recall\(message_id=(\d+)\) returns it\]$"
)
FILE_CHARS = 2_400  # each file the model reads: ~600 tokens


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    for n in range(12):
        lines = [f"file {n} line {i}: " + "x" * 40 for i in range(FILE_CHARS // 56)]
        (tmp_path / f"f{n}.txt").write_text("\n".join(lines) + "\n")
    return tmp_path


def configure(home: Path, **compression: Any) -> None:
    """A window that never fills in these tests unless a test compresses on purpose."""
    keys = {"enabled": False, "cooldown_seconds": 0, **compression}
    lines = "".join(f"  {k}: {json.dumps(v)}\n" for k, v in keys.items())
    (home / "config.yaml").write_text(
        f"model:\n  context_length: 100000\n  max_retries: 0\ncompression:\n{lines}"
    )


class Reader:
    """The fake main model: turn ``n`` (the user says "read n") reads ``f<n>.txt``
    once, then answers; summaries are a fixed text naming how many they have seen."""

    def __init__(self) -> None:
        self.summaries = 0

    def __call__(self, body: dict[str, Any]) -> fake.Reply:
        messages = body["messages"]
        if "compact the history" in str(messages[0].get("content")):
            self.summaries += 1
            return fake.text(f"summary number {self.summaries}")
        last = messages[-1]
        if last["role"] == "user":
            match = re.search(r"read (\d+)", str(last["content"]))
            if match:
                return fake.tool_call("read_file", {"path": f"f{match.group(1)}.txt"})
        return fake.text("done: " + "a" * 200)


@pytest.fixture
def llm(fake_llm: fake.FakeLLMServer) -> fake.FakeLLMServer:
    fake_llm.strict_context = True
    fake_llm.responder = Reader()
    return fake_llm


def chat_turns(agent: Any, numbers: range) -> None:
    for n in numbers:
        agent.chat(f"read {n} and tell me about it " + "q" * 200)


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def wire(body: dict[str, Any]) -> list[str]:
    """Each message of a request as the JSON it was sent as (keys in their sent order)."""
    return [json.dumps(m, ensure_ascii=False) for m in body["messages"]]


def tool_rows(db: Any, session_id: str) -> list[dict[str, Any]]:
    return [r for r in db.get_conversation_messages(session_id) if r["role"] == "tool"]


def test_old_outputs_are_sent_as_stubs_naming_their_stored_row(
    hermes_home: Path, workspace: Path, llm: fake.FakeLLMServer, make_db: DBFactory
) -> None:
    configure(hermes_home, mask_keep_tokens=0)
    db = make_db()
    agent = fake_agent(llm, db, cwd=workspace, tools=["read_file"], skip_memory=True)

    chat_turns(agent, range(3))

    rows = tool_rows(db, agent.session_id)
    assert len(rows) == 3
    # Right after the tool ran, the model saw the output whole, as stored.
    fresh = [
        tool_messages(body)[-1] for body in llm.requests if body["messages"][-1]["role"] == "tool"
    ]
    assert [m["content"] for m in fresh] == [r["content"] for r in rows]
    assert all(len(r["content"]) > 2_000 for r in rows)
    # In the last turn's first request, the earlier turns' outputs are stubs.
    first_of_last = next(b for b in llm.requests if "read 2" in str(b["messages"][-1]["content"]))
    sent = tool_messages(first_of_last)
    assert [m["content"] for m in sent] == [
        stub("read_file", len(r["content"]), r["id"]) for r in rows[:2]
    ]
    assert [m["tool_call_id"] for m in sent] == [r["tool_call_id"] for r in rows[:2]]
    # The store is unchanged: whole outputs, no stub anywhere.
    assert [r["content"] for r in tool_rows(db, agent.session_id)] == [r["content"] for r in rows]
    assert "tool output masked" not in json.dumps(db.get_conversation_messages(agent.session_id))
    assert llm.stats()["invalid_contexts"] == 0


def test_a_stub_never_changes_and_requests_keep_their_prefix_between_steps(
    hermes_home: Path, workspace: Path, llm: fake.FakeLLMServer, make_db: DBFactory
) -> None:
    # ~650 tokens per output: completed turns' outputs are masked three turns at a time.
    configure(hermes_home, mask_keep_tokens=1_500)
    db = make_db()
    agent = fake_agent(llm, db, cwd=workspace, tools=["read_file"], skip_memory=True)

    chat_turns(agent, range(9))
    again = fake_agent(llm, make_db(), session_id=agent.session_id, tools=["read_file"],
                       skip_memory=True, cwd=workspace)  # fmt: skip
    chat_turns(again, range(9, 11))  # a new agent on a new handle plans the same stubs

    bodies = llm.requests
    stubs: dict[str, str] = {}
    kept, steps = 0, 0
    for before, after in zip(bodies, bodies[1:], strict=False):
        old, new = wire(before), wire(after)
        same = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), len(old))
        if same == len(old):
            kept += 1  # the whole earlier request is the start of the next one
        else:
            steps += 1
            changed = [(a, b) for a, b in zip(old[same:], new[same:], strict=False) if a != b]
            for was, now in (map(json.loads, pair) for pair in changed):
                assert was["role"] == now["role"] == "tool"  # only outputs becoming stubs
                assert STUB.match(now["content"]) and not STUB.match(was["content"])
        for message in tool_messages(after):
            if STUB.match(message["content"]):
                assert (
                    stubs.setdefault(message["tool_call_id"], message["content"])
                    == message["content"]
                )
    assert len(stubs) >= 6
    assert 2 <= steps <= 4 and kept >= 3 * steps
    assert llm.stats()["invalid_contexts"] == 0


def test_masking_off_sends_every_output_whole(
    hermes_home: Path, workspace: Path, llm: fake.FakeLLMServer, make_db: DBFactory
) -> None:
    configure(hermes_home, mask_tool_outputs=False, mask_keep_tokens=0)
    db = make_db()
    agent = fake_agent(llm, db, cwd=workspace, tools=["read_file"], skip_memory=True)

    chat_turns(agent, range(4))

    rows = tool_rows(db, agent.session_id)
    last = tool_messages(llm.requests[-1])
    assert [m["content"] for m in last] == [r["content"] for r in rows]
    assert "tool output masked" not in json.dumps(llm.requests)


def test_a_long_output_is_sent_as_its_preview_and_recall_returns_the_rest(
    hermes_home: Path, tmp_path: Path, fake_llm: fake.FakeLLMServer, make_db: DBFactory
) -> None:
    configure(hermes_home, mask_keep_tokens=0)
    lines = [f"line {i:05d} of the long log: " + "z" * 60 for i in range(200)]
    (tmp_path / "long.log").write_text("\n".join(lines) + "\n")  # ~18 KB, stored whole
    fake_llm.script(
        fake.tool_call("terminal", {"command": "cat long.log"}, id="call_cat"),
        fake.text("It is a long log."),
        fake.text("Still here."),
    )
    fake_llm.strict_context = True
    config = load_config()
    config.values["terminal.sandbox"] = "off"
    db = make_db()
    agent = fake_agent(fake_llm, db, cwd=tmp_path, tools=["terminal", "recall"],
                       skip_memory=True, config=config)  # fmt: skip
    agent.chat("show me the log")
    agent.chat("and now?")

    (row,) = tool_rows(db, agent.session_id)
    assert "line 00100 of the long log" in row["content"]  # the store keeps it whole
    # The running turn's request: the head and tail, and how to get the middle back.
    sent = tool_messages(fake_llm.requests[1])[0]["content"]
    assert sent == preview(row["content"], row["id"])
    assert len(sent) < PREVIEW_CHARS + 200 and "line 00100" not in sent
    assert sent.startswith(row["content"][:2_000]) and sent.endswith(row["content"][-500:])
    offset = int(re.search(rf"recall\(message_id={row['id']}, offset=(\d+)\)", sent).group(1))
    # The next turn's request: the usual stub.
    assert tool_messages(fake_llm.requests[2])[0]["content"] == stub(
        "terminal", len(row["content"]), row["id"]
    )
    # The call the preview names returns what it did not show, from the store.
    context = ToolContext(session_db=db, session_id=agent.session_id,
                          conversation_id=agent.binding.conversation_id, hermes_home=hermes_home,
                          config=agent.config, cwd=tmp_path)  # fmt: skip
    rest = agent.toolbox.registry.dispatch(
        "recall", {"message_id": row["id"], "offset": offset}, context
    )
    assert "line 00100 of the long log" in rest
    assert fake_llm.stats()["invalid_contexts"] == 0


def test_a_second_compression_extends_the_summary_verbatim_with_full_coverage(
    hermes_home: Path, workspace: Path, llm: fake.FakeLLMServer, make_db: DBFactory
) -> None:
    configure(hermes_home, mask_keep_tokens=0, tail_share=0.001)
    db = make_db()
    agent = fake_agent(llm, db, cwd=workspace, tools=["read_file"], skip_memory=True)

    chat_turns(agent, range(4))
    assert agent.compress_now().rotated
    first = summary_of(agent)
    chat_turns(agent, range(4, 8))
    before = len(llm.requests)
    assert agent.compress_now().rotated
    second = summary_of(agent)
    chat_turns(agent, range(8, 9))

    assert "summary number 1" in first and "summary number 2" in second
    assert second.startswith(first.removesuffix(FOLLOWS))  # the old text, byte for byte
    assert "summary number 1" not in second.split("summary number 1", 1)[1]
    # The summary model read the earlier summary, and the new middle's outputs as their
    # stubs, not whole (each is one recall away).
    asked = "".join(str(m["content"]) for b in llm.requests[before:] for m in b["messages"])
    assert "summary number 1" in asked
    for row in tool_rows(db, agent.session_id)[4:8]:
        assert row["content"] not in asked
        assert f"recall(message_id={row['id']}) returns it]" in asked
    # The request after it starts as the one before it did, to the old summary's end.
    old, new = wire(llm.requests[before - 1]), wire(llm.requests[-2])
    at = next(i for i, m in enumerate(new) if "[CONTEXT COMPACTION]" in m)
    assert old[:at] == new[:at]
    assert new[at].startswith(old[at].removesuffix(json.dumps(FOLLOWS)[1:-1] + '"}'))
    assert db.coverage_violations() == []
    assert db.invariant_violations() == []
    assert llm.stats()["invalid_contexts"] == 0


def test_the_summary_reads_outputs_as_stubs_and_each_stays_one_recall_away(
    hermes_home: Path, workspace: Path, llm: fake.FakeLLMServer, make_db: DBFactory
) -> None:
    configure(hermes_home, mask_keep_tokens=0, tail_share=0.001)
    (workspace / "f2.txt").write_text(
        "".join(f"line {i}: " + "x" * 60 + "\n" for i in range(20))
        + "ERROR ledger.sync: checksum mismatch on shard 7 (code E40417)\n"
        + "".join(f"line {i}: " + "y" * 60 + "\n" for i in range(20))
    )
    db = make_db()
    agent = fake_agent(llm, db, cwd=workspace, tools=["read_file"], skip_memory=True)
    chat_turns(agent, range(4))
    before = len(llm.requests)

    assert agent.compress_now().rotated

    asked = "".join(str(m["content"]) for b in llm.requests[before:] for m in b["messages"])
    rows = tool_rows(db, agent.session_id)[1:]  # the first exchange is kept as the head
    for row in rows:  # the summary model read each output as its stub, not whole
        assert row["content"] not in asked
        assert f"recall(message_id={row['id']}) returns it]" in asked
    # ... and its anchors: the error line the output holds, verbatim.
    assert "ERROR ledger.sync: checksum mismatch on shard 7 (code E40417)" in asked
    # The store knows each was covered by its stub.
    coverage = db._read(
        lambda tx: tx.all(
            "SELECT origin_id, by_stub FROM segment_coverage WHERE session_id = ?",
            (agent.session_id,),
        )
    )
    assert {r["origin_id"] for r in coverage if r["by_stub"]} == {r["id"] for r in rows}
    assert db.coverage_violations() == []
    # One recall with an anchor the context shows brings the output back verbatim.
    context = json.dumps(agent.binding.load_history())
    assert "E40417" in context
    found = recall_tool(agent, db, hermes_home, "E40417")
    assert "ERROR ledger.sync: checksum mismatch on shard 7 (code E40417)" in found
    assert next(r for r in rows if "E40417" in r["content"])["content"] in found


def recall_tool(agent: Any, db: Any, home: Path, query: str) -> str:
    from hermes.tools.registry import ToolContext

    context = ToolContext(
        session_db=db,
        session_id=agent.session_id,
        conversation_id=agent.binding.conversation_id,
        hermes_home=home,
        config=agent.config,
        cwd=agent.cwd,
    )
    return str(agent.toolbox.registry.dispatch("recall", {"query": query}, context))


def test_a_compression_keeps_every_stub_a_stub(
    hermes_home: Path, workspace: Path, llm: fake.FakeLLMServer, make_db: DBFactory
) -> None:
    # Results are masked three turns at a time; the tail budget reaches one masked result
    # back, which the child's masking (counting again after its summary) would unmask.
    configure(hermes_home, mask_keep_tokens=1_500, tail_share=0.019)
    db = make_db()
    agent = fake_agent(llm, db, cwd=workspace, tools=["read_file"], skip_memory=True)
    chat_turns(agent, range(8))
    before = llm.requests[-1]

    assert agent.compress_now().rotated
    chat_turns(agent, range(8, 9))
    after = llm.requests[-2]  # the first request of the next turn

    stubs = {
        m["tool_call_id"]: m["content"] for m in tool_messages(before) if STUB.match(m["content"])
    }
    assert len(stubs) >= 3
    for message in tool_messages(after):
        assert stubs.get(message["tool_call_id"], message["content"]) == message["content"]
    assert db.coverage_violations() == []
    assert llm.stats()["invalid_contexts"] == 0


def summary_of(agent: Any) -> str:
    found = [m["content"] for m in agent.binding.load_history() if is_summary_message(m)]
    assert len(found) == 1
    return str(found[0])


# --------------------------------------------------------------------------- the plan


@st.composite
def transcripts(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Turns of a user message, then tool calls with outputs of any size, then an answer;
    maybe a summary first."""
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "user", "content": "[CONTEXT COMPACTION] earlier"})
    row = 0
    for turn in range(draw(st.integers(1, 8))):
        messages.append({"role": "user", "content": f"turn {turn}"})
        for _ in range(draw(st.integers(0, 3))):
            row += 1
            call = {
                "id": f"c{row}",
                "type": "function",
                "function": {"name": "t", "arguments": "{}"},
            }
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            size = draw(st.sampled_from([10, 500, 2_000, 9_000, 12_000]))
            messages.append({"role": "tool", "content": "o" * size, "tool_call_id": f"c{row}",
                             "tool_name": "t", STORED_ID: row})  # fmt: skip
        messages.append({"role": "assistant", "content": "answer"})
    return messages


@settings(max_examples=200, deadline=None)
@given(transcripts(), st.sampled_from([0, 300, 1_000]))
def test_a_plan_only_adds_stubs_as_the_conversation_grows(
    messages: list[dict[str, Any]], keep: int
) -> None:
    policy = MaskPolicy(keep_tokens=keep)
    final = policy.plan(messages)
    planner = Planner(policy)  # what the wire keeps: the plan, updated as messages come
    for end in range(len(messages) + 1):
        before = list(planner.stubs)
        changed = planner.update(messages[:end])
        assert planner.stubs == policy.plan(messages[:end])
        grown = [i for i in range(len(before), end) if planner.stubs[i] is not None]
        newly = [i for i, text in enumerate(before) if planner.stubs[i] != text]
        assert sorted(changed) == newly + grown
        for earlier, later in zip(planner.stubs, final, strict=False):
            # Only a long output's preview gives way (to its stub).
            assert earlier is None or earlier == later or earlier.startswith("o" * 100)
    newest_user = max(i for i, m in enumerate(messages) if str(m["content"]).startswith("turn"))
    # The running turn's outputs: whole, or a long one's preview.
    running = [(m, text) for m, text in zip(messages, final, strict=True)][newest_user:]
    assert all(text is None or text == preview(m["content"], m[STORED_ID]) for m, text in running)
