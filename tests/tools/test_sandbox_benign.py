"""Everyday commands run inside the sandbox without approval, and succeed.

Each command runs through the real terminal tool on a gateway surface (nobody to
approve) in a small project: a git repository with a Python module, its test, a
Makefile and a data file. Inside the sandbox the parse no longer decides whether they
run, so arithmetic, ``[[ ]]``, ``case``, ``kill $PID``, here-documents and loops just run.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes.tools import ToolContext

PY = sys.executable

BENIGN = [
    # arithmetic, tests and shell forms the parse-based policy used to refuse
    "echo hi-there-$((40+2))",
    "x=5; echo $((x * 2))",
    "[[ -f app.py ]] && echo yes",
    "[[ abc == a* ]] && echo match",
    'case "$0" in *bash*) echo bash;; *) echo other;; esac',
    "sleep 30 & PID=$!; kill $PID; wait $PID; echo killed",
    "let n=3+4; echo $n",
    "(( 3 > 2 )) && echo bigger",
    "for i in {1..5}; do echo $i; done",
    "for ((i=0; i<3; i++)); do echo $i; done",
    "i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i",
    "until true; do :; done; echo done",
    "printf '%s\\n' a b c | sort -r",
    "echo $(date +%Y) > year.txt && cat year.txt",
    "arr=(a b c); echo ${arr[1]} ${#arr[@]}",
    "s=hello; echo ${s^^} ${s:1:3} ${#s}",
    'f() { echo "in f $1"; }; f one',
    "eval 'echo evaluated'",
    "source ./env.sh && echo $GREETING",
    ". ./env.sh; echo $GREETING",
    "bash -c 'echo inline'",
    "sh -c 'echo posix'",
    "python3 -c 'print(6*7)'",
    f"{PY} -c 'import json; print(json.dumps([1]))'",
    "echo 'print(1)' | python3",
    "python3 - <<'EOF'\nprint('heredoc')\nEOF",
    "cat <<EOF > notes.md\nhello $USER\nEOF\ncat notes.md",
    "cat <<'EOF' | wc -l\none\ntwo\nEOF",
    "wc -l <<< 'one line'",
    "diff <(echo a) <(echo a) && echo same",
    "exec 3> fd.txt; echo via-fd >&3; exec 3>&-; cat fd.txt",
    "trap 'echo bye' EXIT; echo hi",
    "set -euo pipefail; echo strict",
    "shopt -s globstar; ls **/*.py",
    "read -r a b <<< 'x y'; echo $b",
    "mapfile -t lines < data.csv; echo ${#lines[@]}",
    "declare -A m; m[k]=v; echo ${m[k]}",
    "time true",
    "type ls; command -v python3",
    "awk -F, '{s+=$2} END {print s}' data.csv",
    "awk 'NR>1 {print $1 | \"sort\"}' data.csv",
    "sed -n '2p' data.csv",
    "sed -i 's/apple/pear/' data.csv && cat data.csv",
    "sed 's/a/b/' data.csv | head -1",
    "grep -rn def .",
    "grep -c , data.csv",
    "find . -name '*.py' -exec wc -l {} +",
    "find . -name '*.tmp' -delete",
    "find . -type f | xargs wc -c | tail -1",
    "ls *.py | xargs -I{} echo file {}",
    "cut -d, -f1 data.csv | sort | uniq -c",
    "sort -t, -k2 -n data.csv -o sorted.csv && cat sorted.csv",
    "tr a-z A-Z < data.csv",
    "head -c 10 /dev/urandom | xxd | head -1",
    "echo aGk= | base64 -d",
    "sha256sum app.py",
    "stat -c %s app.py",
    "du -sh .",
    "df -h . | tail -1",
    "tee copy.txt < data.csv > /dev/null; cat copy.txt",
    "mkdir -p build/out && touch build/out/a.o && ls build/out",
    "mkdir -p src/{a,b} && ls src",
    "cp app.py app_copy.py && mv app_copy.py app2.py && ls app2.py",
    "ln -s app.py link.py && cat link.py | head -1",
    "rm -rf build && mkdir build && echo rebuilt",
    "chmod +x run.sh && ./run.sh",
    "bash run.sh",
    "touch a.tmp b.tmp && rm *.tmp && ls",
    "tar -czf src.tgz app.py && tar -tzf src.tgz",
    "zip_dir=out; mkdir -p $zip_dir; cp *.py $zip_dir/; ls $zip_dir",
    "gzip -k data.csv && gunzip -c data.csv.gz | head -1",
    "truncate -s 0 empty.txt && wc -c empty.txt",
    "dd if=/dev/zero of=zeros.bin bs=1k count=4 status=none && ls -l zeros.bin",
    "mktemp -d /tmp/work.XXXX",
    "echo scratch > /tmp/scratch && cat /tmp/scratch",
    "make",
    "make test",
    "make clean",
    f"{PY} -m py_compile app.py && echo compiled",
    f"{PY} -m pytest -q -p no:cacheprovider test_app.py",
    f"{PY} -m unittest -q test_app 2>&1 | tail -1",
    f"{PY} app.py",
    "python3 -m json.tool <<< '{\"a\": 1}'",
    "env | grep -c PATH",
    "env FOO=1 sh -c 'echo $FOO'",
    "export FOO=bar; echo $FOO",
    "printenv HOME",
    "git status --short",
    "git log --oneline | head -1",
    "git diff HEAD --stat",
    "git checkout -q -b feature && git branch --show-current",
    "echo change >> app.py && git add app.py && git commit -qm change && git log --oneline | wc -l",
    "git stash list",
    "git tag v1 && git tag",
    "git rev-parse --short HEAD",
    "git show --stat HEAD | head -3",
    "git config user.name bot && git config user.name",
    "git blame app.py | head -1",
    "git rebase --help > /dev/null 2>&1; echo ok",
    "ps aux | head -3",
    "kill -0 $$ && echo alive",
    "pkill -x no-such-process-name; echo $?",
    "timeout 5 sleep 0.1 && echo in-time",
    "nohup true > /dev/null 2>&1; echo ran",
    "uname -s && whoami",
    "id -u",
    "echo $((RANDOM % 1)) && true",
    "seq 1 100 | paste -sd+ | bc 2>/dev/null || seq 1 100 | awk '{s+=$1} END {print s}'",
    "yes | head -3",
    "jq --version 2>/dev/null || echo no-jq",
    "curl --version > /dev/null 2>&1; echo probed",
    "cd build 2>/dev/null || cd . ; pwd",
    "pushd . > /dev/null && popd > /dev/null && echo stack",
    "cd .. && cd - > /dev/null && ls app.py",
    "echo done; exit 0",
]


def _project(root: Path) -> None:
    (root / "app.py").write_text("def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n")
    (root / "test_app.py").write_text(
        "import unittest\nfrom app import add\n\n\nclass T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n\n\n"
        "def test_add():\n    assert add(2, 2) == 4\n"
    )
    (root / "data.csv").write_text("name,n\napple,3\nfig,5\n")
    (root / "env.sh").write_text("GREETING=hello\n")
    (root / "run.sh").write_text("#!/bin/sh\necho ran-script\n")
    (root / "Makefile").write_text(
        f"all:\n\t{PY} -m py_compile app.py\n\ntest:\n\t{PY} -m pytest -q -p no:cacheprovider test_app.py\n\n"
        "clean:\n\trm -rf __pycache__\n"
    )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=root, check=True)


def test_the_corpus_is_large_enough() -> None:
    assert len(BENIGN) >= 100 and len(set(BENIGN)) == len(BENIGN)


@pytest.mark.parametrize("command", BENIGN)
def test_an_everyday_command_runs_without_approval_in_the_sandbox(
    make_ctx: Callable[..., ToolContext],
    call: Callable[..., str],
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    for name in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(name, "hermes test")
    for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(name, "test@example.invalid")
    _project(workdir)
    ctx = make_ctx({"terminal.sandbox": "bwrap", "terminal.timeout": 60})
    ctx.surface, ctx.interactive = "gateway", False
    result = call("terminal", ctx, command=command)
    assert result.startswith("Exit code: 0\n"), result
