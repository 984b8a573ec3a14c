"""The HTTP API is a room of the gateway, not a part of its core (docs/design.md, Layout).

The runner and the rest of the gateway's core import nothing of ``gateway/http`` (not
lazily, not for type checking): the HTTP server meets the core through the protocols
of ``gateway/core.py`` and registers its run registry at start-up. Only the two
registries name the room's modules, as strings (``core.ROOMS``, ``adapters.ADAPTERS``).
No gateway module imports a private module of ``tools`` (``hermes.tools._*``), no host
is typed ``Any``, and chat completions is a handler of its own, not a base of the server.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

GATEWAY = Path(__file__).resolve().parents[2] / "hermes" / "gateway"
HTTP = GATEWAY / "http"
HTTP_ROOM = "hermes.gateway.http"
# The registries that name rooms' modules for the core to load by name.
REGISTRIES = {GATEWAY / "core.py", GATEWAY / "adapters" / "__init__.py"}
MODULE_NAME = re.compile(r"^hermes(\.\w+)+$")


def imported(source: str, package: str = "hermes.gateway") -> set[str]:
    """Every module ``source`` imports anywhere (in functions and under TYPE_CHECKING
    too; ``from a import b``: both ``a`` and ``a.b``), relative imports resolved
    against ``package``."""
    modules = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0]
                base = f"{parent}.{base}" if base else parent
            modules.add(base)
            modules |= {f"{base}.{alias.name}" for alias in node.names}
    return modules


def named_modules(source: str) -> set[str]:
    """String constants that are whole module names (what ``importlib`` would load)."""
    return {
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and MODULE_NAME.match(node.value)
    }


def _in_room(module: str, room: str) -> bool:
    return module == room or module.startswith(room + ".")


def _package_of(path: Path) -> str:
    """The package a module's relative imports start from (``__init__``'s own)."""
    return ".".join(path.relative_to(GATEWAY.parent.parent).parts[:-1])


def _core_modules() -> list[Path]:
    return sorted(p for p in GATEWAY.rglob("*.py") if HTTP not in p.parents)


def http_imports(path: Path) -> set[str]:
    source = path.read_text(encoding="utf-8")
    found = {m for m in imported(source, _package_of(path)) if _in_room(m, HTTP_ROOM)}
    if path not in REGISTRIES:
        found |= {m for m in named_modules(source) if _in_room(m, HTTP_ROOM)}
    return found


def private_tools_imports(source: str, package: str = "hermes.gateway") -> set[str]:
    return {
        m
        for m in imported(source, package)
        if m.startswith("hermes.tools.") and any(p.startswith("_") for p in m.split(".")[2:])
    }


def test_the_gateway_core_imports_nothing_of_the_http_api() -> None:
    offenders = {
        str(path.relative_to(GATEWAY)): sorted(found)
        for path in _core_modules()
        if (found := http_imports(path))
    }
    assert offenders == {}


def test_the_runner_is_among_the_modules_checked() -> None:
    assert GATEWAY / "runner.py" in _core_modules()
    assert not any(HTTP in p.parents for p in _core_modules())


def test_the_gateway_imports_no_private_module_of_the_tools() -> None:
    offenders = {
        str(path.relative_to(GATEWAY)): sorted(found)
        for path in sorted(GATEWAY.rglob("*.py"))
        if (found := private_tools_imports(path.read_text(encoding="utf-8"), _package_of(path)))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "source",
    [
        "from hermes.gateway.http import caller",
        "from hermes.gateway import http",
        "import hermes.gateway.http.live_runs",
        "def f():\n    from hermes.gateway.http.live_runs import Runs",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hermes.gateway.http import x",
        "from .http import caller",
        "from . import http",
    ],
)
def test_the_http_check_sees_a_planted_import(source: str) -> None:
    assert {m for m in imported(source) if _in_room(m, HTTP_ROOM)}
    assert not {m for m in imported(source.replace("http", "lanes")) if _in_room(m, HTTP_ROOM)}


def test_the_http_check_sees_a_module_named_for_importlib() -> None:
    source = 'import importlib\nimportlib.import_module("hermes.gateway.http.live_runs")'
    assert named_modules(source) == {"hermes.gateway.http.live_runs"}
    assert not named_modules('"""Uses ``hermes.gateway.http`` for its routes."""')


@pytest.mark.parametrize(
    "source",
    [
        "from hermes.tools._fs import private_dir",
        "from hermes.tools import _fs",
        "def f():\n    import hermes.tools._fs",
        "from hermes.tools.guards.sandbox._view import x",
    ],
)
def test_the_private_tools_check_sees_a_planted_import(source: str) -> None:
    assert private_tools_imports(source)
    assert not private_tools_imports(source.replace("_fs", "events").replace("_view", "view"))


def any_typed_hosts(source: str) -> list[str]:
    """Parameters named like a host (``runner``, ``host``) annotated ``Any``."""
    return [
        f"{node.lineno}: {node.arg}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.arg)
        and node.arg in ("runner", "host")
        and node.annotation is not None
        and ast.unparse(node.annotation) in ("Any", "typing.Any")
    ]


def test_no_gateway_host_is_typed_any() -> None:
    offenders = {
        str(path.relative_to(GATEWAY)): hits
        for path in sorted(GATEWAY.rglob("*.py"))
        if (hits := any_typed_hosts(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_the_any_host_check_sees_a_planted_one() -> None:
    assert any_typed_hosts("def f(runner: Any, settings: Any) -> None: ...")
    assert not any_typed_hosts("def f(runner: ApiHost) -> None: ...")


def test_chat_completions_is_a_handler_not_a_base_of_the_server() -> None:
    from hermes.gateway.http.chat_completions import ChatCompletions
    from hermes.gateway.http.server import ApiServerAdapter

    assert ChatCompletions not in ApiServerAdapter.__mro__
