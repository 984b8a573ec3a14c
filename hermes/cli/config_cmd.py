"""`hermes config show|get|set|unset|edit|path` and `hermes setup`.

Keys and values are checked against ``hermes.config.SCHEMA`` before anything is
written: a mistyped key in one of hermes's sections gets the closest known one as a
suggestion, a wrong value is told the type it must have. A key of a section hermes does
not have (``display.show_reasoning``, written by tools made for Hermes Agent) is kept in
the file as given and ignored; `config show` lists what is ignored. Secrets (keys, tokens, the state URL's password) are
shown masked. `setup` writes the endpoint and model with ``save_value``
and the API key to ``$HERMES_HOME/.env`` (0600), never to config.yaml.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import click

from hermes.cli._env import find_api_key, is_loopback, save_api_key
from hermes.cli._group import DefaultGroup
from hermes.config import (
    HERMES_AGENT_KEYS,
    OPEN_SECTIONS,
    SCHEMA,
    Config,
    closest_key,
    ensure_home,
    first_key_in,
    hermes_home,
    load_config,
    parse_cli_value,
    remove_value,
    save_value,
    typo_of,
)
from hermes.errors import ConfigError
from hermes.redaction import mask_fields


def check_key(key: str) -> str:
    """``key`` if it exists (or is a section); else ConfigError with the closest match."""
    if key in SCHEMA or any(k.startswith(key + ".") for k in SCHEMA):
        return key
    close = closest_key(key)
    hint = f" Did you mean '{close}'?" if close else " Run `hermes config show` to see the keys."
    raise ConfigError(f"Unknown config key '{key}'.{hint}")


def _config_path() -> Path:
    return hermes_home() / "config.yaml"


def _as_text(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


@click.group(cls=DefaultGroup, default="show")
def config() -> None:
    """Show and change configuration (default: show)."""


@config.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of YAML.")
def show(as_json: bool) -> None:
    """Print the configuration in effect (defaults, file and environment merged)."""
    click.echo(render(load_config(), as_json=as_json))


def render(current: Config, *, as_json: bool = False) -> str:
    """The configuration in effect as `config show` prints it: YAML (or JSON) with
    secrets masked, then the file's keys hermes ignores."""
    values = {k: mask_fields(k, v) for k, v in current.values.items()}
    if as_json:
        return json.dumps(values, indent=2, sort_keys=True, ensure_ascii=False)
    import yaml

    tree = Config(values=values, path=current.path).as_tree()
    lines = [f"# {current.path}", yaml.safe_dump(tree, sort_keys=True, allow_unicode=True).rstrip()]
    if current.ignored:
        lines.append("# Ignored: in the file, but hermes does not use them")
        for key, value in current.ignored.items():
            line = current.lines.get(key)
            where = f"  (line {line})" if line else ""
            lines.append(f"#   {key}: {_as_text(mask_fields(key, value))}{where}")
    return "\n".join(lines)


@config.command(short_help="Print one value (secrets masked).")
@click.argument("key")
def get(key: str) -> None:
    """Print one value, e.g. `hermes config get model.default` (secrets masked)."""
    click.echo(_as_text(mask_fields(key, _lookup(load_config(), key))))


def _lookup(current: Config, key: str) -> Any:
    """A key, a section, or a path into a mapping key (gateway.platforms.telegram.token)."""
    mapping = next((k for k in SCHEMA if key.startswith(k + ".") and SCHEMA[k][0] == (dict,)), None)
    if mapping is None and key in current.ignored:
        return current.ignored[key]
    if mapping is None and key in HERMES_AGENT_KEYS:
        key = HERMES_AGENT_KEYS[key]  # Hermes Agent's name for it
    if mapping is None:
        return current.get(check_key(key))
    value: Any = current.get(mapping)
    for part in key[len(mapping) + 1 :].split("."):
        if not isinstance(value, dict) or part not in value:
            raise ConfigError(f"'{key}' is not set; `hermes config get {mapping}` shows what is.")
        value = value[part]
    return value


# A value such as -3 is a value, not an option: click would otherwise refuse it.
@config.command(
    "set",
    short_help="Set one value in config.yaml.",
    context_settings={"ignore_unknown_options": True},
)
@click.argument("key")
@click.argument("value")
def set_(key: str, value: str) -> None:
    """Set one value in config.yaml, e.g. `hermes config set model.default gpt-4o`.

    A key of a section hermes does not have is written as given and ignored by hermes.
    """
    parsed = parse_for_set(key, value)
    path = ensure_home() / "config.yaml"
    write_value(key, parsed, path)
    click.echo(f"Set {key} = {_as_text(mask_fields(key, parsed))} in {path}.")


