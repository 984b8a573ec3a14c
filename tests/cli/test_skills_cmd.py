"""`hermes skills`: list, show, install and remove, as a person runs them."""

from __future__ import annotations

import json
from pathlib import Path


def _skill(folder: Path, name: str, description: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\nDo the {name} steps.\n",
        encoding="utf-8",
    )
    return folder


def test_install_list_show_remove(hermes, hermes_home: Path, tmp_path: Path) -> None:
    source = _skill(tmp_path / "src" / "deploy", "deploy", "Ship the app.")
    (source / "scripts").mkdir()
    (source / "scripts" / "ship.sh").write_text("echo ship\n", encoding="utf-8")
    installed = hermes("skills", "install", str(source))
    assert installed.returncode == 0, installed.stderr
    assert (hermes_home / "skills" / "deploy" / "scripts" / "ship.sh").is_file()
    listed = hermes("skills", "list", "--json")
    assert json.loads(listed.stdout) == [
        {"name": "deploy", "description": "Ship the app.", "category": None, "owner": "operator"}
    ]
    # hermes-agent-mcp's skills_list runs `hermes skills list` and hands its output on.
    table = hermes("skills", "list")
    assert table.returncode == 0 and "deploy" in table.stdout and "Ship the app." in table.stdout
    shown = hermes("skills", "show", "deploy")
    assert "Do the deploy steps." in shown.stdout and "scripts/ship.sh" in shown.stdout
    assert hermes("skills", "install", str(source)).returncode == 1
    assert hermes("skills", "remove", "deploy").returncode == 0
    assert not (hermes_home / "skills" / "deploy").exists()


def test_a_malformed_skill_is_one_line_on_stderr(hermes, hermes_home: Path) -> None:
    bad = hermes_home / "skills" / "bad"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("just text\n", encoding="utf-8")
    listed = hermes("skills", "list")
    assert listed.returncode == 0
    assert listed.stderr.strip().splitlines() == [
        f"Skipped the skill at {bad / 'SKILL.md'}: it does not start with YAML front matter "
        "between '---' lines; fix it or remove it."
    ]
    assert "No skills yet" in listed.stdout
    sneaky = hermes_home.parent / "sneaky"
    sneaky.mkdir()
    (sneaky / "SKILL.md").write_text("---\nname: ../../escape\ndescription: x\n---\n")
    refused = hermes("skills", "install", str(sneaky))
    assert refused.returncode == 1 and "cannot be a folder name" in refused.stderr
    not_a_skill = hermes("skills", "install", str(bad.parent.parent / "nope"))
    assert not_a_skill.returncode != 0 and "Traceback" not in not_a_skill.stderr


def test_list_shows_every_skill_with_its_owner(hermes, hermes_home: Path) -> None:
    _skill(hermes_home / "skills" / "deploy", "deploy", "Ship the app.")
    users = hermes_home / "memories" / "users"
    _skill(users / "telegram" / "u-42" / "skills" / "deploy", "deploy", "42's own deploy.")
    _skill(users / "api_server" / "u-alice" / "skills" / "tea", "tea", "Brew tea.")
    listed = json.loads(hermes("skills", "list", "--json").stdout)
    assert [(s["name"], s["owner"], s["description"]) for s in listed] == [
        ("deploy", "operator", "Ship the app."),
        ("deploy", "user telegram/42", "42's own deploy."),
        ("tea", "user api_server/alice", "Brew tea."),
    ]
    table = hermes("skills", "list").stdout
    assert "user telegram/42" in table and "user api_server/alice" in table
