"""The anchor index: exact strings from the messages a summary covers, never paraphrased,
the same index for the same rows (the prompt cache keeps hitting), within its cap."""

from __future__ import annotations

import copy
import json
from typing import Any

from hermes.agent import anchors
from hermes.agent.summariser import SUMMARY_PREFIX

TRANSCRIPT: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": (
            "The deploy broke after https://github.com/acme/shop/pull/481 landed. "
            "Look at services/billing/invoice_writer.py, issue #4412, and the "
            "InvoiceWriter class (max_retry_seconds is suspicious). We run v2.14.3."
        ),
    },
    {
        "role": "assistant",
        "content": "Checking the log.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {
                    "name": "terminal",
                    "arguments": json.dumps({"command": "tail -n 50 /var/log/shop/billing.log"}),
                },
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "c1",
        "tool_name": "terminal",
        "content": (
            "2026-12-01 09:14:02 INFO start commit 9f3b2c4d1e\n"
            "Traceback (most recent call last):\n"
            '  File "services/billing/invoice_writer.py", line 88, in flush\n'
            "psycopg.OperationalError: connection to server at 10.0.3.7:5432 refused\n"
            "job 7c9e6679-7425-40de-944b-e07fc1f90ae7 failed after 3 attempts"
        ),
    },
    {"role": "assistant", "content": "The database at 10.0.3.7 refused the connection."},
]


def test_paths_hashes_urls_and_error_lines_are_found_verbatim_in_order() -> None:
    found = anchors.extract(TRANSCRIPT)
    by_kind: dict[str, list[str]] = {}
    for anchor in found:
        by_kind.setdefault(anchor.kind, []).append(anchor.text)

    assert by_kind["url"] == ["https://github.com/acme/shop/pull/481"]
    assert by_kind["path"] == ["services/billing/invoice_writer.py", "/var/log/shop/billing.log"]
    assert by_kind["id"] == ["9f3b2c4d1e", "7c9e6679-7425-40de-944b-e07fc1f90ae7"]
    assert by_kind["error"] == [
        "psycopg.OperationalError: connection to server at 10.0.3.7:5432 refused",
        "job 7c9e6679-7425-40de-944b-e07fc1f90ae7 failed after 3 attempts",
    ]
    assert "issue #4412" in by_kind["number"] and "v2.14.3" in by_kind["number"]
    assert {"InvoiceWriter", "max_retry_seconds"} <= set(by_kind["name"])
    # Never paraphrased: every anchor is a substring of a message as stored.
    stored = json.dumps(TRANSCRIPT, ensure_ascii=False) + "".join(
        str(m["content"]) for m in TRANSCRIPT
    )
    assert all(a.text in stored for a in found)
    # Each once, in order of first appearance.
    assert len({a.text for a in found}) == len(found)
    assert [a.first for a in found] == sorted(a.first for a in found)
    # A path mentioned in two messages counts both.
    path = next(a for a in found if a.text == "services/billing/invoice_writer.py")
    assert path.messages == 2


def test_the_same_rows_give_the_byte_identical_index() -> None:
    first = anchors.index_block(TRANSCRIPT, recall=True)
    again = anchors.index_block(copy.deepcopy(TRANSCRIPT), recall=True)

    assert first == again
    assert first.startswith(anchors.INDEX_HEADER)
    assert 'recall(query="<any of them>")' in first.splitlines()[0]
    assert "\n- psycopg.OperationalError: connection to server at 10.0.3.7:5432 refused" in first
    assert "files: services/billing/invoice_writer.py · /var/log/shop/billing.log" in first
    assert "recall" not in anchors.index_block(TRANSCRIPT, recall=False)