def parse_for_set(key: str, text: str) -> Any:
    """What `config set KEY TEXT` writes: the key's type for one of hermes's keys (or
    Hermes Agent's name for one), YAML's reading for a key of a section hermes does not
    have; ConfigError for an unknown key of hermes's sections or a section itself."""
    ours = HERMES_AGENT_KEYS.get(key, key)  # Hermes Agent's name: checked as hermes's key
    if ours in SCHEMA:
        return parse_cli_value(ours, text)
    if not _foreign(key):
        check_key(key)  # unknown: raises with a suggestion
        raise ConfigError(f"'{key}' is a section; set one of its keys, e.g. '{first_key_in(key)}'.")
    return _parse_foreign(text)


def write_value(key: str, value: Any, path: Path) -> None:
    """Set ``key`` to ``value`` in the config file at ``path`` (the rest kept as written);
    a value the whole file then fails on is a ConfigError and the file is put back."""
    before = path.read_bytes() if path.exists() else None
    try:
        save_value(key, value, path)
    except OSError as exc:
        raise ConfigError(f"Cannot write {path}: {exc.strerror}; check its permissions.") from exc
    _check_or_restore(path, before)


def _check_or_restore(path: Path, before: bytes | None) -> None:
    try:
        load_config(path)  # range checks that span the whole file
    except ConfigError as exc:
        _restore(path, before)
        # The line it names is in the rejected version of the file, which is gone.
        raise ConfigError(re.sub(r" \(line \d+\)", "", str(exc))) from exc


@config.command(short_help="Remove one key from config.yaml (its default applies).")
@click.argument("key")
def unset(key: str) -> None:
    """Remove one key from config.yaml, e.g. `hermes config unset model.context_length`;
    hermes's default for it applies again. The rest of the file is kept as written."""
    path = _config_path()
    if not remove_key(key, path):
        click.echo(f"{key} is not set in {path}; nothing to remove.")
        return
    default = (
        f" (hermes's default applies: {_as_text(mask_fields(key, SCHEMA[key][1]))})"
        if key in SCHEMA
        else ""
    )
    click.echo(f"Removed {key} from {path}{default}.")


def remove_key(key: str, path: Path) -> bool:
    """Take ``key`` (or Hermes Agent's name for it) out of the config file at ``path``;
    False when the file does not set it. A removal the file then fails on is a
    ConfigError and the file is put back."""
    before = path.read_bytes() if path.exists() else None
    try:
        removed = remove_value(key, path) or (
            key in HERMES_AGENT_KEYS and remove_value(HERMES_AGENT_KEYS[key], path)
        )
    except OSError as exc:
        raise ConfigError(f"Cannot write {path}: {exc.strerror}; check its permissions.") from exc
    if removed:
        _check_or_restore(path, before)
    return removed


def _foreign(key: str) -> bool:
    """A key of a section hermes has none of (plugins...), or Hermes Agent's in a section
    both have many keys in (display): not a typo of ours."""
    section = key.split(".")[0]
    ours = {k.split(".")[0] for k in SCHEMA}
    return (section not in ours or section in OPEN_SECTIONS) and typo_of(key) is None


def _parse_foreign(text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text) if text != "" else ""
    except yaml.YAMLError:
        return text


def _restore(path: Path, before: bytes | None) -> None:
    if before is None:
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(before)


@config.command(short_help="Open config.yaml in your editor.")
def edit() -> None:
    """Open config.yaml in $EDITOR (else $VISUAL, nano, vim or vi); what you saved is
    checked when the editor closes."""
    path = ensure_home() / "config.yaml"
    editor = find_editor()
    if editor is None:
        raise ConfigError(f"No editor found: set EDITOR (e.g. EDITOR=nano), or edit {path}.")
    edit_file(path, editor)
    click.echo(f"Saved {path}.")


def find_editor() -> list[str] | None:
    """The user's editor as a command: $EDITOR, $VISUAL, else the first of nano, vim, vi
    installed; None when there is none."""
    import shlex
    import shutil

    for variable in ("EDITOR", "VISUAL"):
        if os.environ.get(variable, "").strip():
            return shlex.split(os.environ[variable])
    found = next((shutil.which(name) for name in ("nano", "vim", "vi") if shutil.which(name)), None)
    return [found] if found else None


def edit_file(path: Path, editor: list[str]) -> None:
    """Run ``editor`` on the config file at ``path`` (made, 0600, when there is none);
    a file hermes then cannot use is a ConfigError saying why (the edit is kept)."""
    import subprocess

    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(_NEW_FILE)
    try:
        subprocess.run([*editor, str(path)], check=False)
    except OSError as exc:
        raise ConfigError(
            f"Cannot start the editor {editor[0]}: {exc.strerror}; set EDITOR to one you have."
        ) from exc
    try:
        load_config(path)
    except ConfigError as exc:
        raise ConfigError(
            f"{exc} Your edit is saved; run `hermes config edit` again to fix it."
        ) from exc


