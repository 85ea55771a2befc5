"""The handshake with whatever sits on the state file's port is one deadline, not a per-read
timeout, and its reply is small: a stranger that answers /challenge a byte at a time held
`qc.http` for 25 s+ (review item A)."""

from __future__ import annotations

import socket
import time

import pytest

from clients import _qmd_client as qc
from qmd_daemon.daemon.state import DaemonState, probe_health
from tests.daemon.support import Stranger

TOKEN = "tok3n-" + "d" * 40
DRIP_S = 0.4  # well under the 3 s handshake timeout: a per-read timeout never fires
GIVE_UP_S = 12.0  # the dripper's own end, so old code fails its timing instead of hanging


class Dripper(Stranger):
    """A stranger that answers every request with a 200 whose headers come at once and whose body
    comes one byte every DRIP_S seconds, for GIVE_UP_S at most."""

    def __init__(self, content_length: int):
        self.content_length = content_length
        super().__init__()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % self.content_length)
                ends = time.monotonic() + GIVE_UP_S
                while time.monotonic() < ends:
                    conn.sendall(b"{")
                    time.sleep(DRIP_S)
            except OSError:  # the client gave up and closed
                pass


@pytest.fixture
def small_dripper():
    """A reply that fits the cap, so only the deadline can end the wait."""
    dripper = Dripper(content_length=200)
    yield dripper
    dripper.close()


def took_s(call) -> float:
    started = time.monotonic()
    call()
    return time.monotonic() - started


def test_a_dripping_stranger_costs_the_handshake_timeout_in_all(small_dripper: Dripper, monkeypatch) -> None:
    monkeypatch.setattr(qc, "HANDSHAKE_TIMEOUT_S", 3.0)
    state = {"port": small_dripper.port, "token": TOKEN}

    def ask() -> None:
        with pytest.raises(qc.NotTheDaemon):
            qc.http(state, "GET", "/health", timeout=2.0)

    assert took_s(ask) < 3.5  # old code: GIVE_UP_S (a byte every DRIP_S resets a per-read timeout)


def test_a_big_challenge_reply_is_refused_unread() -> None:
    dripper = Dripper(content_length=100_000)
    try:
        state = {"port": dripper.port, "token": TOKEN}
        with pytest.raises(qc.NotTheDaemon, match="at most 4096"):
            qc.http(state, "GET", "/health", timeout=2.0)
    finally:
        dripper.close()


def test_the_daemon_side_probe_has_one_deadline_too(small_dripper: Dripper) -> None:
    state = DaemonState(port=small_dripper.port, token=TOKEN, pid=1, version="0", started_at=0)
    result: list[object] = []
    assert took_s(lambda: result.append(probe_health(state, timeout=2.0))) < 2.5  # old code: GIVE_UP_S
    assert result == [None]
