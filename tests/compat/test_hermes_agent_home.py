"""A Hermes Agent home's own state.db, opened in place by hermes commands.

The store is written by a real Hermes Agent 0.19 (see conftest.py); the commands run as
subprocesses, on a pty (pexpect) where a person would answer, or through pipes as a
script would.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pexpect
import pytest

from hermes.compat.session_db import SessionDB
from hermes.state.errors import HermesAgentStoreError
from hermes.state.sqlite.schema import MIGRATIONS
from tests.cli.helpers import hermes_command, mode_of
from tests.compat.hermes_agent import build_store, check_imported

pytestmark = pytest.mark.hermes_agent
TIMEOUT = 60


@pytest.fixture
def ha_home(hermes_agent_python, hermes_home) -> tuple[Path, list[dict]]:
    """HERMES_HOME holding a Hermes Agent state.db and memories, as 0.19 leaves them."""
    rows = build_store(hermes_agent_python, hermes_home / "state.db")
    memories = hermes_home / "memories"
    memories.mkdir(exist_ok=True)
    (memories / "MEMORY.md").write_text("the user likes Lisbon\n")
    return hermes_home / "state.db", rows


def hermes(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*hermes_command(), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=TIMEOUT)  # fmt: skip


def on_a_terminal(*args: str) -> pexpect.spawn:
    command = hermes_command()
    return pexpect.spawn(command[0], [*command[1:], *args], encoding="utf-8",
                         timeout=TIMEOUT, dimensions=(40, 200))  # fmt: skip


def finish(child: pexpect.spawn) -> tuple[str, int]:
    child.expect(pexpect.EOF)
    child.close()
    return child.before, child.exitstatus


def backups(store: Path) -> list[Path]:
    return sorted(store.parent.glob("state.db.hermes-agent-*.bak"))


def is_hermes_store(path: Path) -> bool:
    with sqlite3.connect(path) as conn:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
    conn.close()
    return "conversation_id" in columns


def check_store(store: Path, rows: list[dict]) -> None:
    db = SessionDB(db_path=store, read_only=True)
    try:
        check_imported(db, rows)
    finally:
        db.close()


def test_asked_on_a_terminal_the_store_is_upgraded_in_place_once(ha_home) -> None:
    store, rows = ha_home
    original = store.read_bytes()
    memories = (store.parent / "memories" / "MEMORY.md").read_bytes()

    child = on_a_terminal("sessions", "list")
    child.expect("Hermes Agent 0.19 store. Upgrade it in place")
    child.sendline("y")
    output, status = finish(child)
    assert status == 0, output
    assert "Upgraded" in output and "every one verified" in output
    assert "Trip planning" in output and "root-2" in output  # then the listing itself

    [backup] = backups(store)
    assert backup.read_bytes() == original and mode_of(backup) == 0o600
    assert mode_of(store) == 0o600 and is_hermes_store(store)
    assert not store.with_name("state.db.upgrading").exists()
    assert not store.with_name("state.db.upgrade-lock").exists()  # nothing left behind
    check_store(store, rows)
    assert (store.parent / "memories" / "MEMORY.md").read_bytes() == memories

    again = hermes("sessions", "list")
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert "Trip planning" in again.stdout
    assert backups(store) == [backup]
    found = hermes("sessions", "search", "noted")  # archived by an in-place compaction
    assert found.returncode == 0 and "noted" in found.stdout and found.stderr == ""
    imported = hermes("import", "hermes-agent", "--yes")
    assert imported.returncode == 0, imported.stderr
    assert "Nothing to import" in imported.stdout and backup.name in imported.stdout


def test_said_no_or_without_a_terminal_hermes_only_reads_the_store(ha_home) -> None:
    store, rows = ha_home
    before = store.read_bytes()

    child = on_a_terminal("sessions", "list")
    child.expect("Upgrade it in place")
    child.sendline("n")
    output, status = finish(child)
    assert status == 0 and "Trip planning" in output and "root-2" in output

    found = hermes("sessions", "search", "noted")  # archived by compaction: still found
    assert found.returncode == 0 and "noted" in found.stdout, found.stderr
    assert "hermes import hermes-agent" in found.stderr and "read-only" in found.stderr
    shown = hermes("sessions", "show", "root-2", "--no-pager")
    assert "compacted summary of Lisbon" in shown.stdout and "Faro has beaches" in shown.stdout

    refused = hermes("sessions", "rename", "root-2", "New title")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "hermes import hermes-agent" in refused.stderr and "Not changed" in refused.stderr
    assert store.read_bytes() == before and backups(store) == []
    assert not is_hermes_store(store)


def test_an_upgrade_killed_midway_then_run_again_leaves_one_correct_store(
    hermes_agent_python, hermes_home
) -> None:
    store = hermes_home / "state.db"
    rows = build_store(hermes_agent_python, store, extra_sessions=300)
    original = store.read_bytes()

    upgrading = subprocess.Popen([*hermes_command(), "import", "hermes-agent", "--yes"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert upgrading.stderr is not None
    for line in upgrading.stderr:
        if line.startswith("messages:"):  # sessions are being written into the new store
            upgrading.send_signal(signal.SIGKILL)
            break
    assert upgrading.wait(timeout=TIMEOUT) == -signal.SIGKILL
    assert store.read_bytes() == original  # untouched: the new store was being built beside it
    assert store.with_name("state.db.upgrading").exists()

    done = hermes("import", "hermes-agent", "--yes")
    assert done.returncode == 0, done.stderr
    assert "Verified" in done.stdout and "Upgraded" in done.stderr
    [backup] = backups(store)
    assert backup.read_bytes() == original
    assert not store.with_name("state.db.upgrading").exists()
    check_store(store, rows)


def test_doctor_tells_a_hermes_agent_store_from_a_newer_hermes_store(ha_home, tmp_path) -> None:
    store, _ = ha_home
    report = hermes("doctor", "--offline")
    assert "a Hermes Agent 0.19 store" in report.stdout
    assert "`hermes import hermes-agent` to upgrade it in place" in report.stdout
    assert "newer hermes" not in report.stdout

    store.unlink()
    SessionDB(db_path=store).close()
    with sqlite3.connect(store) as conn:
        conn.execute("INSERT INTO schema_version VALUES (99, 'from the future', 0)")
    conn.close()
    report = hermes("doctor", "--offline")
    assert "written by a newer hermes" in report.stdout and "Upgrade hermes" in report.stdout
    assert "Hermes Agent 0.19 store" not in report.stdout


def _crafted_deep_chain(conn: sqlite3.Connection) -> None:
    """A parent chain deeper than Python's recursion limit, and a loop of two parents."""
    conn.executemany(
        "INSERT INTO sessions (id, source, parent_session_id, started_at) VALUES (?, 'cli', ?, 1)",
        [(f"deep-{n}", f"deep-{n - 1}" if n else "loop-a") for n in range(1200)],
    )
    conn.execute("INSERT INTO sessions (id, source, parent_session_id, started_at)"
                 " VALUES ('loop-a', 'cli', 'loop-b', 1), ('loop-b', 'cli', 'loop-a', 1)")  # fmt: skip


