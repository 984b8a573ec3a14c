"""`hermes doctor`: check config, HERMES_HOME, the store and the endpoint.

Each check prints one line, and a failed one says how to fix it. Doctor only reads:
the store is opened read-only (a missing one is not created), so running it against a
damaged or busy store harms nothing. The exit code is 1 when any check failed.
"""

from __future__ import annotations

import difflib
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import psutil

from hermes.cli._env import env_file, find_api_key, is_loopback
from hermes.cli._store import open_db
from hermes.config import (
    ENV_OVERRIDES,
    Config,
    defaults,
    endpoint_transport,
    hermes_home,
    load_config,
)
from hermes.errors import HermesError
from hermes.state import SessionDB
from hermes.state.diagnose import BACKUP_FIX, diagnosis_of, read_only, writers_of_a_gone_file
from hermes.state.location import StoreLocation, store_location
from hermes.text import plural
from hermes.tools.guards import limits, sandbox

GUARD_INDEXES = ("sessions_one_live_tip", "sessions_one_compression_child")


@dataclass
class Check:
    """One line of the report. ``ok`` None means skipped (neither passed nor failed)."""

    name: str
    ok: bool | None
    detail: str
    fix: str | None = None

    def line(self) -> str:
        mark = {
            True: click.style("ok  ", fg="green"),
            False: click.style("FAIL", fg="red"),
            None: click.style("--  ", dim=True),
        }[self.ok]
        text = f"{mark}  {self.name}: {self.detail}"
        return f"{text} Fix: {self.fix}" if self.fix and self.ok is False else text


@click.command()
@click.option("--offline", is_flag=True, help="Skip the endpoint and model checks.")
def doctor(offline: bool) -> None:
    """Check config, HERMES_HOME, the state store and the endpoint; one line each."""
    failed = 0
    for check in run_checks(offline=offline):
        click.echo(check.line())
        failed += check.ok is False
    if failed:
        click.echo(f"{failed} check{'s' if failed > 1 else ''} failed.")
        raise SystemExit(1)
    click.echo("All checks passed.")


def run_checks(*, offline: bool = False) -> Iterator[Check]:
    config, check = _config_check()
    yield check
    yield _home_check(hermes_home())
    yield _sandbox_check(config)
    yield _memory_check()
    try:
        location = store_location(config=config)
    except HermesError as exc:  # e.g. HERMES_STATE_URL naming another kind of database
        yield Check("store", False, str(exc))
    else:
        yield from _store_checks(location, config)
    yield from _mcp_checks(config)
    yield from _gateway_checks(hermes_home())
    if offline:
        yield Check("endpoint", None, "skipped (--offline).")
        return
    yield from _endpoint_checks(config)


# -- running gateways -------------------------------------------------------------------


def _gateway_checks(home: Path) -> Iterator[Check]:
    """A running gateway keeps its start-time config.yaml, and one whose store does not
    answer refuses requests: each says so here, as in `hermes gateway status`."""
    from hermes.gateway.state_file import running_gateways

    for state in running_gateways(home):
        pid = state.get("pid")
        if state.get("config_changed"):
            keys = ", ".join(state["config_changed"])
            yield Check(
                "gateway",
                False,
                f"the gateway (pid {pid}) runs on an older config.yaml: {keys} changed since "
                "it started.",
                "restart it to apply them (`hermes gateway restart`).",
            )
        store = state.get("store") or {}
        if store.get("state") == "unreachable":
            yield Check(
                "gateway",
                False,
                f"the gateway (pid {pid}) cannot reach its store and refuses requests: "
                f"{store.get('error')}",
                "bring the store back; the gateway serves again by itself.",
            )


# -- config and files -------------------------------------------------------------------


def _config_check() -> tuple[Config, Check]:
    path = hermes_home() / "config.yaml"
    try:
        config = load_config(path)
    except HermesError as exc:
        fix = f"edit {path}, or move it aside to start from the defaults."
        return _fallback_config(path), Check("config", False, str(exc), fix)
    if path.exists():
        return config, Check("config", True, f"{path} parses.")
    return config, Check("config", True, f"no {path.name} yet; using the defaults.")


