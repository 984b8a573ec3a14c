"""`hermes plugins list|enable|disable`: the plugins found and ``plugins.enabled``.

``list`` loads the enabled plugins as a chat would (a broken one shows its error);
``enable`` and ``disable`` edit config.yaml's ``plugins.enabled`` / ``plugins.disabled``,
as Hermes Agent 0.19 does, and take effect at the next start.
"""

from __future__ import annotations

import click

from hermes.cli._group import DefaultGroup
from hermes.cli._table import echo_table
from hermes.config import ensure_home, hermes_home, load_config, save_value
from hermes.plugins import PluginManager
from hermes.plugins.manifest import discover


@click.group(cls=DefaultGroup)
def plugins() -> None:
    """List plugins; enable or disable one."""


@plugins.command("list")
def list_plugins() -> None:
    """Each plugin found: where from, whether it loads, what it registered."""
    manager = PluginManager(hermes_home())
    manager.load(load_config())
    found = manager.list_plugins()
    if not found:
        click.echo(f"No plugins. Put one in {hermes_home() / 'plugins'}/<name>/ (plugin.yaml).")
        return
    rows = [
        (
            p["key"],
            p["version"] or "-",
            p["source"],
            "enabled" if p["enabled"] else (p["error"] or "not enabled"),
            f"{p['tools']} tools, {p['hooks']} hooks",
        )
        for p in found
    ]
    echo_table(["name", "version", "source", "status", "registers"], rows)


@plugins.command("enable")
@click.argument("name")
def enable(name: str) -> None:
    """Load plugin NAME from the next start on."""
    _list_in("plugins.enabled", "plugins.disabled", name)
    click.echo(f"Plugin {name} is enabled; it loads at the next start.")


@plugins.command("disable")
@click.argument("name")
def disable(name: str) -> None:
    """Never load plugin NAME."""
    _list_in("plugins.disabled", "plugins.enabled", name)
    click.echo(f"Plugin {name} is disabled.")


def _list_in(listed: str, unlisted: str, name: str) -> None:
    """Put plugin ``name`` on the ``listed`` list of config.yaml and off the other."""
    _known(name)
    config = load_config()
    _save(listed, _with(config.get(listed), name))
    _save(unlisted, _without(config.get(unlisted), name))


def _known(name: str) -> None:
    found = discover(hermes_home())
    names = {m.id for m in found} | {m.name for m in found}
    if name not in names:
        raise click.ClickException(
            f"No plugin named '{name}' was found; run `hermes plugins list` to see them."
        )


def _with(names: object, name: str) -> list[str]:
    current = [str(n) for n in names] if isinstance(names, list) else []
    return current if name in current else [*current, name]


def _without(names: object, name: str) -> list[str]:
    return [str(n) for n in names if str(n) != name] if isinstance(names, list) else []


def _save(key: str, value: list[str]) -> None:
    save_value(key, value, ensure_home() / "config.yaml")
