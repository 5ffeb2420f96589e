"""A small, real OAuth 2.0 authorization server for the security tests (loopback only).

It serves the two things a client-credentials client needs: the metadata document at
``/.well-known/openid-configuration`` (naming ``token_endpoint``), and ``POST /oauth/token``
taking a form-encoded ``grant_type=client_credentials`` request. A known ``client_id`` with its
``client_secret`` (and the configured ``audience``, when one is set) gets an HS256 JWT whose
``sub`` is the client's role, signed with the secret the Apache fixture's
``AuthenticationProviderToken`` trusts (``tokenSecretKey``), and ``expires_in``; anything else
gets the RFC 6749 error answer (400 ``unsupported_grant_type``/``invalid_request``, 401
``invalid_client``). Over HTTPS when given a certificate (the suite's test PKI).

Each request is recorded (``requests``), so tests can count token fetches and check what the
client sent.
"""

from __future__ import annotations

import json
import ssl
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional

from .util import LOOPBACK

__all__ = ["OAuth2Client", "OAuth2Server"]


@dataclass
class OAuth2Client:
    """A registered client: its secret and the role its tokens carry."""

    secret: str
    role: str


@dataclass
class _State:
    clients: dict[str, OAuth2Client]
    audience: Optional[str]
    lifetime: float
    mint: Callable[[str, float], str]
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the tests read `requests`

    def _send(self, status: int, body: dict[str, Any]) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        state = self.server.state
        with state.lock:
            state.requests.append({"method": "GET", "path": self.path})
        if self.path != "/.well-known/openid-configuration":
            self._send(404, {"error": "not_found"})
            return
        base = self.server.base_url
        self._send(200, {"issuer": base, "token_endpoint": base + "/oauth/token"})

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace")
        form = {k: v[0] for k, v in urllib.parse.parse_qs(raw, keep_blank_values=True).items()}
        with state.lock:
            state.requests.append(
                {
                    "method": "POST",
                    "path": self.path,
                    "content_type": self.headers.get("Content-Type"),
                    "form": form,
                }
            )
        if self.path != "/oauth/token":
            self._send(404, {"error": "not_found"})
            return
        if "application/x-www-form-urlencoded" not in (self.headers.get("Content-Type") or ""):
            self._send(400, {"error": "invalid_request", "error_description": "form expected"})
            return
        if form.get("grant_type") != "client_credentials":
            self._send(400, {"error": "unsupported_grant_type"})
            return
        client = state.clients.get(form.get("client_id", ""))
        if client is None or client.secret != form.get("client_secret"):
            self._send(401, {"error": "invalid_client", "error_description": "bad credentials"})
            return
        if state.audience is not None and form.get("audience") != state.audience:
            self._send(400, {"error": "invalid_request", "error_description": "wrong audience"})
            return
        token = state.mint(client.role, state.lifetime)
        self._send(
            200,
            {"access_token": token, "token_type": "Bearer", "expires_in": int(state.lifetime)},
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State
    base_url: str


class OAuth2Server:
    """Start with ``with OAuth2Server(mint, clients) as server: ...``; ``issuer_url`` is the
    issuer to give the client. ``mint(role, lifetime)`` returns a signed token."""

    def __init__(
        self,
        mint: Callable[[str, float], str],
        clients: dict[str, OAuth2Client],
        *,
        audience: Optional[str] = None,
        lifetime: float = 3600.0,
        tls: Optional[tuple[Path, Path]] = None,
    ) -> None:
        self._httpd = _Server((LOOPBACK, 0), _Handler)
        self._httpd.state = _State(dict(clients), audience, lifetime, mint)
        scheme = "http"
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(tls[0]), str(tls[1]))
            self._httpd.socket = ctx.wrap_socket(self._httpd.socket, server_side=True)
            scheme = "https"
        port = self._httpd.server_address[1]
        self._httpd.base_url = f"{scheme}://{LOOPBACK}:{port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="oauth2-server", daemon=True
        )

    @property
    def issuer_url(self) -> str:
        return self._httpd.base_url

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._httpd.state.lock:
            return list(self._httpd.state.requests)

    def token_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == "POST"]

    def set_lifetime(self, seconds: float) -> None:
        self._httpd.state.lifetime = seconds

    def __enter__(self) -> OAuth2Server:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
