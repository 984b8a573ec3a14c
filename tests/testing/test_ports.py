"""free_port: ports no other test process and no bind(0) can be handed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from hermes.testing.ports import _ephemeral_floor, free_port


def _ports_of_worker(worker: str, count: int) -> set[int]:
    code = "from hermes.testing.ports import free_port\n"
    code += f"print(' '.join(str(free_port()) for _ in range({count})))"
    env = {**os.environ, "PYTEST_XDIST_WORKER": worker}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return {int(port) for port in out.stdout.split()}


def test_ports_lie_below_what_the_kernel_hands_out_and_repeat_only_after_the_block() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50  # two servers started in a row get two ports
    assert all(port < _ephemeral_floor() for port in ports)
    with socket.socket() as kernel_chosen:
        kernel_chosen.bind(("127.0.0.1", 0))
        assert kernel_chosen.getsockname()[1] >= _ephemeral_floor()


def test_two_workers_never_share_a_port() -> None:
    first, second = _ports_of_worker("gw0", 200), _ports_of_worker("gw1", 200)
    assert len(first) == len(second) == 200
    assert first.isdisjoint(second)


def test_a_port_something_listens_on_is_skipped() -> None:
    taken = [socket.socket() for _ in range(5)]
    try:
        held = set()
        for sock in taken:
            sock.bind(("127.0.0.1", free_port()))
            sock.listen()
            held.add(sock.getsockname()[1])
        assert not held & {free_port() for _ in range(1_000)}
    finally:
        for sock in taken:
            sock.close()
