"""TLS and token authentication for :class:`~tests.peers.apache_cluster.ApacheCluster`
(``secured=True``): the settings a production cluster behind a Pulsar proxy has.

The PKI and the JWTs come from :mod:`tests.peers.secure` (the single secure standalone's
helpers): a test CA whose server certificate names ``broker.streamwire.test`` and
``IP:127.0.0.1`` (used by every broker and by the proxy), and HS256 tokens signed with a
random secret that brokers and proxy share (``tokenSecretKey``).

Roles:

* ``admin`` -- super-user; the brokers' own client (``brokerClientAuthentication*``) and the
  admin calls of the fixture use it;
* ``proxy`` -- the proxy's role towards the brokers. It is a super-user *and* in the brokers'
  ``proxyRoles``: a broker then demands the client's original principal (which the proxy
  forwards, ``forwardAuthorizationCredentials``) and authorizes *that* role, so a client
  without permission is refused through the proxy as it would be directly;
* any other role has the permissions a test grants it.

Brokers: ``brokerServicePortTls`` / ``webServicePortTls`` beside the plain ports (plain ports
stay open, but every port demands a token), the ``internal`` listener advertises both
``pulsar://`` and ``pulsar+ssl://``. The proxy: ``servicePortTls`` / ``webServicePortTls``,
authenticates clients with the same token provider and talks TLS to the brokers
(``tlsEnabledWithBroker``), so a client on ``pulsar+ssl://proxy`` asks for the brokers' TLS
addresses in CONNECT and the proxy dials those.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from pathlib import Path

from .secure import Pki, hs256_jwt, make_pki

__all__ = ["ADMIN_ROLE", "PROXY_ROLE", "ClusterSecurity"]

ADMIN_ROLE = "admin"
PROXY_ROLE = "proxy"
TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"


@dataclass
class ClusterSecurity:
    """The PKI, the signing secret and the configuration keys of a secured cluster."""

    pki: Pki
    secret: bytes = field(repr=False)

    @classmethod
    def make(cls, dirpath: Path) -> ClusterSecurity:
        return cls(make_pki(dirpath), os.urandom(32))

    def token(self, role: str, *, expires_in: float | None = None) -> str:
        """A JWT for ``role`` (``exp`` = now + ``expires_in`` seconds when given)."""
        return hs256_jwt(self.secret, role, expires_in=expires_in)

    @property
    def admin_token(self) -> str:
        return self.token(ADMIN_ROLE)

    def _tls_files(self) -> dict[str, str]:
        return {
            "tlsCertificateFilePath": str(self.pki.server_cert),
            "tlsKeyFilePath": str(self.pki.server_key),
            "tlsTrustCertsFilePath": str(self.pki.ca),
            "tlsRequireTrustedClientCertOnConnect": "false",
        }

    def _token_auth(self) -> dict[str, str]:
        return {
            "authenticationEnabled": "true",
            "authenticationProviders": TOKEN_PROVIDER,
            "tokenSecretKey": "data:;base64," + base64.b64encode(self.secret).decode(),
        }

    def broker_conf(self, tls_port: int, web_tls_port: int) -> dict[str, str]:
        """Keys added to a broker's configuration (the listeners are the cluster's concern)."""
        return {
            "brokerServicePortTls": str(tls_port),
            "webServicePortTls": str(web_tls_port),
            **self._tls_files(),
            **self._token_auth(),
            "authorizationEnabled": "true",
            "superUserRoles": f"{ADMIN_ROLE},{PROXY_ROLE}",
            # A connection authenticated as the proxy must name the client's role, and the
            # broker authorizes that role (not the proxy's) for each topic operation.
            "proxyRoles": PROXY_ROLE,
            # The broker's own client (system topics, transaction buffers, other brokers).
            "brokerClientAuthenticationPlugin": TOKEN_PLUGIN,
            "brokerClientAuthenticationParameters": f"token:{self.admin_token}",
        }

    def proxy_conf(self, tls_port: int, web_tls_port: int) -> dict[str, str]:
        """Keys added to the proxy's configuration."""
        return {
            "servicePortTls": str(tls_port),
            "webServicePortTls": str(web_tls_port),
            **self._tls_files(),
            **self._token_auth(),
            # The brokers authorize; the proxy only authenticates and forwards the role.
            "authorizationEnabled": "false",
            "superUserRoles": ADMIN_ROLE,
            "forwardAuthorizationCredentials": "true",
            "brokerClientAuthenticationPlugin": TOKEN_PLUGIN,
            "brokerClientAuthenticationParameters": f"token:{self.token(PROXY_ROLE)}",
            # TLS between proxy and brokers too, verified against the test CA.
            "tlsEnabledWithBroker": "true",
            "brokerClientTrustCertsFilePath": str(self.pki.ca),
            # Off: Java checks the name its resolver gives 127.0.0.1 ("localhost"), which the
            # test certificate deliberately does not name; the chain is still verified.
            "tlsHostnameVerificationEnabled": "false",
        }
