"""Helpers every part of :mod:`streamwire.compat` shares: the official argument checks and
the translation of streamwire errors into the official exceptions."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from streamwire.compat.exceptions import translate
from streamwire.exceptions import StreamwireError


def _raise(e: StreamwireError) -> NoReturn:
    raise translate(e) from e


def _missing(what: str) -> NoReturn:
    raise NotImplementedError(f"streamwire.compat: {what} is not supported by streamwire")


def _check_type(var_type: Any, var: Any, name: str) -> None:
    # The official client's argument checks raise ValueError with this text.
    if not isinstance(var, var_type):
        raise ValueError(
            f"Argument {name} is expected to be of type '{var_type.__name__}' and not "
            f"'{type(var).__name__}'"
        )


def _check_type_or_none(var_type: Any, var: Any, name: str) -> None:
    if var is not None and not isinstance(var, var_type):
        raise ValueError(
            f"Argument {name} is expected to be either None or of type '{var_type.__name__}'"
        )


if TYPE_CHECKING:  # typing.ParamSpec is 3.10+; the package runs on 3.9
    from typing_extensions import ParamSpec

    _P = ParamSpec("_P")
_R = TypeVar("_R")


def official_errors(call: Callable[_P, _R]) -> Callable[_P, _R]:
    """``call`` raising the official exception for a streamwire error (for the calls that
    are not hot paths: the receive and send paths translate inline, without the extra frame)."""

    @functools.wraps(call)
    def translated(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return call(*args, **kwargs)
        except StreamwireError as e:
            _raise(e)

    return translated
