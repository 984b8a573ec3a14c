"""The token benchmark at a tiny size: its figures are there and sane, not its speed.

Forty turns whose tool outputs are large enough (24 KB files) that Hermes Agent 0.19
compresses within them at the benchmark's 64k window (it refuses a smaller window, and
at 64k it compresses only at 85 % of it). hermes sends a long output as a preview and
masks it after its turn, so its context grows by the chat alone: it is asked to
compress at a quarter of the window here (``HERMES_SOONER``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_tokens

TINY = ["--turns", "40", "--file-kb", "24"]
HERMES_SOONER = {"compression.threshold": 0.25}


def _sane(figures: dict) -> None:
    assert figures["main_tokens"] > 0 and figures["main_requests"] >= 12
    assert 0 < figures["uncached_tokens"] <= figures["main_tokens"]
    assert 0 < figures["largest"] <= 65_536
    assert figures["compressions"] >= 1 and figures["summary_tokens"] > 0
    assert figures["failed_turns"] == 0
    assert figures["invalid_requests"] >= 0
    assert len(figures["recall"]) == figures["compressions"]
    for point in figures["recall"]:
        assert point["planted"] > 0 and 0 <= point["share"] <= 100


def test_hermes_column_has_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    bench_tokens.main(
        [*TINY, "--json", "--hermes-agent-python", "/nonexistent/python"]
        + ["--hermes-set", "compression.threshold=0.25"]
    )

    result = json.loads(capsys.readouterr().out)
    assert result["turns"] == 40 and result["window"] == 65_536
    _sane(result["runtimes"]["hermes"])
    assert result["runtimes"]["hermes"]["invalid_requests"] == 0  # provider-valid context
    # The conversation's own rotations, as the runtime counts them.
    assert result["runtimes"]["hermes"]["runtime_compressions"] >= 1
    assert "hermes-agent 0.19" not in result["runtimes"]
    assert "no python at /nonexistent/python" in result["skipped"]["hermes-agent 0.19"]


def test_hermes_agent_column_beside_hermes(hermes_agent_venv_python: Path) -> None:
    comparison = bench_tokens.compare(
        40,
        hermes_agent_python=hermes_agent_venv_python,
        file_bytes=24_000,
        hermes_settings=HERMES_SOONER,
    )

    assert comparison.skipped == {}
    for name in (bench_tokens.HERMES, bench_tokens.HERMES_AGENT):
        _sane(comparison.columns[name].as_dict())
    ratios = bench_tokens.ratios(comparison)
    assert all(ratios[key] is not None and ratios[key] > 0 for key in ("main_tokens", "largest"))
    table = bench_tokens.report(comparison)
    for label, _ in bench_tokens.ROWS:
        assert label in table, label
    assert "hermes/0.19" in table
    assert "recall % after each compression, hermes-agent 0.19 (verbatim only)" in table


def test_measure_counts_uncached_tokens_compressions_and_recall() -> None:
    from benchmarks.tokens_measure import measure, pieces, tokens
    from benchmarks.tokens_script import Fact

    path = "/work/src/module_000.py"
    said = Fact("4918273300", "number", 0, "user", ("4918273300",))
    read = Fact("deadbeefcafe0123", "commit hash", 0, path, ("deadbeefcafe0123", path))
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    system = {"role": "system", "content": "You are an agent."}
    user = {"role": "user", "content": f"[turn 0] read {path}, and note {said.text}"}
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_t0_s0", "type": "function",
         "function": {"name": "read_file", "arguments": f'{{"path": "{path}"}}'}}]}  # fmt: skip
    result = {"role": "tool", "tool_call_id": "call_t0_s0", "content": f"x = 1  # {read.text}"}
    first = {"tools": tools, "messages": [system, user]}
    second = {"tools": tools, "messages": [system, user, call, result]}
    summary = {"messages": [{"role": "system", "content": "Summarise this."}, user]}
    after = {"tools": tools, "messages": [system, {"role": "user", "content": f"Earlier: {path}"}]}
    requests = [first, second, summary, summary, after]
    lookups: list[str] = []

    def lookup(anchor: str) -> str:
        lookups.append(anchor)
        return f"x = 1  # {read.text}" if anchor == path else ""

    figures = measure(requests, [said, read], lookup)

    size = [sum(len(p) for p in pieces(body)) for body in (first, second, after)]
    # The tools, the system prompt, and the role of the next message.
    shared = len(pieces(first)[0]) + len(pieces(first)[1]) + len("user\n")
    assert figures.main_requests == 3 and figures.summary_requests == 2
    assert figures.main_tokens == sum(tokens(s) for s in size)
    assert figures.uncached_tokens == tokens(size[0]) + tokens(size[1] - size[0]) + tokens(
        size[2] - shared
    )
    assert figures.largest == tokens(size[1]) and figures.compressions == 1
    (point,) = figures.recall
    assert (point.planted, point.verbatim, point.by_lookup, point.lookups) == (2, 0, 1, 1)
    assert point.missed == {"number": 1} and point.share == 50.0
    # The same again at the end (the last request is the one after the compression).
    assert figures.end is not None and figures.end.share == 50.0 and lookups == [path, path]
    assert figures.worst is not None and (figures.worst.within, figures.worst.planted) == (1, 2)
    assert figures.end.lost == ["number (turn 0, said)"]
    assert measure(requests, [said, read], None).recall[0].share == 0.0
    assert figures.invalid_requests == 0
    orphan = {"tools": tools, "messages": [system, result]}  # a result without its call
    assert measure([orphan], [], None).invalid_requests == 1


def test_a_real_model_answers_the_hermes_side_through_the_recording_server() -> None:
    from tests.fakes.llm_server import FakeLLMServer

    with FakeLLMServer(models=["real-model"]) as real:
        comparison = bench_tokens.compare(
            3, base_url=real.url, model="real-model", api_key="real-key"
        )
        forwarded = real.requests

    # Every request hermes made went on to the real model, whose answers it got.
    ours = comparison.columns[bench_tokens.HERMES]
    assert len(forwarded) == ours.main_requests == 3
    assert {body["model"] for body in forwarded} == {"real-model"}
    assert forwarded[0]["messages"][-1]["content"].startswith("[turn 0]")
    assert ours.failed_turns == 0 and ours.main_tokens > 0
    assert "real model" in comparison.skipped[bench_tokens.HERMES_AGENT]


def test_the_measure_calls_hermes_own_recall_tool(tmp_path: Path) -> None:
    from hermes.state import SessionDB
    from run_agent import AIAgent

    db = SessionDB(db_path=tmp_path / "state.db")
    agent = AIAgent(api_key="k", base_url="http://127.0.0.1:9/v1", model="m", session_db=db)
    agent.ensure_session()
    db.append_messages(agent.session_id, [{"role": "user", "content": "the shard is E7731 now"}])

    lookup = bench_tokens._recall_lookup(agent, db, tmp_path)

    assert lookup is not None and "the shard is E7731 now" in lookup("E7731")
    assert "the shard is" not in lookup("F0000")  # the tool's answer, not the whole store
    db.close()


def test_the_sparse_shape_prints_facts_within_reach(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--shape", "sparse", "--turns", "40", "--file-kb", "40"]
    bench_tokens.main([*args, "--hermes-agent-python", "/nonexistent/python"])

    table = capsys.readouterr().out
    assert "a terminal call every 4th turn reading a 16-64 KB file" in table
    assert "planted facts within reach, worst point" in table
    assert "recall % after each compression, hermes (verbatim, or one `recall`" in table


def test_the_sparse_script_is_issue_48s_conversation(tmp_path: Path) -> None:
    from benchmarks import tokens_script

    script = tokens_script.build(tmp_path, 200, shape="sparse")

    assert len(script.turns) == 200 and len(script.facts) == 42
    assert [t.number for t in script.turns if t.steps] == list(range(0, 200, 4))
    assert {s.tool for t in script.turns for s in t.steps} == {"terminal"}
    sizes = [p.stat().st_size for p in tmp_path.rglob("*.*")]
    assert len(sizes) == 50 and min(sizes) >= 2_000 and max(sizes) <= 8_200
    in_files = [f for f in script.facts if f.where != "user"]
    assert len(in_files) == 14
    for fact in in_files:
        assert fact.text in Path(fact.where).read_text()


def test_every_uncached_token_is_put_down_to_its_source() -> None:
    from benchmarks.tokens_measure import measure, tokens

    tools = [{"type": "function", "function": {"name": "terminal", "parameters": {}}}]
    system = {"role": "system", "content": "You are an agent."}
    ask = {"role": "user", "content": "[turn 0] cat the log"}
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "terminal", "arguments": '{"command": "cat x.log"}'}}]}  # fmt: skip
    output = {"role": "tool", "tool_call_id": "c1", "content": "a long log " * 200}
    answer = {"role": "assistant", "content": "The log is fine."}
    stub = {**output, "content": "[tool output masked: terminal; recall(message_id=3)]"}
    summary = {"role": "user", "content": "[CONTEXT COMPACTION] what happened " * 20}
    nxt = {"role": "user", "content": "[turn 1] and now?"}
    requests = [
        {"tools": tools, "messages": [system, ask]},
        {"tools": tools, "messages": [system, ask, call, output]},
        {"tools": tools, "messages": [system, ask, call, stub, answer, nxt]},
        {"tools": tools, "messages": [system, summary, answer, nxt]},
    ]

    figures = measure(requests, [], None)

    by = figures.uncached_by_source
    assert by["system"] > 0 and by["new content"] > 0
    assert by["masking"] == tokens(len("tool\n" + stub["content"] + "\nc1\n") - len("tool\n"))
    assert by["tail"] > 0  # the answer and the next message, sent again after the summary
    assert by["summary"] >= tokens(len(summary["content"]))
    # Every uncached token has one source (up to rounding, a token per piece).
    assert abs(sum(by.values()) - figures.uncached_tokens) <= 12


def test_a_family_conversation_prints_its_targets() -> None:
    from benchmarks import tokens_script

    (comparison,) = bench_tokens.run_family(
        quick=True, only=["json"], hermes_agent_python=None, progress=False
    )

    assert comparison.turns == 50 and comparison.shape == "json"
    ours = comparison.columns[bench_tokens.HERMES]
    assert ours.main_requests > 50 and ours.failed_turns == 0
    assert sum(ours.uncached_by_source.values()) > 0.9 * ours.uncached_tokens
    table = bench_tokens.family_report([comparison])
    assert "total <= 0.5x, uncached <= 0.75x" in table
    assert tokens_script.FAMILY["json"].label in table
    assert "hermes-agent 0.19 skipped: not asked for" in table


def test_the_family_varies_one_thing_each(tmp_path: Path) -> None:
    from benchmarks import tokens_script

    shapes = {}
    for name in ("every-turn", "no-tools", "long-turns", "json", "topic-switch"):
        script = tokens_script.build(tmp_path / name, 40, shape=name)
        shapes[name] = script
        for fact in script.facts:
            where = fact.where
            assert fact.text in (
                script.turns[fact.turn].user if where == "user" else Path(where).read_text()
            )
    assert all(t.steps for t in shapes["every-turn"].turns)
    assert not any(t.steps for t in shapes["no-tools"].turns)
    assert len(shapes["long-turns"].turns[5].user) > 7_000 > len(shapes["json"].turns[5].user)
    json_files = list((tmp_path / "json").rglob("*.json"))
    assert json_files and all(json.loads(p.read_text())["items"] for p in json_files)
    switched = shapes["topic-switch"].turns
    assert "invoice" not in switched[5].user and "billing/" in str(switched[24].steps[0].arguments)
