"""read_file, write_file, patch and search_files on real files."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes.tools import files


@pytest.fixture
def sample(workdir: Path) -> Path:
    path = workdir / "app.py"
    path.write_text(
        "import os\n\n\ndef main():\n    print('hello')\n    return 0\n", encoding="utf-8"
    )
    return path


# read_file -------------------------------------------------------------------------


def test_read_shows_numbered_lines(call: Callable[..., str], sample: Path) -> None:
    result = call("read_file", path="app.py")
    lines = result.splitlines()
    assert lines[0] == f"{sample} (lines 1-6 of 6)"
    assert lines[1] == "     1\timport os"
    assert lines[5] == "     5\t    print('hello')"


def test_read_a_line_range(call: Callable[..., str], sample: Path) -> None:
    result = call("read_file", path=str(sample), start_line=4, end_line=5)
    assert result.splitlines()[1:] == ["     4\tdef main():", "     5\t    print('hello')"]
    assert "(lines 4-5 of 6)" in result
    assert "past the end" in call("read_file", path="app.py", start_line=50)
    assert "before start_line" in call("read_file", path="app.py", start_line=5, end_line=2)


def test_read_stops_at_the_size_cap_and_says_where_to_continue(
    call: Callable[..., str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "READ_CHAR_LIMIT", 200)
    (workdir / "big.txt").write_text(
        "".join(f"line {i}\n" for i in range(1, 101)), encoding="utf-8"
    )
    result = call("read_file", path="big.txt")
    stop = int(result.rsplit("Stopped at line ", 1)[1].split()[0])
    assert 10 < stop < 100
    assert f"start_line={stop + 1}" in result
    assert "of 100)" in result
    assert f"{stop + 1:6d}\t" not in result


def test_read_refuses_missing_binary_and_folders(
    call: Callable[..., str], workdir: Path, sample: Path
) -> None:
    missing = call("read_file", path="ap.py")
    assert missing.startswith("Error: file not found") and "Did you mean: app.py?" in missing
    (workdir / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    assert "is a binary file" in call("read_file", path="blob.bin")
    assert "is a directory" in call("read_file", path=".")
    (workdir / "empty.txt").write_text("")
    assert call("read_file", path="empty.txt").endswith("is empty (0 lines).")


# write_file ------------------------------------------------------------------------


def test_read_a_latin1_file_with_its_letters_and_a_note(
    call: Callable[..., str], workdir: Path
) -> None:
    (workdir / "notes.txt").write_bytes("café crème à Noël\nsecond\n".encode("cp1252"))
    shown = call("read_file", path="notes.txt")
    assert "café crème à Noël" in shown and "\ufffd" not in shown
    assert "Read as Windows-1252 (Latin-1): the file is not UTF-8" in shown
    refused = call("patch", path="notes.txt", old="second", new="2nd")
    assert "is not UTF-8 text" in refused  # patch still edits UTF-8 only


def test_read_a_utf16_file_as_text(call: Callable[..., str], workdir: Path) -> None:
    (workdir / "win.txt").write_bytes("Grüße\r\nzwei\r\n".encode("utf-16"))  # with its BOM
    shown = call("read_file", path="win.txt")
    assert "is a binary file" not in shown
    assert "Grüße" in shown and "zwei" in shown and "Read as UTF-16" in shown


def test_write_creates_parents_atomically(call: Callable[..., str], workdir: Path) -> None:
    result = call("write_file", path="deep/er/notes.md", content="a\nb\n")
    assert result.startswith(f"Created {workdir / 'deep/er/notes.md'}: 4 characters, 2 lines")
    assert (workdir / "deep/er/notes.md").read_text() == "a\nb\n"
    assert [p.name for p in (workdir / "deep/er").iterdir()] == ["notes.md"]  # no temp file left


def test_write_keeps_an_existing_files_mode(call: Callable[..., str], workdir: Path) -> None:
    script = workdir / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o750)
    assert call("write_file", path="run.sh", content="#!/bin/sh\necho hi\n").startswith("Overwrote")
    assert script.stat().st_mode & 0o777 == 0o750
    assert script.read_text() == "#!/bin/sh\necho hi\n"


def test_write_through_a_symlink_keeps_the_link(call: Callable[..., str], workdir: Path) -> None:
    (workdir / "real.txt").write_text("old\n")
    (workdir / "link.txt").symlink_to("real.txt")
    call("write_file", path="link.txt", content="new\n")
    assert (workdir / "link.txt").is_symlink()
    assert (workdir / "real.txt").read_text() == "new\n"


# patch -----------------------------------------------------------------------------


def test_patch_replaces_one_exact_match(call: Callable[..., str], sample: Path) -> None:
    result = call("patch", path="app.py", old="print('hello')", new="print('bye')")
    assert result == f"Patched {sample}: replaced 1 occurrence (line 5)."
    assert "print('bye')" in sample.read_text()


def test_patch_missing_text_shows_the_closest_lines(call: Callable[..., str], sample: Path) -> None:
    before = sample.read_text()
    result = call("patch", path="app.py", old="def main():\n    print('helo')", new="x")
    assert result.startswith("Error: 'old' was not found in")
    assert "     4\tdef main():" in result and "     5\t    print('hello')" in result
    assert "Copy 'old' exactly" in result
    assert sample.read_text() == before


def test_patch_whitespace_only_difference_is_named(call: Callable[..., str], sample: Path) -> None:
    result = call("patch", path="app.py", old="def main():\n  print('hello')", new="x")
    assert "different whitespace or indentation" in result


def test_patch_ambiguous_match_counts_and_asks_for_context(
    call: Callable[..., str], workdir: Path
) -> None:
    path = workdir / "dup.txt"
    path.write_text("x = 1\ny = 2\nx = 1\nx = 1\n")
    result = call("patch", path="dup.txt", old="x = 1", new="x = 9")
    assert result.startswith("Error: 'old' matches 3 places")
    assert (
        "lines 1, 3, 4" in result and "more surrounding lines" in result and "replace_all" in result
    )
    assert path.read_text() == "x = 1\ny = 2\nx = 1\nx = 1\n"
    assert "replaced 3 occurrences (lines 1, 3, 4)" in call(
        "patch", path="dup.txt", old="x = 1", new="x = 9", replace_all=True
    )
    assert path.read_text() == "x = 9\ny = 2\nx = 9\nx = 9\n"


def test_patch_keeps_windows_line_endings(call: Callable[..., str], workdir: Path) -> None:
    path = workdir / "win.txt"
    path.write_bytes(b"first\r\nsecond\r\nthird\r\n")
    assert call("patch", path="win.txt", old="first\nsecond", new="one\ntwo").startswith("Patched")
    assert path.read_bytes() == b"one\r\ntwo\r\nthird\r\n"


def test_patch_refuses_empty_and_no_op_edits(call: Callable[..., str], sample: Path) -> None:
    assert "'old' is empty" in call("patch", path="app.py", old="", new="x")
    assert "nothing would change" in call("patch", path="app.py", old="os", new="os")


# search_files ----------------------------------------------------------------------


@pytest.fixture
def tree(workdir: Path) -> Path:
    (workdir / "src").mkdir()
    (workdir / "src/alpha.py").write_text("def alpha():\n    return 'needle'\n")
    (workdir / "src/beta.txt").write_text("no match here\nNEEDLE in caps\n")
    (workdir / "src/gamma.py").write_text("x = 'a.b'\ny = 'axb'\n")
    for skipped in (".git", "node_modules", ".venv"):
        (workdir / skipped).mkdir()
        (workdir / skipped / "hidden.py").write_text("needle\n")
    (workdir / "image.bin").write_bytes(b"needle\x00\x00binary")
    return workdir


@pytest.fixture(params=["python", "ripgrep"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run each search test with the pure-Python walk, and with rg when installed."""
    if request.param == "python":
        monkeypatch.setattr(
            shutil, "which", lambda name, *a, **k: None if name == "rg" else _which(name, *a, **k)
        )
    else:
        # .ci/run installs ripgrep (Debian: apt-get install ripgrep) when it is missing.
        assert _which("rg"), "rg is not on PATH: install ripgrep to test the rg search path"
    return request.param


