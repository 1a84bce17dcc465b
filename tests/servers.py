"""What the tests that start real servers share: a free loopback port, the rule for a server
that cannot start here (skip; fail when CI requires it), and stopping a server's process."""

from __future__ import annotations

import os
import socket
import subprocess
from typing import NoReturn

import pytest


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def required(variable: str) -> bool:
    """Whether CI requires these tests (`variable`=1): then a missing server fails them."""
    return os.environ.get(variable) == "1"


def unavailable(variable: str, reason: str) -> NoReturn:
    if required(variable):
        pytest.fail(f"{variable}=1 but {reason}")
    pytest.skip(reason)


def stop(process: subprocess.Popen, timeout_s: float = 10) -> None:
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
