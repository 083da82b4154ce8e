"""Free loopback ports for servers a test starts itself.

Invariant: the ports returned are distinct, because every listener stays open until all of them
are picked (the operating system cannot hand the same port out twice while it is bound); all
listeners are closed before the function returns, so the ports are free to bind, though another
process may still take one in the meantime.
"""

from __future__ import annotations

import contextlib
import socket
from typing import Final

__all__ = ["LOOPBACK_HOST", "find_free_loopback_ports"]

LOOPBACK_HOST: Final = "127.0.0.1"


def find_free_loopback_ports(count: int) -> tuple[int, ...]:
    """Pick ``count`` distinct free TCP ports on ``127.0.0.1``.

    Args:
        count: How many ports; 0 returns an empty tuple.

    Returns:
        The ports, in the order they were picked.

    Raises:
        ValueError: ``count`` is negative.
        OSError: The operating system has no free port left.
    """
    if count < 0:
        raise ValueError(f"count must not be negative, got {count}")
    with contextlib.ExitStack() as listeners:
        ports: list[int] = []
        for _ in range(count):
            listener = listeners.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            listener.bind((LOOPBACK_HOST, 0))
            listener.listen(1)
            port = listener.getsockname()[1]
            assert isinstance(port, int)
            ports.append(port)
        return tuple(ports)
