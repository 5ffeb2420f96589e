"""Authentication helpers for :class:`streamwire.Client`'s ``auth=`` plug-in point.

Any object with a ``method_name`` attribute (the Pulsar authentication method, as the broker's
provider names it) and a ``get_data()`` method returning ``bytes`` (or ``str``) can be passed as
``Client(..., auth=obj)``. ``get_data()`` is called for every new broker connection and again
whenever the broker sends an authentication challenge, so it may return fresh credentials.
It runs on an engine thread, briefly holding the interpreter; it should not block for long.

Tokens do not need a plug-in: ``Client(auth_token="...")`` takes a string or a callable that
returns one, and ``Client(auth_token_file=path)`` re-reads the file on every use.

OAuth 2.0 client credentials: ``Client(auth=AuthOauth2(issuer_url, private_key=...))``
(:mod:`streamwire.oauth2`).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from streamwire.oauth2 import AuthOauth2

__all__ = ["AuthBasic", "AuthOauth2", "AuthPlugin", "AuthTls"]


@runtime_checkable
class AuthPlugin(Protocol):
    """What ``Client(auth=...)`` accepts."""

    @property
    def method_name(self) -> str:
        """The Pulsar authentication method name, as the broker's provider names it."""
        ...

    def get_data(self) -> bytes | str:
        """The credentials to send (on every new connection and every auth challenge)."""
        ...


class AuthBasic:
    """Pulsar's basic authentication (broker side: ``AuthenticationProviderBasic``).

    Args:
        user: the user name (non-empty, without ``:``; else ``ValueError``).
        password: the password (never shown by ``repr``).
    """

    __slots__ = ("_password", "_user")

    def __init__(self, user: str, password: str) -> None:
        if not user or ":" in user:
            raise ValueError("AuthBasic: user must be non-empty and must not contain ':'")
        self._user = user
        self._password = password

    @property
    def method_name(self) -> str:
        """``"basic"``."""
        return "basic"

    @property
    def user(self) -> str:
        """The user name."""
        return self._user

    def get_data(self) -> bytes:
        """``user:password`` as UTF-8 bytes."""
        return f"{self._user}:{self._password}".encode()

    def __repr__(self) -> str:
        return f"AuthBasic(user={self._user!r}, password=<redacted>)"

    def __reduce__(self) -> tuple[type[AuthBasic], tuple[str, str]]:
        return (AuthBasic, (self._user, self._password))


class AuthTls:
    """Authenticate as the role named by the client certificate (``tls_cert_file``/
    ``tls_key_file``); broker side: ``AuthenticationProviderTls``. Sends no data itself."""

    __slots__ = ()

    @property
    def method_name(self) -> str:
        """``"tls"``."""
        return "tls"

    def get_data(self) -> bytes:
        """Empty bytes: the role comes from the client certificate."""
        return b""

    def __repr__(self) -> str:
        return "AuthTls()"
