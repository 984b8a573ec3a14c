"""`hermes sessions ...` on a store holding a compressed conversation, run as a user would."""

from __future__ import annotations

import json
import sqlite3
import time

from hermes.state import SessionDB
from tests.cli.helpers import assert_one_line_error, mode_of


def test_list_shows_one_row_per_conversation(hermes, compressed):
    result = hermes("sessions", "list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["TITLE", "MESSAGES", "LAST", "ACTIVE", "SOURCE", "NOTE", "ID"]
    safari = next(line for line in lines if line.startswith("Safari notes"))
    # The tip, not the root, last; six original messages (the summary copy is not counted).
    assert safari.split()[2] == "6" and safari.split()[-1] == compressed.tip
    assert safari.split()[-2] == "cli"  # answered, nothing undone: no note
    assert len(lines) == 3


def test_list_json_source_and_limit(hermes, compressed):
    rows = json.loads(hermes("sessions", "list", "--json").stdout)
    by_id = {r["conversation_id"]: r for r in rows}
    assert by_id[compressed.root]["tip_id"] == compressed.tip
    assert by_id[compressed.root]["segments"] == 2
    assert by_id[compressed.root]["messages"] == 6
    only = json.loads(hermes("sessions", "list", "--json", "--source", "telegram").stdout)
    assert [r["conversation_id"] for r in only] == [compressed.other]
    assert len(json.loads(hermes("sessions", "list", "--json", "-n", "1").stdout)) == 1


def test_list_says_when_there_are_more_than_it_shows(hermes, compressed):
    cut = hermes("sessions", "list", "-n", "1")
    assert len(cut.stdout.strip().splitlines()) == 2  # the header and one row: rows only
    assert "The 1 most recently active shown; there are more" in cut.stderr
    assert hermes("sessions", "list").stderr == ""  # all of them fit: nothing to add


def test_sessions_alone_lists(hermes, compressed):
    assert "Safari notes" in hermes("sessions").stdout


def test_show_prints_the_whole_logical_conversation(hermes, compressed):
    result = hermes("sessions", "show", compressed.tip)  # any segment id works
    assert result.returncode == 0, result.stderr
    out = result.stdout
    order = ["tell me about zebras", "Lions live in prides.", "compressed here: segment 2",
             "what about giraffes", "Giraffes have long necks."]  # fmt: skip
    positions = [out.index(text) for text in order]
    assert positions == sorted(positions)
    assert "[summary]" not in out  # the marker stands for the summary


def test_show_by_title(hermes, compressed):
    assert "Giraffes" in hermes("sessions", "show", "Safari notes").stdout


def test_search_finds_messages_of_every_segment(hermes, compressed):
    hits = json.loads(hermes("sessions", "search", "zebras", "--json").stdout)
    assert {h["session_id"] for h in hits} == {compressed.root}
    assert hits[0]["conversation_id"] == compressed.root
    giraffes = hermes("sessions", "search", "giraffes")
    assert giraffes.returncode == 0
    assert "Safari notes" in giraffes.stdout
    # The live segment's id, as `sessions list` shows it (not the root's).
    assert giraffes.stdout.strip().splitlines()[-1].split()[-1] == compressed.tip
    assert hits[0]["tip_id"] == compressed.tip
    assert "No messages match" in hermes("sessions", "search", "platypus").stdout


def test_export_jsonl_to_stdout(hermes, compressed):
    result = hermes("sessions", "export", compressed.root, "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    items = [json.loads(line) for line in result.stdout.splitlines()]
    assert items[0]["type"] == "conversation"
    assert items[0]["segments"] == [compressed.root, compressed.tip]
    messages = [i["content"] for i in items if i["type"] == "message"]
    assert messages == [
        "tell me about zebras", "Zebras are striped horses of Africa.", "and lions?",
        "Lions live in prides.", "what about giraffes", "Giraffes have long necks.",
    ]  # fmt: skip
    assert any(i["type"] == "compaction" for i in items)


def test_export_markdown_to_a_private_file(hermes, compressed, tmp_path):
    target = tmp_path / "safari.md"
    result = hermes("sessions", "export", compressed.tip, "--format", "md", "-o", str(target))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    text = target.read_text()
    assert text.startswith("# Safari notes")
    assert "compressed here" in text and "Giraffes have long necks." in text
    assert mode_of(target) == 0o600
    assert list(tmp_path.iterdir()) == [target]  # no temporary file left behind


def test_export_pages_through_a_long_conversation(hermes, cli_env, compressed):
    with SessionDB(db_path=compressed.db_path) as db:
        batch = [{"role": "user", "content": f"line {n}"} for n in range(2500)]
        db.append_messages(compressed.tip, batch)
    result = hermes("sessions", "export", compressed.root)
    lines = result.stdout.splitlines()
    contents = [json.loads(line).get("content") for line in lines]
    assert contents[-1] == "line 2499"
    assert sum(1 for c in contents if (c or "").startswith("line ")) == 2500


def test_lineage_is_a_numbered_list_whose_counts_add_up(hermes, compressed):
    result = hermes("sessions", "lineage", compressed.tip)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "Safari notes" in lines[0] and compressed.root in lines[0]
    assert "6 messages, 2 segments" in lines[0]
    assert lines[1] == "1 → 2"
    assert lines[2].split()[:3] == ["#", "SEGMENT", "MESSAGES"]
    first, second = lines[3].split(), lines[4].split()
    assert first[:3] == ["1", compressed.root, "4"] and "compression" in lines[3]
    assert second[:3] == ["2", compressed.tip, "2"] and "live (tip)" in lines[4]
    assert not lines[4].startswith(" ")  # flat: no indentation per segment
    tree = json.loads(hermes("sessions", "lineage", compressed.root, "--json").stdout)
    assert tree["messages"] == 6 and tree["segments"] == 2
    root = tree["root"]
    assert (root["id"], root["end_reason"], root["messages"]) == (compressed.root, "compression", 4)
    (child,) = root["children"]
    assert (child["id"], child["end_reason"], child["messages"]) == (compressed.tip, None, 2)


def test_rename_titles_every_segment(hermes, compressed):
    result = hermes("sessions", "rename", compressed.tip, "Big", "cats")
    assert result.returncode == 0, result.stderr
    with SessionDB(db_path=compressed.db_path, read_only=True) as db:
        assert [s["title"] for s in db.get_segments(compressed.root)] == ["Big cats", "Big cats #2"]
        assert db.find_conversation_by_title("Big cats") == compressed.tip


def test_delete_with_yes_does_not_ask(hermes, compressed):
    result = hermes("sessions", "delete", compressed.other, "--yes")
    assert result.returncode == 0, result.stderr
    assert "?" not in result.stdout
    assert compressed.other not in hermes("sessions", "list").stdout


def test_prune_deletes_only_idle_conversations(hermes, compressed):
    old = time.time() - 40 * 86400
    with sqlite3.connect(compressed.db_path) as raw:
        raw.execute("UPDATE sessions SET last_active_at = ? WHERE conversation_id = ?",
                    (old, compressed.root))  # fmt: skip
    preview = hermes("sessions", "prune", "--older-than", "30", "--dry-run")
    assert preview.returncode == 0 and compressed.root in preview.stdout
    assert "Would delete 1 conversation" in preview.stdout
    assert hermes("sessions", "show", compressed.root).returncode == 0

    result = hermes("sessions", "prune", "--older-than", "30", "--yes")
    assert result.returncode == 0, result.stderr
    assert "Deleted 1 conversation" in result.stdout
    listed = hermes("sessions", "list").stdout
    assert "Safari notes" not in listed and "Shopping" in listed


# -- what a person can get wrong ---------------------------------------------------------


def test_missing_store_is_one_sentence_and_creates_nothing(hermes, cli_env):
    # (An empty listing is no error: see test_first_run.)
    for args in (("sessions", "show", "x"), ("sessions", "delete", "x")):
        assert_one_line_error(hermes(*args), "No conversations yet", "hermes chat")
    assert not (cli_env.home / "state.db").exists()


def test_unknown_id_is_one_sentence(hermes, compressed):
    for verb in ("show", "export", "lineage"):
        assert_one_line_error(hermes("sessions", verb, "no-such-id"), "no-such-id", "sessions list")


def test_corrupt_store_is_one_sentence_and_left_alone(hermes, cli_env):
    db = cli_env.home / "state.db"
    db.write_bytes(b"this is not a database" * 100)
    before = db.read_bytes()
    assert_one_line_error(hermes("sessions", "list"), str(db))
    assert_one_line_error(hermes("sessions", "delete", "x", "--yes"), str(db))
    assert db.read_bytes() == before


def test_read_only_commands_do_not_write(hermes, compressed):
    before = compressed.db_path.stat().st_mtime_ns
    for args in (("list",), ("show", compressed.root), ("search", "lions"),
                 ("export", compressed.root), ("lineage", compressed.root)):  # fmt: skip
        assert hermes("sessions", *args).returncode == 0
    assert compressed.db_path.stat().st_mtime_ns == before


def test_export_to_an_unwritable_place(hermes, compressed, tmp_path):
    target = tmp_path / "missing-folder" / "out.jsonl"
    assert_one_line_error(hermes("sessions", "export", compressed.root, "-o", str(target)),
                          "Cannot write")  # fmt: skip


def test_export_as_hermes_agent_callers_ask_for_it(hermes, compressed, tmp_path):
    """0.19's flags: `--session-id ID -` (one session's JSON line on stdout), `--session-id ID
    FILE`, `-` or a FILE alone for every session, `--redact` and `--yes` accepted."""
    one = hermes("sessions", "export", "-", "--session-id", compressed.tip)
    assert one.returncode == 0, one.stderr
    (record,) = [json.loads(line) for line in one.stdout.splitlines()]
    assert record["id"] == compressed.tip and record["messages"]
    assert {"role", "content"} <= set(record["messages"][0])

    out = tmp_path / "one.jsonl"
    written = hermes(
        "sessions", "export", "--session-id", compressed.tip, str(out), "--redact", "-y"
    )
    assert written.returncode == 0, written.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["id"] == compressed.tip
    assert mode_of(out) == 0o600

    every = hermes("sessions", "export", "-")
    ids = [json.loads(line)["id"] for line in every.stdout.splitlines()]
    assert every.returncode == 0 and compressed.root in ids and compressed.tip in ids
    all_file = tmp_path / "all.jsonl"
    assert hermes("sessions", "export", str(all_file)).returncode == 0
    assert len(all_file.read_text(encoding="utf-8").splitlines()) == len(ids)

    # hermes's own export of a conversation by id is unchanged.
    own = hermes("sessions", "export", compressed.tip)
    assert json.loads(own.stdout.splitlines()[0])["type"] == "conversation"

    assert_one_line_error(
        hermes("sessions", "export", "--session-id", "nope", "-"), "No session 'nope'"
    )
    assert_one_line_error(hermes("sessions", "export", "typo"), "No conversation", "all.jsonl")
    assert hermes("sessions", "export").returncode == 2


def test_list_columns_line_up_under_wide_titles(hermes, compressed):
    from hermes.text import cells

    with SessionDB(db_path=compressed.db_path) as db:
        wide = db.create_session(source="cli", title="東京の旅行メモ", model="fake-model")
        db.append_message(wide, role="user", content="こんにちは")
    lines = hermes("sessions", "list").stdout.splitlines()
    # A CJK character takes two columns: the ids end at the same column on every row.
    ends = {cells(line) for line in lines[1:]}
    assert len(ends) == 1, lines
