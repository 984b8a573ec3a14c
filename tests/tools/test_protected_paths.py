"""Protected paths: the agent cannot edit its own safety settings, keys or logins unasked."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from hermes.tools import ToolContext


@pytest.fixture
def sandbox_setting() -> str:
    """These tests are of the parse-based policy, the approval experience without a sandbox."""
    return "off"


EVIL = yaml.safe_dump({"terminal": {"dangerous_allow": ["re:.*"]}})


@pytest.fixture
def gateway_ctx(make_ctx: Callable[..., ToolContext]) -> ToolContext:
    return make_ctx({"terminal.timeout": 5}, surface="gateway", interactive=False)


def test_writing_config_is_refused_where_nobody_can_approve(
    call: Callable[..., str], gateway_ctx: ToolContext, home: Path
) -> None:
    before = (home / "config.yaml").read_text(encoding="utf-8")
    result = call("write_file", gateway_ctx, path=str(home / "config.yaml"), content=EVIL)
    assert result.startswith("Error: Refused:") and "hermes's home" in result
    assert (home / "config.yaml").read_text(encoding="utf-8") == before


def test_patching_config_is_refused_too(
    call: Callable[..., str], gateway_ctx: ToolContext, home: Path
) -> None:
    result = call("patch", gateway_ctx, path=str(home / "config.yaml"), old="5", new="500")
    assert result.startswith("Error: Refused:")
    assert "timeout: 5\n" in (home / "config.yaml").read_text(encoding="utf-8")


def test_a_symlink_does_not_lead_around_the_check(
    call: Callable[..., str], gateway_ctx: ToolContext, home: Path, workdir: Path
) -> None:
    (workdir / "harmless.yaml").symlink_to(home / "config.yaml")
    before = (home / "config.yaml").read_text(encoding="utf-8")
    result = call("write_file", gateway_ctx, path="harmless.yaml", content=EVIL)
    assert result.startswith("Error: Refused:")
    assert (home / "config.yaml").read_text(encoding="utf-8") == before


@pytest.mark.parametrize("name", [".ssh/authorized_keys", ".bashrc", ".profile", ".zshrc"])
def test_logins_and_start_up_files_are_protected(
    call: Callable[..., str], gateway_ctx: ToolContext, user_home: Path, name: str
) -> None:
    result = call("write_file", gateway_ctx, path=f"~/{name}", content="ssh-ed25519 AAAA evil\n")
    assert result.startswith("Error: Refused:")
    assert not (user_home / name).exists()


def test_state_db_is_protected(
    call: Callable[..., str], gateway_ctx: ToolContext, home: Path
) -> None:
    (home / "state.db").write_bytes(b"SQLite format 3\0")
    result = call("write_file", gateway_ctx, path=str(home / "state.db"), content="garbage")
    assert result.startswith("Error: Refused:")
    assert (home / "state.db").read_bytes() == b"SQLite format 3\0"


def test_no_approval_opens_a_file_outside_the_view(
    call: Callable[..., str], make_ctx: Callable[..., ToolContext], home: Path
) -> None:
    """The file tools see what a sandboxed command sees: what it cannot write, no answer
    of the user's lets write_file write either (they edit such files themselves)."""
    asked: list[str] = []

    def approve(command: str, reason: str) -> bool:
        asked.append(command)
        return True

    target = str(home / "notes.txt")
    approving = make_ctx(interactive=True, approve=approve)
    assert call("write_file", approving, path=target, content="x").startswith("Error: Refused:")
    assert not (home / "notes.txt").exists() and asked == []


@pytest.mark.parametrize("name", [".env", "api_key"])
def test_secret_files_are_never_readable(
    call: Callable[..., str],
    make_ctx: Callable[..., ToolContext],
    home: Path,
    workdir: Path,
    name: str,
) -> None:
    (home / name).write_text("OPENAI_API_KEY=sk-secret-value\n", encoding="utf-8")
    (workdir / "link").symlink_to(home / name)
    approving = make_ctx(interactive=True, approve=lambda command, reason: True)
    for path in (str(home / name), "link"):
        result = call("read_file", approving, path=path)
        assert result.startswith("Error: Refused:")
        assert "sk-secret-value" not in result


def test_ordinary_files_are_untouched_by_the_checks(
    call: Callable[..., str], gateway_ctx: ToolContext, workdir: Path
) -> None:
    assert call("write_file", gateway_ctx, path="out.txt", content="hi\n").startswith("Created")
    assert "hi" in call("read_file", gateway_ctx, path="out.txt")


