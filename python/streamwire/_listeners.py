"""The listener threads of a Pulsar client: ``Client(message_listener_threads=N)``,
``subscribe(message_listener=...)`` and ``create_reader(reader_listener=...)``.

Each client makes one :class:`Pool` on its first listener (``Client.listener_pool`` in
``rust/streamwire-python/src/pulsar/client.rs``); the pool starts up to N threads ("lanes")
as consumers arrive and gives each new consumer to the lane serving the fewest, so one
consumer's messages always reach its listener from one thread, one at a time, in receive
order, and many consumers share a thread.

A lane loops: wait with the interpreter released until one of *its* consumers has messages
(``_native._ListenerLane.wait``, which sleeps on the consumers' own receive notifications:
no polling), then take each ready consumer's queued messages (up to ``TURN`` per turn, so a
busy consumer cannot starve the others of its lane) and call the listener per message. Why
the loop is Python and the wait native: the listener is Python, so calling it, logging its
exceptions with their traceback and joining threads are plain Python here, while the part
that must not hold the interpreter (waiting on several consumers at once) is one native call
per idle period. Taking a turn's messages is one native call, so a message costs about what
it costs in a ``receive()`` loop.

A listener's exception is logged (logger ``streamwire``, with its traceback) and counted
(``metrics()["listener_errors"]``); the message is not acknowledged and the next one comes. A
message held back because it cannot be decrypted (``crypto_failure_action="fail"``) is logged as
a warning, and the next one comes too.
A paused consumer is not waited on, so its messages stay queued (the broker stops sending
once the receiver queue is full) and resume continues with the first one not handed over.

Threads are daemons stopped by ``Client.close`` (and at interpreter exit, so none is inside
the engine while the interpreter finalizes). After ``fork()`` a parent's client cannot be
used in the child (``ForkedProcessError``) and neither can its pool; a client made in the
child makes its own pool, whose threads start there.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, Union

from streamwire import _native
from streamwire.exceptions import (
    AlreadyClosedError,
    CryptoError,
    ForkedProcessError,
    StreamwireError,
    TopicTerminatedError,
)

__all__ = ["TAKE", "TURN", "Pool"]

_log = logging.getLogger("streamwire")

#: The most messages a lane hands one consumer's listener before looking at its others.
TURN = 256

#: Messages taken from the receiver queue at once (one native call): few enough that a
#: pause leaves nearly everything in the receiver queue, where flow control sees it.
TAKE = 32

#: Seconds ``close`` at interpreter exit waits for a listener call to finish.
EXIT_JOIN_TIMEOUT = 10.0

Handle = Union[_native.Consumer, _native.Reader]

# _listener_state of a handle (see rust/streamwire-python/src/pulsar/consumer.rs).
_SERVE, _PAUSED, _CLOSED = 0, 1, 2


class _Member:
    """One consumer or reader of a lane, with the messages taken and not yet handed over
    (left by a pause in the middle of a turn)."""

    __slots__ = ("handle", "held", "listener")

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        listener = handle._listener
        if listener is None:
            raise ValueError("this consumer or reader has no listener")
        self.listener: Callable[[Any, Any], object] = listener
        self.held: deque[_native.Message] = deque()


class _Lane:
    """One listener thread and the consumers it serves."""

    def __init__(self, name: str) -> None:
        self.native = _native._ListenerLane()
        self.members: list[_Member] = []
        self.lock = threading.Lock()
        self.stopping = False
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __len__(self) -> int:
        return len(self.members)

    def add(self, handle: Handle) -> None:
        member = _Member(handle)
        self.native.adopt(handle)
        with self.lock:
            self.members.append(member)
        if not self.thread.is_alive() and self.thread.ident is None:
            self.thread.start()
        self.native.wake()

    def stop(self) -> None:
        self.stopping = True
        self.native.wake()

    def _drop(self, member: _Member) -> None:
        with self.lock:
            if member in self.members:
                self.members.remove(member)
        member.held.clear()

    def _run(self) -> None:
        while not self.stopping:
            try:
                self._turn()
            except Exception:
                # Not a listener's exception (those are caught per call): the engine refused a
                # wait. Logged, and retried after a pause rather than ending the thread.
                _log.exception("listener thread %s: unexpected error", self.thread.name)
                time.sleep(0.1)
        with self.lock:
            self.members.clear()

    def _turn(self) -> None:
        """Wait for this lane's consumers, then serve the ready ones once."""
        with self.lock:
            members = list(self.members)
        runnable = []
        for m in members:
            state = m.handle._listener_state
            if state == _CLOSED:
                self._drop(m)
            elif state == _SERVE:
                runnable.append(m)
        # Messages already taken are handed over before waiting for more.
        ready = [m for m in runnable if m.held]
        if not ready:
            picked = self.native.wait([m.handle for m in runnable])
            ready = [runnable[i] for i in picked]
        for m in ready:
            if self.stopping:
                break
            self._serve(m)

    def _serve(self, m: _Member) -> None:
        """Hand up to ``TURN`` of ``m``'s messages to its listener."""
        handle, listener, held = m.handle, m.listener, m.held
        for _ in range(TURN):
            state = handle._listener_state
            if state != _SERVE:
                if state == _CLOSED:
                    self._drop(m)
                return
            if not held:
                try:
                    held.extend(handle._listener_take(TAKE))
                except AlreadyClosedError:
                    self._drop(m)
                    return
                except TopicTerminatedError:
                    return
                except CryptoError as e:
                    # A message held back undecryptable (crypto_failure_action="fail"): it
                    # stays unacknowledged; the listener goes on with the next messages.
                    _log.warning("%r: %s", handle, e)
                    continue
                except StreamwireError:
                    # A partition failed for good: every later take raises it again.
                    _log.exception("%r failed; its listener is not called any more", handle)
                    self._drop(m)
                    return
                if not held:
                    return
            message = held.popleft()
            try:
                listener(handle, message)
            except BaseException:  # a listener must never end the thread
                handle._listener_failed()
                _log.exception(
                    "the listener of %r raised on message %r; the message is not acknowledged",
                    handle,
                    message.message_id,
                )
            if self.stopping:
                return


