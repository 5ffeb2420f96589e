"""The official ``pulsar.TableView`` on a :class:`streamwire.TableView`: the latest value of
each key of a topic, decoded with the view's schema."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import streamwire
from streamwire.compat._common import _check_type, _raise
from streamwire.exceptions import StreamwireError


class TableView:
    """A topic read as a table (made by :meth:`Client.create_table_view`).

    Args:
        view: the :class:`streamwire.TableView` it wraps.
        topic: the topic, as the caller named it (for ``str()``).
        subscription: the reader subscription's name, if the caller gave one.
    """

    def __init__(self, view: streamwire.TableView, topic: str, subscription: Optional[str]) -> None:
        self._view = view
        self._topic = topic
        self._subscription = subscription

    def get(self, key: str) -> Optional[Any]:
        """The value of ``key`` decoded with the schema, or None if the key is not there."""
        _check_type(str, key, "key")
        try:
            return self._view.get(key)
        except StreamwireError as e:
            _raise(e)

    def for_each(self, callback: Callable[[str, Any], None]) -> None:
        """Call ``callback(key, value)`` for every entry now in the view."""
        try:
            self._view.for_each(callback)
        except StreamwireError as e:
            _raise(e)

    def for_each_and_listen(self, callback: Callable[[str, Any], None]) -> None:
        """As :meth:`for_each`, then call ``callback`` for every later update too."""
        try:
            self._view.for_each_and_listen(callback)
        except StreamwireError as e:
            _raise(e)

    def close(self) -> None:
        """Stop following the topic."""
        try:
            self._view.close()
        except StreamwireError as e:
            _raise(e)

    def __len__(self) -> int:
        return len(self._view.keys())

    def __str__(self) -> str:
        if self._subscription is None:
            return f"TableView(topic={self._topic})"
        return f"TableView(topic={self._topic}, subscription={self._subscription})"

    def __repr__(self) -> str:
        return self.__str__()