def test_workspace_bounds_the_file_tools(
    call: Callable[..., str], make_ctx: Callable[..., ToolContext], workdir: Path, tmp_path: Path
) -> None:
    (tmp_path / "outside.txt").write_text("private\n", encoding="utf-8")
    (workdir / "escape").symlink_to(tmp_path / "outside.txt")
    ctx = make_ctx({"tools.workspace": str(workdir)})
    assert call("write_file", ctx, path="inside.txt", content="ok\n").startswith("Created")
    for path in (str(tmp_path / "outside.txt"), "escape"):
        assert call("read_file", ctx, path=path).startswith("Error: Refused:")
        assert call("write_file", ctx, path=path, content="x").startswith("Error: Refused:")
    assert (tmp_path / "outside.txt").read_text(encoding="utf-8") == "private\n"


# the terminal --------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "printf 'terminal:\\n  dangerous_allow: [\"re:.*\"]\\n' > {home}/config.yaml",
        "echo 'dangerous_allow: [x]' >> {home}/config.yaml",
        "echo x | tee -a {home}/config.yaml",
        "cp evil.yaml {home}/config.yaml",
        "sed -i 's/5/500/' {home}/config.yaml",
        "echo key >> ~/.ssh/authorized_keys",
        "echo 'alias ls=evil' >> $HOME/.bashrc",
        "ls; echo x > {home}/state.db",
    ],
)
def test_terminal_writes_to_protected_paths_are_refused(
    call: Callable[..., str],
    gateway_ctx: ToolContext,
    home: Path,
    user_home: Path,
    workdir: Path,
    command: str,
) -> None:
    (workdir / "evil.yaml").write_text(EVIL, encoding="utf-8")
    before = (home / "config.yaml").read_text(encoding="utf-8")
    result = call("terminal", gateway_ctx, command=command.format(home=home))
    assert result.startswith("Refused:"), result
    assert (home / "config.yaml").read_text(encoding="utf-8") == before
    assert not (home / "state.db").exists()
    assert not (user_home / ".ssh").exists() and not (user_home / ".bashrc").exists()


def test_an_allow_entry_does_not_open_protected_paths(
    call: Callable[..., str], make_ctx: Callable[..., ToolContext], home: Path
) -> None:
    ctx = make_ctx({"terminal.dangerous_allow": ["re:.*"]}, surface="gateway")
    before = (home / "config.yaml").read_text(encoding="utf-8")
    assert call("terminal", ctx, command=f"echo x > {home}/config.yaml").startswith("Refused:")
    assert (home / "config.yaml").read_text(encoding="utf-8") == before


def test_terminal_cannot_cat_the_secret_files(
    call: Callable[..., str], make_ctx: Callable[..., ToolContext], home: Path
) -> None:
    (home / ".env").write_text("OPENAI_API_KEY=sk-secret-value\n", encoding="utf-8")
    approving = make_ctx(interactive=True, approve=lambda command, reason: True)
    result = call("terminal", approving, command=f"cat {home}/.env")
    assert result.startswith("Refused:") and "sk-secret-value" not in result


def test_terminal_asks_on_an_interactive_surface(
    call: Callable[..., str], make_ctx: Callable[..., ToolContext], home: Path
) -> None:
    asked: list[str] = []

    def approve(command: str, reason: str) -> bool:
        asked.append(reason)
        return True

    ctx = make_ctx(interactive=True, approve=approve)
    call("terminal", ctx, command=f"echo note > {home}/notes.txt")
    assert (home / "notes.txt").read_text(encoding="utf-8") == "note\n"
    assert len(asked) == 1 and "hermes's own home" in asked[0]


def test_ordinary_redirections_run(
    call: Callable[..., str], make_ctx: Callable[..., ToolContext], workdir: Path
) -> None:
    # Not read-only, so without a sandbox a gateway refuses it; inside one it just runs.
    sandboxed = make_ctx({"terminal.sandbox": "bwrap"}, surface="gateway", interactive=False)
    result = call("terminal", sandboxed, command="echo hi > out.txt 2>&1; cat out.txt")
    assert "hi" in result and not result.startswith("Refused:")
    assert (workdir / "out.txt").read_text(encoding="utf-8") == "hi\n"
