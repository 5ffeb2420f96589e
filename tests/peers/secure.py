"""Test PKI, JWTs and a TLS + authentication + authorization Apache Pulsar for security tests.

* :func:`make_pki`: a throwaway CA (``openssl`` CLI), a broker certificate valid for
  ``broker.streamwire.test`` and ``IP:127.0.0.1`` (deliberately *not* ``localhost``, so dialling
  ``localhost`` is a hostname mismatch), a client certificate for mutual TLS (CN = its role) and
  a second, unrelated CA for "wrong CA" tests.
* :func:`hs256_jwt`: HS256 tokens made with ``hmac``/``base64`` (no dependency), as Pulsar's
  ``AuthenticationProviderToken`` verifies them with ``tokenSecretKey``.
* :class:`SecurePulsar`: an :class:`~tests.peers.apache.ApachePulsar` with a TLS broker port,
  token, TLS and basic authentication, authorization (super-user ``admin``), and a short
  ``authenticationRefreshCheckSeconds`` so expiring tokens are challenged within a second.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .admin import PulsarAdmin
from .apache import ApachePulsar
from .util import LOOPBACK, free_ports

__all__ = ["BASIC_PASSWORD", "BASIC_USER", "Pki", "SecurePulsar", "hs256_jwt", "make_pki"]

BROKER_DNS_NAME = "broker.streamwire.test"
CLIENT_CERT_ROLE = "tls-client-role"
BASIC_USER = "basic-user"
BASIC_PASSWORD = "basic-Secret-pw-123"


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    #: An unrelated CA (and nothing it signed is used): the "wrong CA" bundle.
    other_ca: Path


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise RuntimeError("the openssl CLI is needed for TLS tests (apt-get install openssl)")
    proc = subprocess.run(
        [exe, *args], cwd=str(cwd), capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    if proc.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args[:2])} failed:\n{proc.stderr[-2000:]}")


def _ca(dirpath: Path, name: str, cn: str) -> tuple[Path, Path]:
    key, cert = dirpath / f"{name}.key", dirpath / f"{name}.pem"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "3",
        "-keyout", str(key), "-out", str(cert), "-subj", f"/CN={cn}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=dirpath,
    )  # fmt: skip
    return cert, key


def _leaf(
    dirpath: Path, name: str, cn: str, ca: tuple[Path, Path], extensions: str
) -> tuple[Path, Path]:
    key, csr, cert = dirpath / f"{name}.key", dirpath / f"{name}.csr", dirpath / f"{name}.pem"
    ext = dirpath / f"{name}.ext"
    ext.write_text(extensions)
    _openssl(
        "req", "-new", "-newkey", "rsa:2048", "-nodes", "-sha256",
        "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={cn}",
        cwd=dirpath,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca[0]), "-CAkey", str(ca[1]),
        "-CAcreateserial", "-sha256", "-days", "3", "-out", str(cert), "-extfile", str(ext),
        cwd=dirpath,
    )  # fmt: skip
    return cert, key


def make_pki(dirpath: Path) -> Pki:
    dirpath.mkdir(parents=True, exist_ok=True)
    ca = _ca(dirpath, "ca", "streamwire test CA")
    server = _leaf(
        dirpath,
        "server",
        BROKER_DNS_NAME,
        ca,
        f"subjectAltName=DNS:{BROKER_DNS_NAME},IP:{LOOPBACK}\n"
        "basicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n",
    )
    client = _leaf(
        dirpath,
        "client",
        CLIENT_CERT_ROLE,
        ca,
        "basicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=clientAuth\n",
    )
    other_ca, _ = _ca(dirpath, "other-ca", "unrelated CA")
    return Pki(ca[0], server[0], server[1], client[0], client[1], other_ca)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256_jwt(secret: bytes, subject: str, *, expires_in: float | None = None) -> str:
    """A signed JWT with ``sub`` = role and, if given, ``exp`` = now + ``expires_in`` seconds."""
    header = {"alg": "HS256", "typ": "JWT"}
    claims: dict[str, object] = {"sub": subject}
    if expires_in is not None:
        claims["exp"] = int(time.time() + expires_in)
    signing_input = (
        _b64url(json.dumps(header, separators=(",", ":")).encode())
        + "."
        + _b64url(json.dumps(claims, separators=(",", ":")).encode())
    )
    sig = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + _b64url(sig)


def _apr1_hash(password: str, dirpath: Path) -> str:
    exe = shutil.which("openssl")
    assert exe is not None
    out = subprocess.run(
        [exe, "passwd", "-apr1", "-salt", "swtest12", password],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(dirpath),
    )
    return out.stdout.strip()


class SecurePulsar:
    """Apache Pulsar with TLS on a second broker port, token/TLS/basic authentication on and
    authorization on (``admin`` is the super-user; other roles get namespace grants)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.pki = make_pki(workdir / "pki")
        self.secret = os.urandom(32)
        self.admin_token = hs256_jwt(self.secret, "admin")
        self.tls_port, self.web_tls_port = free_ports(2)
        basic_file = workdir / "basic.htpasswd"
        basic_file.write_text(f"{BASIC_USER}:{_apr1_hash(BASIC_PASSWORD, workdir)}\n")
        providers = ",".join(
            "org.apache.pulsar.broker.authentication." + p
            for p in (
                "AuthenticationProviderToken",
                "AuthenticationProviderTls",
                "AuthenticationProviderBasic",
            )
        )
        extra = {
            "brokerServicePortTls": str(self.tls_port),
            # HTTPS for the admin API and REST lookups, with the same certificate.
            "webServicePortTls": str(self.web_tls_port),
            "tlsCertificateFilePath": str(self.pki.server_cert),
            "tlsKeyFilePath": str(self.pki.server_key),
            "tlsTrustCertsFilePath": str(self.pki.ca),
            "tlsRequireTrustedClientCertOnConnect": "false",
            "authenticationEnabled": "true",
            "authenticationProviders": providers,
            "authenticationRefreshCheckSeconds": "1",
            "tokenSecretKey": "data:;base64," + base64.b64encode(self.secret).decode(),
            "basicAuthConf": f"file:{basic_file}",
            "authorizationEnabled": "true",
            "superUserRoles": "admin",
            "brokerClientAuthenticationPlugin": (
                "org.apache.pulsar.client.impl.auth.AuthenticationToken"
            ),
            "brokerClientAuthenticationParameters": f"token:{self.admin_token}",
            # Transactions add system topics and clients; not needed here.
            "transactionCoordinatorEnabled": "false",
        }
        self.broker = ApachePulsar(
            transactions=False,
            extra_conf=extra,
            workdir=workdir / "broker",
            admin_token=self.admin_token,
        )

    @property
    def tls_url(self) -> str:
        return f"pulsar+ssl://{LOOPBACK}:{self.tls_port}"

    @property
    def web_url(self) -> str:
        """The broker's plain HTTP port (REST lookups, admin API)."""
        return self.broker.admin_url

    @property
    def web_tls_url(self) -> str:
        return f"https://{LOOPBACK}:{self.web_tls_port}"

    @property
    def plain_url(self) -> str:
        return self.broker.service_url

    def token(self, role: str, *, expires_in: float | None = None) -> str:
        return hs256_jwt(self.secret, role, expires_in=expires_in)

    def admin(self) -> PulsarAdmin:
        return self.broker.admin()

    def granted(self, grants: dict[str, list[str]]) -> SecurePulsar:
        """This broker, once each role in ``grants`` has its actions on the namespace."""
        admin = self.admin()
        for role, actions in grants.items():
            admin.grant_namespace_permission(role, actions)
        return self

    def start(self) -> SecurePulsar:
        self.broker.start()
        return self

    def close(self) -> None:
        self.broker.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self, lines: int = 80) -> str:
        return self.broker.log_tail(lines)

    def __repr__(self) -> str:
        return f"SecurePulsar(tls_url={self.tls_url!r}, plain_url={self.plain_url!r})"
