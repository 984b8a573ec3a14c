"""The tests' own shape, checked on their source.

- A test module never imports from another test module or from a conftest: what
  suites share lives in a conftest (fixtures, found by pytest) or in a plain helper
  module (``tests/state/helpers.py``, ``tests/gateway/harness.py``, ...). An imported
  fixture needs ``noqa: F401``/``F811`` and runs another file's module-level code; a
  shared conftest does neither.
- No test compares a difference of two clock readings: speed belongs in
  ``benchmarks/``; tests assert order, events and counts.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FIXTURE_NOQA = re.compile(r"#\s*noqa:[^#]*\b(?:F401|F811)\b")
CLOCKS = {"monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "time", "time_ns"}


VENDORED = TESTS / "hermes_agent_suite" / "tests"  # Hermes Agent's own tests, kept unchanged


def sources() -> list[Path]:
    return sorted(
        path
        for path in TESTS.rglob("*.py")
        if "__pycache__" not in path.parts and not path.is_relative_to(VENDORED)
    )


def _is_shared_by_import(module: str) -> bool:
    last = module.rsplit(".", 1)[-1]
    return last == "conftest" or last.startswith("test_")


def forbidden_imports(source: str) -> list[str]:
    """Imports of a test module or a conftest (absolute or relative)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.module:
                modules = [node.module]
            if node.level and not node.module:  # ``from . import test_x``
                modules = [alias.name for alias in node.names]
        found += [f"{node.lineno}: {m}" for m in modules if _is_shared_by_import(m)]
    return found


def fixture_noqas(source: str) -> list[str]:
    """The marks of a fixture imported by hand: ``noqa: F811`` (the test's parameter
    shadows the import) anywhere, ``noqa: F401`` on an import from the tests."""
    lines = source.splitlines()
    own_imports: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.ImportFrom):
            names = ["." if node.level else node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        if any(name == "." or name.split(".")[0] == "tests" for name in names):
            own_imports.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return [
        f"{token.start[0]}: {lines[token.start[0] - 1].strip()}"
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
        and (match := FIXTURE_NOQA.search(token.string))
        and ("F811" in match.group(0) or token.start[0] in own_imports)
    ]


def _is_clock_call(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in CLOCKS


def _is_elapsed(node: ast.expr) -> bool:
    """``clock() - x`` or ``x - clock()``, or a name that says it is a duration."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        return _is_clock_call(node.left) or _is_clock_call(node.right)
    return isinstance(node, ast.Name) and node.id in ("elapsed", "duration", "took")


def wall_clock_asserts(source: str) -> list[str]:
    """``assert`` statements that compare how long something took."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Assert):
            continue
        for compare in ast.walk(node.test):
            if isinstance(compare, ast.Compare) and any(
                _is_elapsed(side) for side in [compare.left, *compare.comparators]
            ):
                found.append(f"{node.lineno}: {ast.unparse(node.test)}")
                break
    return found


def _offenders(check) -> dict[str, list[str]]:
    return {
        str(path.relative_to(TESTS)): hits
        for path in sources()
        if (hits := check(path.read_text(encoding="utf-8")))
    }


def test_no_test_file_imports_a_test_module_or_a_conftest() -> None:
    assert _offenders(forbidden_imports) == {}


def test_no_test_file_imports_a_fixture_by_hand() -> None:
    assert _offenders(fixture_noqas) == {}


def test_no_test_asserts_wall_clock_time() -> None:
    assert _offenders(wall_clock_asserts) == {}


@pytest.mark.parametrize(
    "line",
    [
        "from tests.gateway.test_cli import run_gateway",
        "from tests.state.conftest import store",
        "from .test_lease import dead_pid",
        "from .conftest import DBFactory",
        "from . import test_lease",
        "import tests.cli.test_doctor",
    ],
)
def test_the_import_check_sees_a_planted_violation(line: str) -> None:
    assert forbidden_imports(line)
    assert not forbidden_imports(line.replace("test_", "helpers_").replace("conftest", "helpers"))


def test_the_noqa_check_sees_a_planted_violation() -> None:
    assert fixture_noqas("from tests.x import store  # noqa: F401 - a fixture")
    assert fixture_noqas("def f(store):  # noqa: F811\n    pass")
    assert fixture_noqas("from .helpers import (\n    store,  # noqa: E501, F401\n)")
    assert not fixture_noqas("from tests.x import store  # noqa: E402")
    assert not fixture_noqas("import telegram  # noqa: F401 - the extra must be installed")


@pytest.mark.parametrize(
    "line",
    [
        "assert time.monotonic() - started < 3",
        "assert 0.9 < time.monotonic() - started < 5",
        "assert perf_counter() - t0 <= 1.0",
        "assert elapsed < 3",
        "assert ok and time.time() - start < 2, 'slow'",
    ],
)
def test_the_clock_check_sees_a_planted_violation(line: str) -> None:
    assert wall_clock_asserts(line)


@pytest.mark.parametrize(
    "line",
    [
        "assert time.monotonic() < deadline, 'not in time'",  # a wait's bound, not a speed
        "assert len(rows) < 3",
        "started = time.monotonic() - 5",
    ],
)
def test_the_clock_check_lets_waits_and_counts_be(line: str) -> None:
    assert not wall_clock_asserts(line)
