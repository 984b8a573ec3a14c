"""The gateway benchmark at a tiny size: behaviour, not speed.

``measure`` runs against the real gateway subprocess and the fake model in its own
process; the sweep's stepping logic runs against a stand-in rig; the fake model's
``/stats`` runs in-process.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from benchmarks import bench_gateway as bench
from benchmarks import pause_penalty
from tests.fakes.llm_server import FakeLLMServer

pytestmark = pytest.mark.slow  # the benchmarks run end to end, on gateway processes

ROWS = (
    "turns answered",
    "throughput",
    "response time p50",
    "response time p99",
    "gateway overhead p50",
    "gateway overhead p99",
    "overhead p50 / p99, model's own time out",
    "overhead p50 / p99, one conversation alone",
    "fake model's time p50 / p99",
    "gateway CPU per turn",
    "gateway waiting for a CPU, per turn",
    "harness CPU per turn",
    "machine busy during the run",
    "gateway RSS idle",
    "gateway RSS peak",
    "errors",
    "lost turns",
    "closed loop:",
)


def test_measure_answers_every_turn_and_reports_every_row() -> None:
    results = bench.measure(conversations=3, turns=2, latency_ms=20.0)

    assert (results.done, results.total) == (6, 6)
    assert results.errors == [] and results.lost == 0
    assert len(results.sessions) == 3
    # Every turn was matched to the fake model's own measure of it, and the fake
    # model (its own process) waited at least the latency it was asked for.
    assert len(results.net_ms) == 6
    assert len(results.model_ms) >= 6 and min(results.model_ms) >= 20.0
    # CPU times tick in 10 ms steps, so a run this short may read 0 for the client.
    assert results.cpu_seconds >= 0 and results.client_cpu >= 0 and results.rss_peak > 0
    alone = results.unloaded
    assert alone is not None and alone.done == bench.UNLOADED_TURNS and alone.errors == []

    text = bench.report(results)
    assert "3 conversations x 2 turns" in text and "6 of 6" in text
    for row in ROWS:
        assert row in text, row


class _StandInRig:
    """Answers every turn at once; a step of ``failing_from`` conversations or more
    misses the target."""

    failing_from = 3
    loads: list[tuple[int, int]] = []

    def __init__(self, latency_ms: float, limit: int, **options: Any) -> None:
        self.latency_ms = latency_ms

    def __enter__(self) -> _StandInRig:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def stop_gateway(self) -> None:
        pass

    def load(self, results: bench.Results) -> None:
        self.loads.append((results.conversations, results.waves))
        late = 100.0 if results.conversations >= self.failing_from else 1.0
        results.response_ms = [self.latency_ms + late] * results.total
        results.wall = 1.0

    def lost_turns(self, results: bench.Results) -> int:
        return 0


def test_the_sweep_runs_a_missing_step_again_then_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "_Rig", _StandInRig)
    monkeypatch.setattr(_StandInRig, "loads", [])

    found = bench.sweep([1, 2, 3, 5], turns=2, latency_ms=20.0, min_turns=8)

    assert [(s.conversations, s.attempt) for s in found.steps] == [(1, 1), (2, 1), (3, 1), (3, 2)]
    assert found.capacity == 2
    # The warm-up first; then every step gets fresh conversations up to 8 turns.
    assert _StandInRig.loads == [(1, 1), (1, 4), (2, 2), (3, 2), (3, 2)]
    text = bench.sweep_report(found)
    assert "meeting the target: 2" in text and "3 (again)" in text


def test_the_sweep_is_on_in_the_full_run_and_behind_a_flag_when_quick() -> None:
    assert bench._options([])["sweep"] is True
    assert bench._options(["--quick"])["sweep"] is False
    assert bench._options(["--quick", "--gateway-sweep"])["sweep"] is True
    assert bench._options(["--quick"])["conversations"] == bench.QUICK["conversations"]


def _chat(server: FakeLLMServer, words: str) -> None:
    body = {"model": "fake-model", "messages": [{"role": "user", "content": words}]}
    request = urllib.request.Request(
        f"{server.url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def _stats(server: FakeLLMServer, query: str = "") -> dict[str, Any]:
    with urllib.request.urlopen(f"http://{server.host}:{server.port}/stats{query}") as answer:
        return json.load(answer)


def test_the_fake_model_reports_its_service_times() -> None:
    with FakeLLMServer(latency=0.02) as server:
        assert _stats(server)["requests"] == 0
        _chat(server, "conversation 0 turn 0")
        _chat(server, "conversation 0 turn 1")

        stats = _stats(server, "?reset=1")
        assert stats["requests"] == 2
        assert [prompt for prompt, _ in stats["samples"]] == [
            "conversation 0 turn 0",
            "conversation 0 turn 1",
        ]
        assert all(ms >= 20.0 for _, ms in stats["samples"])
        assert 20.0 <= stats["service_ms"]["p50"] <= stats["service_ms"]["max"]
        assert _stats(server)["requests"] == 0  # reset after reading
        assert server.stats()["service_ms"]["p99"] is None


def test_the_stateless_case_keeps_one_conversation_and_times_the_lookup() -> None:
    found = bench.stateless(history=20, requests=2)

    assert found.errors == [] and found.conversations == 1
    assert len(found.header_ms) == len(found.stateless_ms) == 2
    assert len(found.loop_header_ms) == len(found.loop_stateless_ms) == 2
    calls = [m for m in found.messages if m.get("tool_calls")]
    assert len(calls) == 4 and sum(m["role"] == "tool" for m in found.messages) == 4
    assert len(found.lookup_ms) == 100
    text = bench.stateless_report(found)
    for row in (
        "history lookup p50 / p99",
        "response p50 with the header / without",
        "tool loop p50 with the header / whole history",
        "conversations in the store",
    ):
        assert row in text, row


OPEN_COLUMNS = (
    "rate/s",
    "completed",
    "errors",
    "held",
    "overhead p50",
    "overhead p99",
    "target p99",
    "gateway CPU/turn",
    "<= 3 ms",
    "pause penalty",
    "CPU/turn / penalty",
    "RSS peak",
    "load avg",
)


def test_the_open_loop_answers_every_request_on_two_workers_and_reports_every_column() -> None:
    [step] = bench.open_loop([20.0], 1.0, latency_ms=20.0, conversations=5, workers=2)

    assert (step.done, step.scheduled, step.errors) == (20, 20, [])
    assert step.workers == 2 and len(step.net_ms) == 20  # every turn matched to the model
    assert step.rss_peak > 0 and step.cpu_seconds > 0 and step.loadavg
    assert step.pause_penalty > 0  # measured before the rate ran, not left NaN
    text = bench.open_report([step])
    assert "--workers 2, 5 conversations" in text and "20/20" in text
    for column in OPEN_COLUMNS:
        assert column in text, column


def test_a_request_due_while_its_conversation_is_answering_waits_for_the_answer() -> None:
    # Two conversations, a request every 20 ms, a 100 ms model: each conversation's next
    # request falls due while its previous answer is still out.
    [step] = bench.open_loop([50.0], 0.4, latency_ms=100.0, conversations=2, workers=1)

    assert (step.done, step.scheduled, step.errors) == (20, 20, [])
    assert step.held > 0
    # Held requests count from when they were due: the wait shows in the response time.
    assert max(step.response_ms) > 5 * 100.0
    answered = [words for words, _ in step.answered]
    for number in (0, 1):
        turns = [w for w in answered if w.startswith(f"conversation {number} ")]
        assert turns == [f"conversation {number} turn {t}" for t in range(1, 11)]


def test_the_open_loop_options() -> None:
    assert bench._options([])["rates"] == (10.0, 25.0, 50.0, 100.0)
    assert bench._options(["--quick"])["rates"] == bench.QUICK["rates"]
    assert bench._options(["--quick"])["open_seconds"] < bench._options([])["open_seconds"]
    chosen = bench._options(["--gateway-rates", "5,7.5", "--gateway-workers", "1,3"])
    assert chosen["rates"] == (5.0, 7.5) and chosen["workers"] == (1, 3)
    with pytest.raises(SystemExit):
        bench._options(["--gateway-rates", "0,5"])


def test_the_pause_penalty_is_a_ratio_of_two_measured_cpu_times(capsys) -> None:
    assert 0 < pause_penalty.penalty(0.001, runs=5) < 100
    pause_penalty.main(["--gap", "0", "--runs", "3"])
    assert "its CPU back to back" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        pause_penalty.main(["--runs", "0"])
