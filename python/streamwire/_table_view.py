"""The listener thread of a ``TableView``: ``for_each_and_listen(callback)`` and
``listen(callback)``.

The map and its update loop are native (``rust/streamwire-pulsar/src/table_view.rs``): the
engine numbers every change and, once someone listens, queues it. This module is the part
that calls Python: one thread per view, started by its first listener, takes the queued
changes (``TableView._take_updates``, which waits with the interpreter released) and calls
each listener with ``(key, value)``, a removed key with ``None``.

Ordering: every listener sees the changes in the order the engine applied them. A listener
added by ``for_each_and_listen`` first gets the entries as of its number (in the caller's
thread) and then exactly the changes after it: the snapshot, the registration and the
thread's taking of changes happen under one lock, so no change is missed or told twice.

A listener's exception is logged (logger ``streamwire``, with its traceback) and the next
change comes; a value that does not decode with the view's schema is logged and that change
skipped for every listener. ``TableView.close`` stops and joins the thread (not when a
listener closes its own view); threads still running at interpreter exit are stopped first.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any, Optional

from streamwire import _native
from streamwire.exceptions import StreamwireError

__all__ = ["SLICE", "Listeners"]

_log = logging.getLogger("streamwire")

#: Seconds one wait for changes lasts before the thread looks at its stop flag again.
SLICE = 0.2

#: Seconds ``close`` at interpreter exit waits for a listener call to finish.
EXIT_JOIN_TIMEOUT = 10.0

Callback = Callable[[str, Any], object]


class Listeners:
    """One view's listeners and the thread calling them (see the module docstring)."""

    def __init__(self, view: _native.TableView) -> None:
        self._view = view
        # Held while listeners are added and while the thread hands over a batch of changes,
        # so that a new listener's snapshot and its first change meet exactly. Reentrant: a
        # listener may add another listener.
        self._lock = threading.RLock()
        self._listeners: list[tuple[int, Callback]] = []
        self._stopping = False
        self._thread: Optional[threading.Thread] = None
        _all.add(self)

    def add(self, callback: Callback, existing: bool) -> None:
        """Listen with ``callback`` from now on; with ``existing`` call it first for every
        entry already in the view (in this thread)."""
        with self._lock:
            seq, entries = self._view._listen()
            if existing:
                for key, message in entries:
                    callback(key, message.value)
            self._listeners.append((seq, callback))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"streamwire-tableview-{self._view.topic}", daemon=True
                )
                self._thread.start()

    def close(self, join_timeout: Optional[float] = None) -> None:
        """Stop the thread and join it (not when called from it). Idempotent."""
        self._stopping = True
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(join_timeout)
            if thread.is_alive():
                _log.warning(
                    "table view listener thread %s did not stop within %.0f s (a listener "
                    "call is still running)",
                    thread.name,
                    join_timeout,
                )

    def _run(self) -> None:
        while not self._stopping:
            try:
                updates = self._view._take_updates(SLICE)
            except StreamwireError:
                _log.exception(
                    "table view of %s stopped following the topic; its listeners are not "
                    "called any more",
                    self._view.topic,
                )
                return
            if updates is None:
                return  # closed
            if updates:
                with self._lock:
                    self._deliver(updates)

    def _deliver(self, updates: list[tuple[int, str, Optional[_native.Message]]]) -> None:
        listeners = list(self._listeners)
        for seq, key, message in updates:
            if self._stopping:
                return
            value: Any = None
            if message is not None:
                try:
                    value = message.value
                except StreamwireError:
                    _log.exception(
                        "table view of %s: the value of key %r (message %r) does not decode; "
                        "listeners are not told about this change",
                        self._view.topic,
                        key,
                        message.message_id,
                    )
                    continue
            for start, callback in listeners:
                if seq <= start:
                    continue  # already in the snapshot this listener started from
                try:
                    callback(key, value)
                except BaseException:  # a listener must never end the thread
                    _log.exception(
                        "a listener of the table view of %s raised on key %r", self._view.topic, key
                    )


_all: weakref.WeakSet[Listeners] = weakref.WeakSet()


def _close_all_at_exit() -> None:
    # A thread still inside the engine while the interpreter finalizes would be cut off
    # there: stop every one first.
    for listeners in list(_all):
        listeners.close(join_timeout=EXIT_JOIN_TIMEOUT)


atexit.register(_close_all_at_exit)
