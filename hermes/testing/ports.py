"""A free TCP port for a server a test starts itself, that nobody else is handed.

The usual trick, bind port 0 and close the socket, returns a port from the kernel's
ephemeral range, and the next ``bind(0)`` anywhere on the machine may be given the same
one: a test's gateway failed to listen because a fake model server in another test
process took its port, and the test's client then talked to that model server. Ports
from here lie below the ephemeral range (which the kernel never hands out by itself),
in a block of their own for each pytest-xdist worker, so only this process picks them.
"""

from __future__ import annotations

import itertools
import os
import random
import re
import socket

LOWEST = 20_000
BLOCK = 1_000


def _ephemeral_floor() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as ranges:
            return int(ranges.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def _block() -> range:
    worker = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    start = LOWEST + BLOCK * (int(worker.group(1)) if worker else 0)
    stop = min(start + BLOCK, _ephemeral_floor())
    if start >= stop:
        raise RuntimeError(f"no port block below the ephemeral range for worker {worker}")
    return range(start, stop)


_ports = _block()
# A random start: a child process of this worker begins elsewhere in the block.
_cursor = itertools.islice(itertools.cycle(_ports), random.randrange(len(_ports)), None)


def free_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` that nothing listens on, not given out before by this process."""
    for _ in range(len(_ports)):
        port = next(_cursor)
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue  # taken, or still in TIME_WAIT from an earlier server
            return port
    raise RuntimeError(f"every port in {_ports.start}-{_ports.stop - 1} is taken")