_which = shutil.which


def test_content_search_regex_skips_vendored_and_binary(
    call: Callable[..., str], tree: Path, backend: str
) -> None:
    result = call("search_files", pattern="need.e")
    assert result.splitlines()[1:] == ["src/alpha.py:2:     return 'needle'"]
    insensitive = call("search_files", pattern="needle", ignore_case=True, path="src")
    assert "src/alpha.py:2:" in insensitive and "src/beta.txt:2: NEEDLE in caps" in insensitive


def test_content_search_literal_and_include(
    call: Callable[..., str], tree: Path, backend: str
) -> None:
    assert call("search_files", pattern="a.b", literal=True).splitlines()[1:] == [
        "src/gamma.py:1: x = 'a.b'"
    ]
    assert len(call("search_files", pattern="a.b").splitlines()[1:]) == 2
    assert "beta.txt" not in call(
        "search_files", pattern="needle", ignore_case=True, include="*.py"
    )


def test_content_search_bad_regex_and_no_match(
    call: Callable[..., str], tree: Path, backend: str
) -> None:
    assert call("search_files", pattern="(unclosed").startswith("Error: invalid regular expression")
    nothing = call("search_files", pattern="zebra")
    assert nothing.startswith("No matches for /zebra/") and "binary files" in nothing


def test_search_results_are_limited_with_a_note(
    call: Callable[..., str], workdir: Path, backend: str
) -> None:
    (workdir / "many.txt").write_text("hit\n" * 30)
    result = call("search_files", pattern="hit", limit=5)
    assert len([line for line in result.splitlines() if line.startswith("many.txt:")]) == 5
    assert "[Results cut at 5; more exist." in result


def test_name_search_by_glob(call: Callable[..., str], tree: Path) -> None:
    result = call("search_files", pattern="*.py", mode="name")
    assert result.splitlines()[1:] == ["src/alpha.py", "src/gamma.py"]
    assert call("search_files", pattern="bet", mode="name").splitlines()[1:] == ["src/beta.txt"]
    assert call("search_files", pattern="src", mode="name").splitlines()[1:] == ["src/"]


def test_search_path_must_exist(call: Callable[..., str], workdir: Path) -> None:
    assert call("search_files", pattern="x", path="nowhere").startswith("Error:")
    assert os.path.isdir(workdir)