# What `config edit` opens when there is no config.yaml yet.
_NEW_FILE = "# hermes's settings: `hermes config show` prints every key with the value in effect.\n"


@config.command()
def path() -> None:
    """Print where the config file is (it may not exist yet)."""
    click.echo(str(_config_path()))


# -- setup ------------------------------------------------------------------------------


@click.command()
@click.option(
    "--base-url", help="The OpenAI-compatible endpoint, e.g. https://openrouter.ai/api/v1."
)
@click.option("--model", help="The model to chat with, e.g. openai/gpt-4o-mini.")
@click.option("--api-key", help="The endpoint's API key (saved to $HERMES_HOME/.env, mode 0600).")
@click.option("--no-input", is_flag=True, help="Never prompt; keep what is not given as an option.")
def setup(base_url: str | None, model: str | None, api_key: str | None, no_input: bool) -> None:
    """Set the endpoint, model and API key (asks for each one when run in a terminal)."""
    current = load_config()
    ask = not no_input and sys.stdin.isatty()
    if base_url is None and ask:
        base_url = click.prompt(
            "Endpoint (OpenAI-compatible base URL)", default=current.get("model.base_url")
        )
    endpoint = base_url or current.get("model.base_url")
    _check_scheme(endpoint)
    if api_key is None and ask:
        api_key = _ask_key(endpoint)
    # A new endpoint is asked for its models before it is saved (a dead or wrong URL is
    # said, not saved silently); asked in a terminal, so is the configured one.
    offered, trouble = _offered(endpoint, api_key) if (ask or base_url) else ([], None)
    if trouble and base_url:
        click.echo(f"Warning: {trouble}", err=True)
        if ask and not click.confirm("Save this endpoint anyway?", default=False):
            click.echo("Nothing saved.")
            return
    if model is None and ask:
        model = click.prompt("Model", default=_proposed(current.get("model.default"), offered))
    if model and offered and model.strip() not in offered:
        close = difflib.get_close_matches(model.strip(), offered, n=3)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        click.echo(
            f"Warning: {endpoint} does not offer {model.strip()}{hint}; `hermes models` "
            "lists what it does.",
            err=True,
        )
    if not _apply(base_url, model, api_key):
        click.echo(
            "Nothing changed: give --base-url, --model or --api-key, or run "
            "`hermes setup` in a terminal to be asked."
        )
        return
    _summary(endpoint)


def _check_scheme(endpoint: str) -> None:
    from hermes.agent.model.diagnosis import scheme_problem

    problem = scheme_problem(endpoint.strip())
    if problem:
        raise ConfigError(problem)


def _offered(endpoint: str, api_key: str | None) -> tuple[list[str], str | None]:
    """The endpoint's models (quickly: no retries), or none and what went wrong."""
    from hermes.agent.errors import ModelAuthError
    from hermes.agent.model.client import ModelClient
    from hermes.errors import HermesError

    key = api_key or find_api_key()[0]
    client = ModelClient(key, endpoint.strip(), "", timeout=10, max_retries=0)
    try:
        return sorted(client.list_models()), None
    except ModelAuthError:
        return [], None  # no key yet, or one given later: not the endpoint's fault
    except HermesError as exc:  # unreachable, not an OpenAI API, no /v1
        return [], str(exc)
    finally:
        client.close()


def _proposed(configured: str, offered: list[str]) -> str:
    """The model to propose: the configured one if the endpoint offers it (or cannot
    say), else the first the endpoint offers."""
    if not offered or configured in offered:
        return configured
    return offered[0]


def _ask_key(endpoint: str) -> str | None:
    existing, where = find_api_key()
    if existing:
        note = f"Enter to keep the one from {where}"
    elif is_loopback(endpoint):
        note = "a local endpoint usually needs none; Enter to skip"
    else:
        note = "Enter to skip"
    key = click.prompt(f"API key ({note})", default="", show_default=False, hide_input=True)
    return key.strip() or None


def _apply(base_url: str | None, model: str | None, api_key: str | None) -> bool:
    if base_url:
        path = save_value("model.base_url", base_url.strip())
        click.echo(f"Saved model.base_url in {path}.")
    if model:
        path = save_value("model.default", model.strip())
        click.echo(f"Saved model.default in {path}.")
    if api_key:
        path = save_api_key(api_key.strip())
        click.echo(f"Saved the API key in {path} (readable only by you).")
    return bool(base_url or model or api_key)


def _summary(endpoint: str) -> None:
    key, _ = find_api_key()
    if key is None and not is_loopback(endpoint):
        click.echo(
            f"No API key yet for {endpoint}: run `hermes setup --api-key KEY` or export "
            "HERMES_API_KEY before chatting."
        )
        return
    click.echo("Done. Run `hermes doctor` to check the endpoint, then `hermes` to chat.")