class Pool:
    """A client's listener threads (see the module docstring).

    Args:
        threads: the most threads (``message_listener_threads``).
    """

    def __init__(self, threads: int) -> None:
        self._threads = threads
        self._lanes: list[_Lane] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._closed = False
        _pools.add(self)

    @property
    def threads(self) -> list[threading.Thread]:
        """The threads started so far."""
        return [lane.thread for lane in self._lanes if lane.thread.ident is not None]

    def adopt(self, handle: Handle) -> None:
        """Serve ``handle`` (a new Consumer or Reader with a listener) from now on."""
        if os.getpid() != self._pid:
            raise ForkedProcessError(
                "this client's listener threads belong to the parent process; create the "
                "client in the child"
            )
        with self._lock:
            if self._closed:
                raise AlreadyClosedError("the client is closed")
            if len(self._lanes) < self._threads:
                lane = _Lane(f"streamwire-listener-{len(self._lanes)}")
                self._lanes.append(lane)
            else:
                lane = min(self._lanes, key=len)
            lane.add(handle)

    def close(self, join_timeout: float | None = None) -> None:
        """Stop every thread and join it (not the calling one, for a listener that closes
        its own client). A listener call running now finishes first. Idempotent."""
        if os.getpid() != self._pid:
            return  # the parent's threads do not exist here, and its locks may be held
        with self._lock:
            if self._closed:
                return
            self._closed = True
            lanes = list(self._lanes)
        for lane in lanes:
            lane.stop()
        me = threading.current_thread()
        for lane in lanes:
            if lane.thread is not me and lane.thread.ident is not None:
                lane.thread.join(join_timeout)
                if lane.thread.is_alive():
                    _log.warning(
                        "listener thread %s did not stop within %.0f s (a listener call is "
                        "still running)",
                        lane.thread.name,
                        join_timeout,
                    )


_pools: weakref.WeakSet[Pool] = weakref.WeakSet()


def _close_all_at_exit() -> None:
    # Daemon threads still inside the engine while the interpreter finalizes would be cut
    # off there; stop them first (registered after streamwire's own hook, so it runs before).
    for pool in list(_pools):
        pool.close(join_timeout=EXIT_JOIN_TIMEOUT)


atexit.register(_close_all_at_exit)