def _fallback_config(path: Path) -> Config:
    """Defaults plus environment overrides, so the other checks can still run."""
    values = defaults()
    for env, key in ENV_OVERRIDES.items():
        if os.environ.get(env):
            values[key] = os.environ[env]
    return Config(values=values, path=path)


def _home_check(home: Path) -> Check:
    if not home.exists():
        return Check(
            "home",
            False,
            f"HERMES_HOME {home} does not exist.",
            "run `hermes setup` to create it, or set HERMES_HOME.",
        )
    if not home.is_dir():
        return Check(
            "home", False, f"HERMES_HOME {home} is not a folder.", "set HERMES_HOME to a folder."
        )
    mode = stat.S_IMODE(home.stat().st_mode)
    env = home / ".env"
    env_mode = stat.S_IMODE(env.stat().st_mode) if env.exists() else 0o600
    # Both are said at once: a loose home hides nothing of a loose .env, and fixing only
    # the home would leave the keys readable the day the home is opened again.
    loose = [(home, mode, "700")] if mode & 0o077 else []
    loose += [(env, env_mode, "600")] if env_mode & 0o077 else []
    if loose:
        what = " and ".join(f"{p} is {m:04o}" for p, m, _ in loose)
        fix = " && ".join(f"chmod {to} {p}" for p, _, to in loose)
        return Check("home", False, f"{what}; others can read your keys.", fix)
    return Check("home", True, f"HERMES_HOME {home} is private ({mode:04o}).")


def _sandbox_check(config: Config) -> Check:
    """Which sandbox the tools' commands run in (hermes/tools/guards/sandbox.py)."""
    setting = config.get("terminal.sandbox")
    mode = sandbox.mode_for(setting)
    if mode.sandboxed:
        return Check("sandbox", True, f"tool commands run in a {mode.describe()}.")
    if sandbox.setting_of(setting) == "off":
        return Check(
            "sandbox", None, f"{mode.describe()}: unattended surfaces run read-only commands only."
        )
    bwrap = sandbox.setting_of(setting) == "bwrap"
    also = ", and no command runs (terminal.sandbox is bwrap)" if bwrap else ""
    return Check(
        "sandbox",
        False,
        f"{mode.describe()}; unattended surfaces run read-only commands only{also}.",
        "install bubblewrap (Debian/Ubuntu: apt install bubblewrap) on Linux with "
        "unprivileged user namespaces.",
    )


def _memory_check() -> Check:
    """What terminal.max_memory_mb holds: a whole command, or each process only."""
    scope = limits.memory_scope()
    whole = scope.startswith("the whole command")
    return Check(
        "memory",
        True if whole else None,
        f"terminal.max_memory_mb holds {scope}.",
        None if whole else "run hermes where it can make cgroups (root, or a delegated cgroup).",
    )


def _file_modes(path: Path) -> Check:
    loose = []
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if candidate.exists():
            mode = stat.S_IMODE(candidate.stat().st_mode)
            if mode & 0o077:
                loose.append((candidate, mode))
    if loose:
        names = ", ".join(f"{p.name} is {m:04o}" for p, m in loose)
        return Check(
            "store files",
            False,
            f"{names}; others can read your conversations.",
            "chmod 600 " + " ".join(str(p) for p, _ in loose),
        )
    return Check("store files", True, f"{path.name} is private (0600).")


# -- the store --------------------------------------------------------------------------


def _store_checks(location: StoreLocation, config: Config) -> Iterator[Check]:
    if location.path is not None:
        gone = _gone_file_check(location.path)
        if gone is not None:
            yield gone
    if not location.exists:
        yield Check("store", None, f"no store yet at {location.label}; the first chat creates it.")
        return
    if location.path is not None:
        yield _file_modes(location.path)
        found = read_only(location.path)
        if found is not None:  # not a failure: reading works; say what does not
            yield Check("writable", None, f"{found.problem} {found.fix}")
    try:
        db = open_db(location, read_only=True, synchronous=config.get("state.synchronous"))
    except (HermesError, sqlite3.Error) as exc:
        yield _failed("store", exc, location)
        return
    try:
        yield Check("store", True, f"{location.label} opens read-only.")
        if db.backend.kind == "sqlite":
            yield _guarded(lambda: _integrity(db), "integrity", location)
            yield _guarded(lambda: _guards(db), "schema", location)
        yield _guarded(lambda: _invariants(db, location), "invariants", location)
        yield _guarded(lambda: _deliveries(db, config), "cron deliveries", location)
    finally:
        db.close()


