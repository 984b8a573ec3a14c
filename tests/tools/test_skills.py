"""Skills on disk: found where Hermes Agent keeps them, listed by description, read on
demand, changed through skill_manage under the file-write approval rules."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hermes.tools import ToolContext
from hermes.tools.skills import load_skills, prompt_block


def write_skill(root: Path, rel: str, name: str, description: str, body: str = "Steps.") -> Path:
    folder = root / rel
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\n{body}\n",
        encoding="utf-8",
    )
    return folder


def test_home_category_and_project_skills_are_found_sorted(home: Path, workdir: Path) -> None:
    write_skill(home / "skills", "devops/deploy", "deploy", "Ship the app.")
    write_skill(home / "skills", "arxiv", "arxiv", "Search papers.")
    write_skill(workdir / ".hermes" / "skills", "local", "local", "This project's build.")
    found = load_skills(home, workdir).skills
    assert [(s.name, s.category) for s in found] == [
        ("arxiv", None),
        ("deploy", "devops"),
        ("local", None),
    ]


def test_disabled_skills_are_not_shown(home: Path, make_ctx: Callable[..., ToolContext]) -> None:
    write_skill(home / "skills", "a", "a", "A.")
    write_skill(home / "skills", "b", "b", "B.")
    ctx = make_ctx({"skills.disabled": ["b"]})
    assert [s.name for s in load_skills(home, None, ctx.config).skills] == ["a"]


def test_a_malformed_skill_is_reported_in_one_sentence_and_skipped(home: Path) -> None:
    write_skill(home / "skills", "good", "good", "Fine.")
    bad = home / "skills" / "bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: [unclosed\n---\nbody\n", encoding="utf-8")
    scan = load_skills(home, None)
    assert [s.name for s in scan.skills] == ["good"]
    assert len(scan.problems) == 1
    assert "front matter is not valid YAML" in scan.problems[0]
    assert str(bad / "SKILL.md") in scan.problems[0]


def test_a_yaml_error_names_the_line_it_is_on(home: Path) -> None:
    cases = {
        "colon": "---\nname: c\ndescription: a: b\nversion: 1\n---\n",  # line 3
        "nokey": "---\nname: n\ndescription no colon\nversion: 1\n---\n",  # line 3
    }
    for name, text in cases.items():
        (home / "skills" / name).mkdir(parents=True)
        (home / "skills" / name / "SKILL.md").write_text(text, encoding="utf-8")
    problems = load_skills(home, None).problems
    assert len(problems) == 2
    assert all("(line 3" in problem for problem in problems), problems


def test_a_malformed_skill_is_logged_once_not_at_every_load(home: Path, caplog) -> None:
    """Every turn and every cron tick loads the skills: the warning is said once."""
    bad = home / "skills" / "broken"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\nname: [unclosed\n---\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="hermes.tools.skills"):
        for _ in range(5):
            assert len(load_skills(home, None).problems) == 1  # still reported to callers
    logged = [r for r in caplog.records if str(bad / "SKILL.md") in r.getMessage()]
    assert len(logged) == 1


def test_the_prompt_block_holds_descriptions_never_bodies(home: Path) -> None:
    write_skill(home / "skills", "deploy", "deploy", "Ship the app.", body="SECRET-STEP-42")
    block = prompt_block(load_skills(home, None).skills)
    assert "- deploy: Ship the app." in block
    assert "SECRET-STEP-42" not in block


def test_skill_view_loads_the_text_lists_files_and_reads_one(
    home: Path, registry, ctx: ToolContext
) -> None:
    def call(**args: str) -> str:
        return registry.dispatch("skill_view", args, ctx)

    folder = write_skill(home / "skills", "deploy", "deploy", "Ship.", body="Run make ship.")
    (folder / "references").mkdir()
    (folder / "references" / "api.md").write_text("the API notes", encoding="utf-8")
    shown = call(name="deploy")
    assert "Run make ship." in shown
    assert "- references/api.md" in shown
    assert call(name="deploy", file_path="references/api.md") == "the API notes"
    escaped = call(name="deploy", file_path="../../config.yaml")
    assert escaped.startswith("Error: '../../config.yaml' is not inside the skill")


NEW_SKILL = "---\nname: tidy\ndescription: Tidy a repo.\n---\nRemove build output.\n"


def test_skill_manage_asks_like_a_protected_write(
    home: Path, registry, make_ctx: Callable[..., ToolContext]
) -> None:
    asked: list[str] = []
    ctx = make_ctx(interactive=True, approve=lambda what, why: asked.append(what) or True)
    result = registry.dispatch(
        "skill_manage", {"action": "create", "name": "tidy", "content": NEW_SKILL}, ctx
    )
    assert result.startswith("Created the skill 'tidy'")
    assert asked == [f"write {home / 'skills' / 'tidy' / 'SKILL.md'}"]
    patched = registry.dispatch(
        "skill_manage",
        {"action": "patch", "name": "tidy", "old_string": "build output", "new_string": "dist/"},
        ctx,
    )
    assert patched.startswith("Updated the skill 'tidy'")
    assert "Remove dist/." in (home / "skills" / "tidy" / "SKILL.md").read_text()


def test_skill_manage_is_refused_where_nobody_can_approve(
    home: Path, registry, make_ctx: Callable[..., ToolContext]
) -> None:
    ctx = make_ctx(surface="api")
    result = registry.dispatch(
        "skill_manage", {"action": "create", "name": "tidy", "content": NEW_SKILL}, ctx
    )
    assert result.startswith("Error: Refused:")
    assert not (home / "skills" / "tidy").exists()


def test_the_review_changes_skills_unless_the_user_turned_it_off(
    home: Path, registry, make_ctx: Callable[..., ToolContext]
) -> None:
    args = {"action": "create", "name": "tidy", "content": NEW_SKILL}
    off = make_ctx({"skills.review_may_edit": False}, surface="review")
    refused = registry.dispatch("skill_manage", args, off)
    assert refused == "Error: Refused: the background review may not change skills here."
    allowed = make_ctx(surface="review")  # on by default, as Hermes Agent's review
    assert registry.dispatch("skill_manage", args, allowed).startswith("Created the skill")


def test_a_malformed_skill_is_not_written(
    home: Path, registry, make_ctx: Callable[..., ToolContext]
) -> None:
    ctx = make_ctx(interactive=True, approve=lambda what, why: True)
    result = registry.dispatch(
        "skill_manage", {"action": "create", "name": "tidy", "content": "no front matter"}, ctx
    )
    assert result.startswith("Error: that SKILL.md is malformed")
    assert not (home / "skills" / "tidy").exists()


def test_linked_skills_are_found_and_a_link_loop_ends(home: Path, tmp_path: Path) -> None:
    write_skill(tmp_path / "elsewhere", "linked", "linked", "Lives elsewhere.")
    (home / "skills").mkdir()
    (home / "skills" / "linked").symlink_to(tmp_path / "elsewhere" / "linked")
    (home / "skills" / "loop").mkdir()
    (home / "skills" / "loop" / "back").symlink_to(home / "skills")
    assert [s.name for s in load_skills(home, None).skills] == ["linked"]


def test_the_operators_skill_wins_a_name_clash(home: Path, workdir: Path) -> None:
    write_skill(home / "skills", "deploy", "deploy", "The operator's.")
    write_skill(workdir / ".hermes" / "skills", "deploy", "deploy", "A planted one.")
    own = home / "memories" / "users" / "telegram" / "u-7" / "skills"
    write_skill(own, "deploy", "deploy", "User 7's.")
    for source, user in (("cli", None), ("telegram", "7"), ("telegram", "42")):
        [found] = load_skills(home, workdir, source=source, user_id=user).skills
        assert (found.description, found.owner) == ("The operator's.", "operator")


def test_a_users_skills_are_theirs_alone(home: Path) -> None:
    own = home / "memories" / "users" / "telegram" / "u-7" / "skills"
    write_skill(own, "mine", "mine", "User 7's.")
    [found] = load_skills(home, None, source="telegram", user_id="7").skills
    assert found.owner == "user telegram/7"
    assert load_skills(home, None, source="telegram", user_id="42").skills == []
    assert load_skills(home, None, source="api_server", user_id="7").skills == []
    assert load_skills(home, None).skills == []  # the terminal chat: the operator's only


def test_a_gateway_user_keeps_skills_without_approval(
    home: Path, registry, make_ctx: Callable[..., ToolContext]
) -> None:
    ctx = make_ctx(surface="telegram", source="telegram", user_id="7")
    created = registry.dispatch(
        "skill_manage", {"action": "create", "name": "tidy", "content": NEW_SKILL}, ctx
    )
    index = home / "memories" / "users" / "telegram" / "u-7" / "skills" / "tidy" / "SKILL.md"
    assert created.startswith(f"Created the skill 'tidy' ({index})")
    patch = {"action": "patch", "name": "tidy", "old_string": "build output", "new_string": "dist/"}
    assert registry.dispatch("skill_manage", patch, ctx).startswith("Updated the skill")
    assert "Remove dist/." in index.read_text()
    deleted = registry.dispatch("skill_manage", {"action": "delete", "name": "tidy"}, ctx)
    assert deleted.startswith("Deleted the skill 'tidy'") and not index.exists()


def test_the_review_never_changes_the_operators_skill_for_a_gateway_user(
    home: Path, registry, make_ctx: Callable[..., ToolContext]
) -> None:
    write_skill(home / "skills", "deploy", "deploy", "Ship.", body="Run make ship.")
    ctx = make_ctx(surface="review", source="telegram", user_id="7")
    args = {"action": "edit", "name": "deploy", "content": NEW_SKILL.replace("tidy", "deploy")}
    refused = registry.dispatch("skill_manage", args, ctx)
    assert refused == "Error: Refused: the background review changes only the user's own skills."
    assert "Run make ship." in (home / "skills" / "deploy" / "SKILL.md").read_text()