def test_a_long_transcript_keeps_the_most_distinctive_anchors_within_the_cap() -> None:
    noise = " ".join(f"helper_function_{n}" for n in range(400))
    messages = [
        {"role": "tool", "tool_call_id": "c", "content": noise},
        {"role": "user", "content": "the fix is in src/core/ledger_sync.py at commit a1b2c3d4e5"},
        {"role": "tool", "tool_call_id": "d", "content": "KeyError: 'ledger_id'"},
    ]
    block = anchors.index_block(messages, recall=True)
    body = block.split("\n", 1)[1]

    assert len(body) <= anchors.MAX_INDEX_CHARS + 100
    for kept in ("src/core/ledger_sync.py", "a1b2c3d4e5", "- KeyError: 'ledger_id'"):
        assert kept in body
    assert 0 < body.count("helper_function_") < 400
    # A short middle gets a short index.
    short = {"role": "tool", "tool_call_id": "c", "content": noise[:1500]}
    small = anchors.index_block([short], recall=True).split("\n", 1)[1]
    assert len(small) <= anchors.MIN_INDEX_CHARS + 20 < len(body)


def test_an_earlier_summary_gives_its_anchors_not_its_paraphrase() -> None:
    earlier = anchors.index_block(TRANSCRIPT, recall=True)
    summary = {
        "role": "user",
        "content": f"{SUMMARY_PREFIX} framing\n\nThe team fixed Made_Up_Name.\n\n{earlier}",
    }
    later = [summary, {"role": "user", "content": "now look at web/cart_view.py"}]

    texts = [a.text for a in anchors.extract(later)]

    assert "Made_Up_Name" not in texts
    assert "services/billing/invoice_writer.py" in texts and texts[-1] == "web/cart_view.py"
    assert anchors.index_block(later, recall=True).count("invoice_writer.py") == 1


def test_a_masked_tool_output_keeps_the_id_that_brings_it_back() -> None:
    stub = {
        "role": "tool",
        "tool_call_id": "c9",
        "content": "[tool output masked: read_file, 48211 chars; recall(message_id=812) returns it]",
    }
    block = anchors.index_block([stub], recall=True)

    assert block.splitlines()[-1] == "masked tool outputs: recall(message_id=812)"
    assert list(anchors.parse(f"{SUMMARY_PREFIX} x\n\n{block}")) == [
        ("masked", "recall(message_id=812)")
    ]


def test_no_kind_crowds_out_the_others_and_specific_shapes_go_first() -> None:
    listing = "\n".join(f"/srv/data/shard_{n:04d}/part.parquet" for n in range(300))
    prose = " ".join(f"job.pod pod.job cron.node{n}" for n in range(200))
    messages = [
        {"role": "tool", "tool_call_id": "c", "content": listing},
        {"role": "tool", "tool_call_id": "d", "content": prose + " QueueDrainHandler_v7"},
        {
            "role": "user",
            "content": "The build is https://ci.example.org/b/7781 and ticket 88123456; "
            "it failed with: ERROR shard.sync: checksum mismatch on shard 3 (code E4411) . "
            "and then a lot more prose that is not part of the error at all, " * 2,
        },
    ]
    body = anchors.index_block(messages, recall=True)

    assert "urls: https://ci.example.org/b/7781" in body
    assert "88123456" in body and "QueueDrainHandler_v7" in body
    assert "ERROR shard.sync: checksum mismatch on shard 3 (code E4411)" in body
    assert body.count("/srv/data/shard_") > 3


def test_every_index_of_a_summary_in_segments_is_read_and_nothing_after_it() -> None:
    first = anchors.index_block(TRANSCRIPT[:1], recall=True)
    second = anchors.index_block(
        [{"role": "user", "content": "then web/cart_view.py broke"}], recall=True
    )
    content = (
        f"{SUMMARY_PREFIX} framing\n\nThe first part.\n\n{first}\n\n"
        f"Continued: the next part.\n\n{second}\n\nfiles: made_up/by_the_model.py"
    )

    texts = [text for _, text in anchors.parse(content)]

    assert texts[0] == "services/billing/invoice_writer.py" and texts[-1] == "web/cart_view.py"
    assert "made_up/by_the_model.py" not in texts