def _gone_file_check(path: Path) -> Check | None:
    """A process still writing a state.db that was deleted or replaced: what it stores
    is lost when it exits (hermes stops by itself; an older one or another tool may not)."""
    holders = writers_of_a_gone_file(path)
    if not holders:
        return None
    named = ", ".join(f"{pid} ({_command_of(pid)})" for pid in holders)
    return Check(
        "store file",
        False,
        f"{path} was deleted or replaced while process {named} had it open; what it writes "
        "now is lost when it stops.",
        "stop that process, then put the right file back at the path (or restore a backup) "
        "and start it again.",
    )


def _command_of(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline()[:4]) or "?"
    except psutil.Error:
        return "?"


def _guarded(check: Callable[[], Check], name: str, location: StoreLocation) -> Check:
    try:
        return check()
    except (HermesError, sqlite3.Error) as exc:
        return _failed(name, exc, location)


def _failed(name: str, exc: BaseException, location: StoreLocation) -> Check:
    """The store's own diagnosis, its problem and its fix once each; an error without
    one is shown as it is (it says what to do itself)."""
    found = diagnosis_of(exc)
    if found is not None and found.kind == "empty":  # no store yet, like a missing one
        return Check(name, None, str(found))
    if found is not None:
        return Check(name, False, found.problem, found.fix)
    said = f"{location.label} could not be read: {_sentence(exc)}"
    if "malformed" in str(exc):  # SQLite met a damaged page while checking
        return Check(name, False, said, BACKUP_FIX)
    return Check(name, False, said)


def _integrity(db: SessionDB) -> Check:
    rows = db._conn.execute("PRAGMA integrity_check").fetchall()
    problems = [next(iter(r.values())) for r in rows]
    if problems == ["ok"]:
        return Check("integrity", True, "PRAGMA integrity_check: ok.")
    shown = "; ".join(problems[:3]) + (" …" if len(problems) > 3 else "")
    return Check("integrity", False, f"PRAGMA integrity_check found damage: {shown}.", BACKUP_FIX)


def _guards(db: SessionDB) -> Check:
    names = ", ".join(f"'{n}'" for n in GUARD_INDEXES)
    rows = db._conn.execute(
        f"SELECT name FROM sqlite_master WHERE type = 'index' AND name IN ({names})"
    ).fetchall()
    missing = sorted(set(GUARD_INDEXES) - {r["name"] for r in rows})
    if missing:
        return Check(
            "schema",
            False,
            f"the guard index {', '.join(missing)} is missing, so "
            "the store no longer refuses a forked conversation.",
            "stop hermes, back up the file, fix the problems below, and recreate the "
            "index (see hermes/state/sqlite/schema.py).",
        )
    return Check("schema", True, "the one-tip and one-child guard indexes are in place.")


def _invariants(db: SessionDB, location: StoreLocation) -> Check:
    problems = db.invariant_violations()
    if not problems:
        return Check("invariants", True, "no forked conversation, double child or orphan write.")
    shown = "; ".join(problems[:5]) + (
        f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    )
    return Check(
        "invariants",
        False,
        f"{shown}.",
        f"stop every hermes process, back up {location.label}, and end all but the "
        "newest live segment of each conversation named (or restore a backup).",
    )