def _crafted_bad_times(conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE messages SET timestamp = 'yesterday' WHERE id = 3")


def _damaged(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=DELETE")


@pytest.mark.parametrize("craft", [_crafted_deep_chain, _crafted_bad_times])
def test_a_crafted_store_is_upgraded_or_refused_in_one_sentence(craft, ha_home) -> None:
    store, rows = ha_home
    with sqlite3.connect(store) as conn:
        craft(conn)
    conn.close()
    before = store.read_bytes()
    done = hermes("import", "hermes-agent", "--yes")
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    if done.returncode == 0:  # a strange but readable store comes over whole
        check_store(store, rows)
        return
    assert done.returncode == 1
    assert [line for line in done.stderr.splitlines() if line.startswith("Error")] == [
        done.stderr.strip().splitlines()[-1]
    ]
    assert "nothing was changed" in done.stderr and str(store) + " " in done.stderr
    assert store.read_bytes() == before and not is_hermes_store(store) and backups(store) == []
    assert not store.with_name("state.db.upgrading").exists()


def test_a_damaged_store_is_refused_in_one_sentence(ha_home) -> None:
    store, _ = ha_home
    with sqlite3.connect(store) as conn:
        _damaged(conn)
    conn.close()
    data = bytearray(store.read_bytes())
    page = 4096
    data[2 * page : 6 * page] = b"\xa5" * (4 * page)  # the pages after the schema
    store.write_bytes(bytes(data))
    listed = hermes("sessions", "list")
    upgraded = hermes("import", "hermes-agent", "--yes")
    for done in (listed, upgraded):
        assert done.returncode != 0 and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert store.read_bytes() == bytes(data)


def test_after_the_upgrade_the_model_sees_the_live_context_only(ha_home, fake_llm) -> None:
    store, _ = ha_home
    assert hermes("import", "hermes-agent", "--yes").returncode == 0
    env = {**os.environ, "HERMES_BASE_URL": fake_llm.url, "HERMES_MODEL": "fake-model"}
    done = subprocess.run([*hermes_command(), "chat", "--resume", "root-2", "-q", "and Faro?"],
                          env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=TIMEOUT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    sent = [m.get("content") for m in fake_llm.requests[-1]["messages"]]
    assert "second summary: Lisbon, then Porto" in sent and "Faro has beaches." in sent
    for gone in ("noted", "compacted summary of Lisbon", "and Lagos instead?", "Lagos has cliffs."):
        assert gone not in sent  # archived by compaction, or rewound
    assert sent[-1] == "and Faro?"


@pytest.mark.parametrize("version", [None, MIGRATIONS[-1].version, 1])
def test_the_library_names_the_upgrade_and_leaves_the_file_alone(ha_home, version) -> None:
    """Told by its tables, whatever its schema version (an older Hermes Agent's, or one
    equal to this hermes's)."""
    store, _ = ha_home
    if version is not None:
        with sqlite3.connect(store) as conn:
            conn.execute("UPDATE schema_version SET version = ?", (version,))
        conn.close()
    before = store.read_bytes()
    for read_only in (False, True):
        with pytest.raises(HermesAgentStoreError) as refused:
            SessionDB(db_path=store, read_only=read_only)
        assert "Hermes Agent 0.19 store" in str(refused.value)
        assert "`hermes import hermes-agent`" in str(refused.value)
        assert "newer hermes" not in str(refused.value)
    assert store.read_bytes() == before


def _upgrade_in_child(path: str) -> bool:
    from hermes.compat import upgrade

    return upgrade.upgrade_in_place(Path(path)) is not None


def test_processes_upgrading_at_once_make_one_store_and_leave_no_lock_file(ha_home) -> None:
    """The lock is the store's folder: four processes at once, one upgrade, one backup,
    and no lock file beside the store afterwards."""
    import multiprocessing

    store, rows = ha_home
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        upgraded = pool.map(_upgrade_in_child, [str(store)] * 4)
    assert sorted(upgraded) == [False, False, False, True]
    assert len(backups(store)) == 1 and is_hermes_store(store)
    check_store(store, rows)
    leftovers = [p.name for p in store.parent.iterdir() if p.name.startswith("state.db.")]
    assert [n for n in leftovers if not n.endswith(".bak")] == []
