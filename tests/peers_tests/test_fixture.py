"""The shared body of the peer fixtures (tests/peers/fixture.py): a failed start fails the
test with the peer's message (never a skip), is remembered so that later tests fail without
another start, and the peer is closed in every case."""

from __future__ import annotations

import pytest

from tests.peers.fixture import started


class _Broken(RuntimeError):
    pass


class _Peer:
    made = 0

    def __init__(self, fail: bool) -> None:
        _Peer.made += 1
        self.fail = fail
        self.closed = False

    def start(self) -> _Peer:
        if self.fail:
            raise _Broken("exited with 1 during start-up\n--- log tail ---")
        return self

    def close(self) -> None:
        self.closed = True


def test_a_started_peer_is_yielded_then_closed() -> None:
    with started(lambda: _Peer(False), "the peer", _Broken) as peer:
        assert not peer.closed
    assert peer.closed


def test_a_failed_start_fails_with_the_log_tail_once_for_the_run() -> None:
    failures: list[str] = []
    peers: list[_Peer] = []

    def make() -> _Peer:
        peers.append(_Peer(True))
        return peers[-1]

    with pytest.raises(pytest.fail.Exception) as info:
        with started(make, "the peer", _Broken, failures):
            raise AssertionError("not reached")
    assert (
        str(info.value) == "the peer did not start: exited with 1 during start-up\n--- log tail ---"
    )
    assert peers[0].closed and failures == [str(info.value)]
    # A later test fails at once with the same message, without making another peer.
    with pytest.raises(pytest.fail.Exception) as again:
        with started(make, "the peer", _Broken, failures):
            raise AssertionError("not reached")
    assert str(again.value) == str(info.value) and len(peers) == 1


def test_an_error_not_named_propagates_as_it_is() -> None:
    with pytest.raises(_Broken):
        with started(lambda: _Peer(True)):
            raise AssertionError("not reached")
