"""The official client's authentication classes, each turned into the options of a
:class:`streamwire.Client` (``auth_token=``, ``auth=``, ``tls_cert_file=``, ...).

The official classes load C++ plug-ins; these hold the same parameters and say which
streamwire option carries them (``client_options``). Classes with no streamwire equivalent
(Athenz, a plug-in shared library) raise ``NotImplementedError`` naming what is missing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Optional, Union

from streamwire.auth import AuthBasic, AuthTls
from streamwire.oauth2 import AuthOauth2

__all__ = [
    "Authentication",
    "AuthenticationAthenz",
    "AuthenticationBasic",
    "AuthenticationOauth2",
    "AuthenticationTLS",
    "AuthenticationToken",
]


def _check_str(value: object, name: str) -> str:
    # The official classes refuse a non-str argument with ValueError (its _check_type).
    if not isinstance(value, str):
        raise ValueError(
            f"Argument {name} is expected to be of type 'str' and not '{type(value).__name__}'"
        )
    return value


class Authentication:
    """Base class (the official one loads an authentication plug-in from a shared library,
    ``dynamicLibPath``, with its ``authParamsString``; streamwire has no C++ plug-ins, so this
    raises ``NotImplementedError``)."""

    def __init__(self, dynamicLibPath: str, authParamsString: str) -> None:
        raise NotImplementedError(
            "streamwire.compat: authentication from a plug-in shared library is not supported; "
            "use AuthenticationToken/TLS/Basic/Oauth2 or streamwire.Client(auth=plugin)"
        )

    def client_options(self) -> dict[str, Any]:
        """The keyword arguments of :class:`streamwire.Client` that carry this method."""
        raise NotImplementedError


class _Basic(AuthBasic):
    # The official AuthenticationBasic takes a method name other than "basic" too.
    __slots__ = ("_method",)

    def __init__(self, user: str, password: str, method: str) -> None:
        super().__init__(user, password)
        self._method = method

    @property
    def method_name(self) -> str:
        return self._method


class AuthenticationToken(Authentication):
    """Token authentication: a token string, or a function returning one (called for each
    new connection and each broker challenge) -> ``streamwire.Client(auth_token=...)``."""

    def __init__(self, token: Union[str, Callable[[], str]]) -> None:
        if not (isinstance(token, str) or callable(token)):
            raise ValueError(
                "Argument token is expected to be of type 'str' or a function returning 'str'"
            )
        self._token = token

    def client_options(self) -> dict[str, Any]:
        return {"auth_token": self._token}


class AuthenticationTLS(Authentication):
    """TLS authentication (the role of the client certificate) -> ``auth=AuthTls()`` with
    ``tls_cert_file`` / ``tls_key_file``.

    Args:
        certificate_path: the client certificate (PEM).
        private_key_path: its private key (PEM).
    """

    def __init__(self, certificate_path: str, private_key_path: str) -> None:
        self._cert = _check_str(certificate_path, "certificate_path")
        self._key = _check_str(private_key_path, "private_key_path")

    def client_options(self) -> dict[str, Any]:
        return {"auth": AuthTls(), "tls_cert_file": self._cert, "tls_key_file": self._key}


class AuthenticationBasic(Authentication):
    """Basic authentication -> ``auth=streamwire.AuthBasic(user, password)``.

    Args:
        username: the user.
        password: the password.
        method: the authentication method name the broker's provider expects.
        auth_params_string: instead, JSON with ``username``, ``password`` and optionally
            ``method``.
    """

    def __init__(
        self,
        username: Optional[str] = None,
        password: Optional[str] = None,
        method: str = "basic",
        auth_params_string: Optional[str] = None,
    ) -> None:
        if auth_params_string is not None:
            params = json.loads(_check_str(auth_params_string, "auth_params_string"))
            username, password = params.get("username"), params.get("password")
            method = params.get("method", "basic")
        self._auth = _Basic(
            _check_str(username, "username"),
            _check_str(password, "password"),
            _check_str(method, "method"),
        )

    def client_options(self) -> dict[str, Any]:
        return {"auth": self._auth}


class AuthenticationOauth2(Authentication):
    """OAuth 2.0 client credentials from the official JSON parameters,
    ``auth_params_string`` (``issuer_url``, ``private_key``, ``audience``, ``scope``) ->
    ``auth=streamwire.AuthOauth2(...)``."""

    def __init__(self, auth_params_string: str) -> None:
        try:
            params = json.loads(_check_str(auth_params_string, "auth_params_string"))
        except json.JSONDecodeError as e:
            raise ValueError(f"auth_params_string is not JSON: {e}") from None
        if not isinstance(params, dict) or "issuer_url" not in params:
            raise ValueError("auth_params_string must be a JSON object with an issuer_url")
        self._auth = AuthOauth2(
            params["issuer_url"],
            private_key=params.get("private_key"),
            audience=params.get("audience"),
            scope=params.get("scope"),
        )

    def client_options(self) -> dict[str, Any]:
        return {"auth": self._auth}


class AuthenticationAthenz(Authentication):
    """Athenz authentication: not supported by streamwire (``NotImplementedError`` whatever
    ``auth_params_string`` is)."""

    def __init__(self, auth_params_string: str) -> None:
        raise NotImplementedError("streamwire.compat: Athenz authentication is not supported")