def _deliveries(db: SessionDB, config: Config) -> Check:
    """Scheduled answers no platform accepted after every retry, or that wait in the
    outbox past ``WAITING_AFTER``: never silent, and with the reason."""
    from hermes.cron import CronStore
    from hermes.cron.targets import WAITING_AFTER, configured_platforms, why_undelivered

    if db.backend.schema_version() < 12:
        return Check("cron deliveries", None, "no scheduled jobs in this store yet.")
    store = CronStore(db.backend, read_only=True)
    failed = store.failed_deliveries()
    if failed:
        last = failed[-1]
        return Check(
            "cron deliveries",
            False,
            f"{plural(len(failed), 'scheduled answer')} could not be delivered (last: "
            f"{last['target']}, {last['last_error']}).",
            "check the platform's token and the chat id, then see `hermes cron runs`.",
        )
    waiting = store.waiting_deliveries(WAITING_AFTER)
    if waiting:
        oldest = waiting[0]
        why = oldest["last_error"] or why_undelivered(
            oldest["target"], configured_platforms(config)
        )
        return Check(
            "cron deliveries",
            False,
            f"{plural(len(waiting), 'scheduled answer')} waiting over "
            f"{WAITING_AFTER / 60:.0f} min to be delivered (oldest: {oldest['target']}: "
            f"{why or 'no gateway has taken it'}).",
            "run a gateway serving that platform (`hermes gateway run`), or point the job "
            "elsewhere with `hermes cron edit JOB --deliver ...`.",
        )
    return Check("cron deliveries", True, "no scheduled answer failed or waits to be delivered.")


def _sentence(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if text.endswith(".") else text + "."


# -- the endpoint -----------------------------------------------------------------------


def _endpoint_checks(config: Config) -> Iterator[Check]:
    base_url, model = config.get("model.base_url"), config.get("model.default")
    key, where = find_api_key()
    if key is None and not is_loopback(base_url):
        yield Check(
            "api key",
            False,
            f"none found for {base_url}.",
            f"export HERMES_API_KEY=<your key>, or run `hermes setup` to save one in {env_file()}.",
        )
        return
    if key is not None:
        yield Check("api key", True, f"found in {where}.")
    from hermes.agent.model.client import ModelClient

    transport = endpoint_transport(config, base_url)
    client = ModelClient(
        key,
        base_url,
        model,
        timeout=15,
        max_retries=0,
        headers=dict(transport.headers),
        verify=transport.verify,
    )
    try:
        models = client.list_models()
    except HermesError as exc:
        yield Check(
            "endpoint",
            False,
            _sentence(exc),
            "check model.base_url (`hermes config get model.base_url`), the network and the key.",
        )
        return
    except Exception as exc:  # a URL the HTTP stack cannot even use
        yield Check(
            "endpoint",
            False,
            f"{base_url} failed: {_sentence(exc)}",
            "set a valid URL with `hermes config set model.base_url URL`.",
        )
        return
    finally:
        client.close()
    yield Check("endpoint", True, f"{base_url} answers ({plural(len(models), 'model')}).")
    yield _model_check(model, models)


def _model_check(model: str, models: list[str]) -> Check:
    if model in models:
        return Check("model", True, f"{model} is offered by the endpoint.")
    close = difflib.get_close_matches(model, models, n=3, cutoff=0.4) or models[:3]
    hint = f" (e.g. {', '.join(close)})" if close else ""
    return Check(
        "model",
        False,
        f"the endpoint does not offer {model}.",
        f"`hermes config set model.default NAME` with one it lists{hint}.",
    )


# -- MCP servers ------------------------------------------------------------------------


def _mcp_checks(config: Config) -> Iterator[Check]:
    """Each configured MCP server started, listed and stopped, as `hermes mcp test` does."""
    from hermes.cli.mcp_cmd import quiet_hub_log
    from hermes.tools.mcp.config import read_servers
    from hermes.tools.mcp.hub import McpError, hub

    specs, problems = read_servers(config, hermes_home())
    quiet_hub_log()
    for problem in problems:
        yield Check("mcp", False, problem, "correct the entry under mcp_servers in config.yaml.")
    try:
        for spec in specs:
            name = f"mcp {spec.name}"
            try:
                tools = hub().list_tools(spec)
            except McpError as exc:
                why = hub().connection(spec).failure or str(exc)
                yield Check(name, False, why[0].upper() + why[1:] + ".", "see `hermes mcp test`.")
                continue
            yield Check(name, True, f"answered with {plural(len(tools), 'tool')}.")
    finally:
        hub().close()