def test_of_anchors_alike_over_the_cap_what_was_said_goes_first() -> None:
    # Ten commit hashes of one shape and length; the cap holds few. Those the user said
    # go first: a tool output's are also reached through its call (its path, its id).
    said = [f"{n}a" * 20 for n in range(1, 6)]
    read = [f"{n}b" * 20 for n in range(1, 6)]
    messages = [
        {"role": "tool", "tool_call_id": "c", "content": " ".join(read)},
        *({"role": "user", "content": f"keep {h} for later"} for h in said),
    ]
    found = anchors.extract(messages)
    assert {a.kind for a in found} == {anchors.ID} and len(found) == 10

    kept = [a.text for a in anchors._within_cap(found, cap=5 * 43)]

    assert kept == said


def test_an_earlier_summarys_anchors_are_all_carried_past_the_cap() -> None:
    """Issue 55: an anchor once shown is never dropped, however many there are."""
    hashes = [f"{n:02d}" + "c" * 38 for n in range(60)]  # 60 x 43 chars, over any cap
    earlier = f"{SUMMARY_PREFIX} x\n\n[ANCHORS] y\ncommits and ids: {' · '.join(hashes)}"
    new = [f"{n:02d}" + "d" * 38 for n in range(60)]
    messages = [
        {"role": "user", "content": earlier},
        {"role": "user", "content": " ".join(new)},
    ]

    block = anchors.index_block(messages, recall=True)
    carried_only = anchors.index_block(messages, recall=True, new=False)

    assert all(h in block and h in carried_only for h in hashes)
    assert 0 < sum(h in block for h in new) < len(new)  # the new ones within their cap
    assert not any(h in carried_only for h in new)


def test_where_a_tool_cut_its_output_is_not_an_anchor() -> None:
    from hermes.tools._output import cap_text

    output = "start 4412873 of the run\n" + "x" * 50_000 + "\nend of the run"
    found = [a.text for a in anchors.extract([{"role": "tool", "content": cap_text(output, 200)}])]

    assert found == ["4412873"]  # the count of characters cut is the runtime's, not the work's


def _ran(n: int, path: str, output: str) -> list[dict[str, Any]]:
    call = {
        "id": f"c{n}",
        "type": "function",
        "function": {"name": "terminal", "arguments": json.dumps({"command": f"cat {path}"})},
    }
    return [
        {"role": "user", "content": f"Run `cat {path}` and look at the failures."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": output},
        {"role": "assistant", "content": "Done, nothing failed."},
    ]


def test_a_summary_of_a_hundred_turns_of_tool_work_names_every_file_they_read() -> None:
    """Issue 55: the cap grows with the messages covered; a fixed one (1,600 characters)
    held about a fifth of these paths, and so of the ways back to what the files said."""
    paths = [f"/srv/checkout/shop/logs/run_{n:03d}.log" for n in range(100)]
    messages = []
    for n, path in enumerate(paths):
        names = " ".join(f"ledger_{w}_{n}" for w in ("sync", "merge", "drift"))
        messages += _ran(n, path, f"INFO {names} " + "steady state " * 60)
    block = anchors.index_block(messages, recall=True)

    assert [p for p in paths if p not in block] == []
    assert len(block) <= anchors.PER_MESSAGE_CHARS * len(messages) + 300
    # A short middle still gets a short index.
    assert len(anchors.index_block(messages[:8], recall=True)) <= anchors.MAX_INDEX_CHARS + 300


def test_the_summary_model_reads_an_earlier_summary_without_its_index() -> None:
    index = anchors.index_block(TRANSCRIPT, recall=True)
    summary = f"Summary of 4 messages:\nThe deploy broke.\n\n{index}\n\nContinued: next:\nFixed."

    assert anchors.words_only(summary) == (
        "Summary of 4 messages:\nThe deploy broke.\n\nContinued: next:\nFixed."
    )
