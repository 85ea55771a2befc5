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
GIVE_UP_S = 60.0  # the dripper's own end (a ceiling), so old code fails instead of hanging


class Dripper(Stranger):
    """A stranger that answers every request with a 200 whose headers come at once and whose body
    comes one byte every DRIP_S seconds, for GIVE_UP_S at most. `outlasted` says, per connection,
    whether it was the dripper that stopped (the client still reading) rather than the client."""

    def __init__(self, content_length: int):
        self.content_length = content_length
        self.outlasted: list[bool] = []
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
                self.outlasted.append(True)
            except OSError:  # the client gave up and closed
                self.outlasted.append(False)


@pytest.fixture
def small_dripper():
    """A reply that fits the cap, so only the deadline can end the wait."""
    dripper = Dripper(content_length=200)
    yield dripper
    dripper.close()


def gave_up_first(dripper: Dripper, call) -> bool:
    """Whether `call` ended its connection while the dripper was still dripping: only a deadline
    for the whole handshake ends it (a byte every DRIP_S resets a per-read timeout). How long it
    took is printed, not checked: on a loaded box that measures the wait for a core."""
    started = time.monotonic()
    call()
    print(f"gave up after {time.monotonic() - started:.2f} s")
    ends = time.monotonic() + GIVE_UP_S  # the dripper's next byte finds the connection closed
    while not dripper.outlasted and time.monotonic() < ends:
        time.sleep(0.05)
    return dripper.outlasted == [False]


def test_a_dripping_stranger_costs_the_handshake_timeout_in_all(small_dripper: Dripper, monkeypatch) -> None:
    monkeypatch.setattr(qc, "HANDSHAKE_TIMEOUT_S", 3.0)
    state = {"port": small_dripper.port, "token": TOKEN}

    def ask() -> None:
        with pytest.raises(qc.NotTheDaemon):
            qc.http(state, "GET", "/health", timeout=2.0)

    assert gave_up_first(small_dripper, ask)  # old code: read on until the dripper's GIVE_UP_S


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
    assert gave_up_first(small_dripper, lambda: result.append(probe_health(state, timeout=2.0)))
    assert result == [None]
