"""``tools.user_files``: hermes reads a user's file beneath its root, never through a link.

A real folder under /var/tmp with the operator's secret beside it (outside the root):
a symbolic link as the file, as a folder on the way, a hard link, ``..`` and a path the
view hides are each refused in one sentence; plain files and folders read as before.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.tools.user_files import RefusedRead, UserFiles, workspace_files

SECRET = "OPENAI_API_KEY=sk-user-files-canary-2c9d"


@pytest.fixture
def place() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="hermes-user-files-", dir="/var/tmp"))
    (root / "secret.env").write_text(SECRET, encoding="utf-8")
    (root / "secret-dir").mkdir()
    (root / "secret-dir" / "SKILL.md").write_text(SECRET, encoding="utf-8")
    (root / "ws").mkdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_a_plain_file_and_folder_read(place: Path) -> None:
    ws = place / "ws"
    (ws / "AGENTS.md").write_text("Use tabs.", encoding="utf-8")
    (ws / ".hermes" / "skills" / "a").mkdir(parents=True)
    (ws / ".hermes" / "skills" / "a" / "SKILL.md").write_text("skill a", encoding="utf-8")
    files = UserFiles(ws)
    assert files.text("AGENTS.md") == "Use tabs."
    assert files.text(".hermes/skills/a/SKILL.md", limit=5) == "skill"
    walked = [(str(here), sorted(names)) for here, _, names in files.walk_beneath(".hermes/skills")]
    assert walked == [(".hermes/skills", []), (".hermes/skills/a", ["SKILL.md"])]
    with pytest.raises(FileNotFoundError):
        files.text("missing.md")


def test_a_symbolic_link_as_the_file_is_refused(place: Path) -> None:
    (place / "ws" / "AGENTS.md").symlink_to(place / "secret.env")
    with pytest.raises(RefusedRead, match=r"AGENTS.md is a symbolic link, which hermes never"):
        UserFiles(place / "ws").text("AGENTS.md")


def test_a_symbolic_link_as_a_folder_on_the_way_is_refused(place: Path) -> None:
    (place / "ws" / ".hermes").symlink_to(place / "secret-dir")
    files = UserFiles(place / "ws")
    with pytest.raises(RefusedRead, match=r"\.hermes is a symbolic link"):
        files.text(".hermes/SKILL.md")
    assert list(files.walk_beneath(".hermes")) == []


def test_links_inside_a_walked_folder_are_left_out(place: Path) -> None:
    skills = place / "ws" / "skills"
    skills.mkdir()
    (skills / "linked").symlink_to(place / "secret-dir")
    (skills / "SKILL.md").symlink_to(place / "secret.env")
    assert [(str(h), d, f) for h, d, f in UserFiles(place / "ws").walk_beneath("skills")] == [
        ("skills", [], [])
    ]


def test_a_hard_link_is_refused(place: Path) -> None:
    os.link(place / "secret.env", place / "ws" / ".hermes.md")
    with pytest.raises(RefusedRead, match=r"\.hermes\.md has other hard links"):
        UserFiles(place / "ws").text(".hermes.md")


def test_a_path_out_of_the_root_is_refused(place: Path) -> None:
    with pytest.raises(RefusedRead, match="is not inside"):
        UserFiles(place / "ws").text("../secret.env")


def test_a_path_the_view_hides_is_refused(place: Path, hermes_home: Path) -> None:
    """The CLI in a folder that holds hermes's home: the home stays hidden."""
    home = place / "ws" / "home"
    home.mkdir()
    (home / ".env").write_text(SECRET, encoding="utf-8")
    files = workspace_files(home, place / "ws", None, "cli", None)
    with pytest.raises(RefusedRead, match=r"^Refused: .* is in hermes's home"):
        files.text("home/.env")
    assert [str(here) for here, _, _ in files.walk_beneath(".")] == ["."]


def test_the_terminal_chats_folder_outside_its_workspace_still_reads(
    place: Path, hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hermes chat`` in a project of the home while ``tools.workspace`` is elsewhere:
    the home is hidden from tools, but the project's AGENTS.md is no secret."""
    from hermes.config import Config, defaults

    monkeypatch.setenv("HOME", str(place))
    project = place / "ws"
    (project / "AGENTS.md").write_text("Use tabs.", encoding="utf-8")
    values = {**defaults(), "tools.workspace": str(place / "elsewhere")}
    config = Config(values=values, path=hermes_home / "config.yaml")
    files = workspace_files(hermes_home, project, config, "cli", None)
    assert files.text("AGENTS.md") == "Use tabs."
