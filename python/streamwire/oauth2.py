"""OAuth 2.0 client credentials for Pulsar (``Client(auth=AuthOauth2(...))``).

The flow is the one the official clients implement as ``AuthenticationOauth2``: the issuer's
metadata document (``<issuer>/.well-known/openid-configuration`` by default) names the token
endpoint; the client POSTs ``grant_type=client_credentials`` with its id and secret (and the
optional ``audience`` and ``scope``) as a form, and sends the ``access_token`` it gets back to
the broker with the ``token`` authentication method, where ``AuthenticationProviderToken`` (or
an OpenID provider) validates it.

Why in Python and not in the engine: the engine calls ``get_data()`` for every new connection
and every authentication challenge, so a plug-in object is all the engine needs; the token
exchange is one small HTTPS request every token lifetime, which the standard library does well,
and keeping it here adds no HTTP client to the Rust core.

Refresh: a token is reused until ``expiry_adjustment`` (default 0.9, as the Java client's) of its
``expires_in`` has passed, then the next ``get_data()`` fetches a new one. A broker challenge
arrives when the broker sees the old token expire, by which time the cached one is past 90 % of
its life, so the answer to the challenge is a fresh token on the same connection. Nothing runs
in the background (no thread to survive a ``fork``).
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from streamwire.exceptions import AuthenticationError, ConfigError

__all__ = ["AuthOauth2"]

#: Where the issuer's metadata is, relative to the issuer URL (RFC 8414 / OpenID Discovery).
DEFAULT_METADATA_PATH = "/.well-known/openid-configuration"


def _read_key_file(private_key: str) -> dict[str, Any]:
    """The credentials JSON named by ``private_key``: a path, a ``file://`` URL or a
    ``data:application/json[;base64],...`` URL (the forms the official clients accept)."""
    if private_key.startswith("data:"):
        head, _, body = private_key[5:].partition(",")
        media, *params = head.split(";")
        if media and media != "application/json":
            raise ConfigError(f"AuthOauth2: unsupported media type in private_key: {media!r}")
        raw = base64.b64decode(body) if "base64" in params else urllib.parse.unquote(body).encode()
        text = raw.decode("utf-8")
    else:
        path = private_key
        if private_key.startswith("file://"):
            path = urllib.parse.unquote(urllib.parse.urlparse(private_key).path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"AuthOauth2: cannot read private_key file {path!r}: {exc}") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"AuthOauth2: private_key is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError("AuthOauth2: private_key must hold a JSON object")
    return data


class AuthOauth2:
    """OAuth 2.0 client credentials (broker side: ``AuthenticationProviderToken`` or an OpenID
    provider validating the issuer's tokens).

    Args:
        issuer_url: the authorization server's issuer URL (``https://`` or ``http://``).
        private_key: a credentials file holding ``client_id`` and ``client_secret`` (JSON), as a
            path, ``file://`` URL or ``data:application/json;base64,...`` URL. Read on every
            token fetch, so a rotated file is picked up. Give this or ``client_id`` +
            ``client_secret``.
        client_id, client_secret: the credentials themselves.
        audience, scope: sent with the token request when given.
        tls_trust_certs_file: a CA bundle for an ``https://`` issuer (default: the system's).
        metadata_path: where the metadata document is, relative to ``issuer_url``.
        timeout: seconds for each HTTP request to the issuer.
        expiry_adjustment: the share of a token's lifetime after which it is refreshed (0 < x
            <= 1; 1 refreshes only once it has expired).

    Errors: bad arguments are a ``ConfigError`` when the object is made; an issuer that cannot
    be reached or refuses the credentials is an ``AuthenticationError`` raised by
    ``get_data()`` (and so by the ``Client`` call that needed a connection). The secret never
    appears in a ``repr`` or an error message.
    """

    __slots__ = (
        "_audience",
        "_cached",
        "_client_id",
        "_client_secret",
        "_expiry_adjustment",
        "_issuer_url",
        "_lock",
        "_metadata_path",
        "_private_key",
        "_scope",
        "_timeout",
        "_token_endpoint",
        "_trust",
        "fetches",
    )

    def __init__(
        self,
        issuer_url: str,
        *,
        private_key: Optional[str] = None,
        client_id: Optional[str] = None,
        client_secret: Optional[str] = None,
        audience: Optional[str] = None,
        scope: Optional[str] = None,
        tls_trust_certs_file: Optional[str] = None,
        metadata_path: str = DEFAULT_METADATA_PATH,
        timeout: float = 10.0,
        expiry_adjustment: float = 0.9,
    ) -> None:
        if not isinstance(issuer_url, str) or urllib.parse.urlparse(issuer_url).scheme not in (
            "http",
            "https",
        ):
            raise ConfigError(f"AuthOauth2: issuer_url must be an http(s) URL, got {issuer_url!r}")
        if private_key is None and (not client_id or client_secret is None):
            raise ConfigError("AuthOauth2: give private_key, or client_id and client_secret")
        if private_key is not None and (client_id is not None or client_secret is not None):
            raise ConfigError("AuthOauth2: give private_key or client_id/client_secret, not both")
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ConfigError(f"AuthOauth2: timeout must be > 0 seconds, got {timeout!r}")
        if not (isinstance(expiry_adjustment, (int, float)) and 0 < expiry_adjustment <= 1):
            raise ConfigError(
                f"AuthOauth2: expiry_adjustment must be in (0, 1], got {expiry_adjustment!r}"
            )
        if tls_trust_certs_file is not None and not Path(tls_trust_certs_file).is_file():
            raise ConfigError(f"AuthOauth2: no CA bundle at {tls_trust_certs_file!r}")
        self._issuer_url = issuer_url.rstrip("/")
        self._private_key = private_key
        self._client_id = client_id
        self._client_secret = client_secret
        self._audience = audience
        self._scope = scope
        self._trust = tls_trust_certs_file
        self._metadata_path = metadata_path
        self._timeout = float(timeout)
        self._expiry_adjustment = float(expiry_adjustment)
        self._lock = threading.Lock()
        self._token_endpoint: Optional[str] = None
        # (token, monotonic time after which it is refreshed)
        self._cached: Optional[tuple[str, float]] = None
        #: How many tokens were fetched from the issuer (for tests and monitoring).
        self.fetches = 0

    @classmethod
    def from_params(cls, params: str | Mapping[str, str]) -> AuthOauth2:
        """Build from the official clients' parameters.

        ``params``: a JSON string or mapping with ``issuer_url``/``issuerUrl``,
        ``private_key``/``privateKey``, ``audience``, ``scope``, and optionally
        ``client_id``/``client_secret`` (as the C++/Python client takes them)."""
        if isinstance(params, str):
            try:
                loaded = json.loads(params)
            except ValueError as exc:
                raise ConfigError(f"AuthOauth2: parameters are not JSON: {exc}") from exc
            if not isinstance(loaded, dict):
                raise ConfigError("AuthOauth2: parameters must be a JSON object")
            params = loaded
        kind = params.get("type", "client_credentials")
        if kind != "client_credentials":
            raise ConfigError(f"AuthOauth2: unsupported type {kind!r} (client_credentials only)")

        def pick(*names: str) -> Optional[str]:
            for name in names:
                value = params.get(name)
                if value:
                    return str(value)
            return None

        issuer = pick("issuer_url", "issuerUrl")
        if issuer is None:
            raise ConfigError("AuthOauth2: parameters lack issuer_url")
        return cls(
            issuer,
            private_key=pick("private_key", "privateKey"),
            client_id=pick("client_id", "clientId"),
            client_secret=pick("client_secret", "clientSecret"),
            audience=pick("audience"),
            scope=pick("scope"),
            tls_trust_certs_file=pick("tls_trust_certs_file", "trustCertsFilePath"),
            metadata_path=pick("well_known_metadata_path", "wellKnownMetadataPath")
            or DEFAULT_METADATA_PATH,
        )

    @property
    def method_name(self) -> str:
        """``"token"``: the broker sees an ordinary token."""
        return "token"

    @property
    def issuer_url(self) -> str:
        """The issuer URL."""
        return self._issuer_url

    def get_data(self) -> bytes:
        """A valid access token, fetched from the issuer when none is cached or the cached one
        is past ``expiry_adjustment`` of its lifetime. Thread-safe."""
        with self._lock:
            cached = self._cached
            if cached is not None and time.monotonic() < cached[1]:
                return cached[0].encode()
            token, lifetime = self._fetch()
            self.fetches += 1
            refresh_at = time.monotonic() + lifetime * self._expiry_adjustment
            self._cached = (token, refresh_at)
            return token.encode()

    def invalidate(self) -> None:
        """Forget the cached token: the next ``get_data()`` fetches a new one."""
        with self._lock:
            self._cached = None

    # -- HTTP ------------------------------------------------------------------------------
    def _context(self) -> Optional[ssl.SSLContext]:
        if not self._issuer_url.startswith("https"):
            return None
        return ssl.create_default_context(cafile=self._trust)

    def _request(self, req: urllib.request.Request, what: str) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(req, timeout=self._timeout, context=self._context()) as r:
                body = r.read()
        except urllib.error.HTTPError as exc:
            detail = ""
            try:
                err = json.loads(exc.read() or b"{}")
                if isinstance(err, dict) and err.get("error"):
                    detail = f": {err.get('error')}"
                    if err.get("error_description"):
                        detail += f" ({err['error_description']})"
            except ValueError:
                pass
            raise AuthenticationError(
                f"OAuth2 {what} at {req.full_url} answered HTTP {exc.code}{detail}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise AuthenticationError(f"OAuth2 {what} at {req.full_url} failed: {reason}") from None
        try:
            data = json.loads(body)
        except ValueError:
            raise AuthenticationError(f"OAuth2 {what} at {req.full_url}: not JSON") from None
        if not isinstance(data, dict):
            raise AuthenticationError(f"OAuth2 {what} at {req.full_url}: not a JSON object")
        return data

    def _endpoint(self) -> str:
        if self._token_endpoint is None:
            url = self._issuer_url + self._metadata_path
            meta = self._request(
                urllib.request.Request(url, headers={"Accept": "application/json"}),
                "metadata request",
            )
            endpoint = meta.get("token_endpoint")
            if not isinstance(endpoint, str) or not endpoint:
                raise AuthenticationError(f"OAuth2 metadata at {url} names no token_endpoint")
            self._token_endpoint = endpoint
        return self._token_endpoint

    def _credentials(self) -> tuple[str, str]:
        if self._private_key is None:
            assert self._client_id is not None and self._client_secret is not None
            return self._client_id, self._client_secret
        try:
            data = _read_key_file(self._private_key)
        except ConfigError as exc:
            # At fetch time a bad file is a failure to authenticate (the file may be rotated).
            raise AuthenticationError(str(exc)) from None
        cid, secret = data.get("client_id"), data.get("client_secret")
        if not isinstance(cid, str) or not isinstance(secret, str):
            raise AuthenticationError(
                "AuthOauth2: the private_key file lacks client_id or client_secret"
            )
        return cid, secret

    def _fetch(self) -> tuple[str, float]:
        cid, secret = self._credentials()
        form = {"grant_type": "client_credentials", "client_id": cid, "client_secret": secret}
        if self._audience:
            form["audience"] = self._audience
        if self._scope:
            form["scope"] = self._scope
        req = urllib.request.Request(
            self._endpoint(),
            data=urllib.parse.urlencode(form).encode(),
            headers={
                "Accept": "application/json",
                "Content-Type": "application/x-www-form-urlencoded",
            },
            method="POST",
        )
        answer = self._request(req, "token request")
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            raise AuthenticationError(f"OAuth2 token endpoint {req.full_url} sent no access_token")
        expires_in = answer.get("expires_in")
        # No expires_in: the token does not expire as far as the issuer says; refresh hourly.
        lifetime = float(expires_in) if isinstance(expires_in, (int, float)) else 3600.0
        return token, max(lifetime, 0.0)

    def __repr__(self) -> str:
        who = self._client_id if self._private_key is None else self._private_key
        if who is not None and who.startswith("data:"):
            who = "data:<redacted>"
        return f"AuthOauth2(issuer_url={self._issuer_url!r}, credentials={who!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled for Spark executors: settings only, no cached token or lock.
        return (
            _rebuild,
            (
                self._issuer_url,
                {
                    "private_key": self._private_key,
                    "client_id": self._client_id,
                    "client_secret": self._client_secret,
                    "audience": self._audience,
                    "scope": self._scope,
                    "tls_trust_certs_file": self._trust,
                    "metadata_path": self._metadata_path,
                    "timeout": self._timeout,
                    "expiry_adjustment": self._expiry_adjustment,
                },
            ),
        )


def _rebuild(issuer_url: str, kwargs: dict[str, Any]) -> AuthOauth2:
    return AuthOauth2(issuer_url, **kwargs)
