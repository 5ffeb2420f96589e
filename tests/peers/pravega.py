"""Pravega 0.13.0 standalone (``io.pravega.local.LocalPravegaEmulator``), assembled from Maven
Central on first use, on free loopback ports (the recipe and its pitfalls:
shared/design/PRAVEGA.md; the dependency pins: ``pravega_conf/pom.xml``).

Ready means the controller answers an RPC (a scope created through the official client when
it is installed, else the controller port accepting): the emulator logs "Sandbox is running"
even when its controller died. The segment store publishes 127.0.0.1 as its address.

Volumes. Out of the box the emulator keeps tier 2 (long-term storage) in memory behind a
128 MiB cache (``InProcPravegaCluster`` hard-codes ``cache.size.max``): a run writing a few
hundred MB fails in the store with ``CacheFullException: DirectMemoryCache full``. This
fixture overrides the segment store's settings by system properties (the emulator includes
``System.getProperties()`` after its own values, so they win):

- ``pravegaservice.storage.impl.name=FILESYSTEM`` with ``filesystem.root`` = ``tier2/`` in the
  fixture's workdir: tier 2 on disk (chunked storage, the layout the emulator already uses), so
  what is written is limited by the disk, not by the heap;
- ``pravegaservice.cache.size.max`` = ``cache`` bytes (default 512 MiB) and the JVM's
  ``-XX:MaxDirectMemorySize`` above it (the cache is direct memory, allocated as it fills);
- tier 1 (the durable log) stays in memory: it is truncated once tier 2 holds the data.

``tests/pravega/test_pravega_volume.py`` writes 640 MB through a 2-segment stream and reads it
back with every count checked (the old settings failed the same load after about 410 MB here;
a Spark job failed at ~130 MB with ``CacheFullException``).

TLS (``tls=True``): :func:`make_tls_files` makes a CA and a server certificate for
``localhost`` and ``127.0.0.1`` (``openssl``), the server's PKCS#8 key, a chain file (server
then CA), a JKS key store and a JKS trust store holding the CA (the JDK's ``keytool``) and a
password file; the ``singlenode.security.tls.*`` keys point at them (``certificate.location``
= the chain, ``privateKey.location``, ``keyStore.location``, ``keyStore.pwd.location``,
``trustStore.location``). The controller URL is then ``tls://`` and the segment store is
published as ``localhost``: the official client checks a DNS name, never an IP address, and
trusts the certificates in the directory ``$pravega_client_tls_cert_path`` names
(``tests/pravega/test_pravega_tls_peer.py``).

Auth (``auth=True``): the controller's password auth handler with an accounts file the fixture
writes (:func:`write_accounts`): one line per account, ``user:<digest>:<ACL>;``, the digest
being Pravega's ``StrongPasswordProcessor`` encoding (PBKDF2-HMAC-SHA256, 5000 iterations, a
32-byte salt, a 64-byte key; ``"5000:" + hex(salt) + ":" + hex(key)``, hex-encoded once more
as a whole), the ACL ``prn::*,READ_UPDATE`` (everything). ``singlenode.security.auth.*``
points at it, with the ``admin`` account as the standalone's own internal credentials. The
controller then wants ``authorization: Basic ...`` on every call and hands out delegation
tokens (JWTs signed with the key the emulator hard-codes, valid 600 s, also hard-coded in
0.13.0's ``InProcPravegaCluster``: a test cannot make them short-lived) that the segment
store checks. :data:`ACCOUNTS` lists the accounts and their passwords.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .apache import JAVA, _locked, cache_root, maven_classpath
from .process import OneProcessPeer, ServerProcess
from .proxy_process import ProxyProcess
from .util import LOOPBACK, free_ports, tcp_accepts

__all__ = ["ACCOUNTS", "PravegaError", "PravegaStandalone", "resolve_classpath"]

#: The accounts of a standalone started with ``auth=True``: user → password.
ACCOUNTS = {"admin": "1111_aaaa", "writer": "w-secret-2"}

HERE = Path(__file__).resolve().parent / "pravega_conf"
MAIN_CLASS = "io.pravega.local.LocalPravegaEmulator"


class PravegaError(RuntimeError):
    """Pravega standalone could not be assembled or did not start."""


def resolve_classpath() -> str:
    """The standalone's classpath, computed by Maven once and cached."""
    workdir = cache_root() / "pravega-0.13.0"
    cp_file = workdir / "classpath.txt"
    with _locked(cache_root() / ".resolve-pravega.lock"):
        if cp_file.exists():
            cp = cp_file.read_text().strip()
            if cp and all(os.path.isfile(j) for j in cp.split(os.pathsep)):
                return cp
        workdir.mkdir(parents=True, exist_ok=True)
        shutil.copy(HERE / "pom.xml", workdir / "pom.xml")
        return maven_classpath(workdir, PravegaError, "mvn build-classpath for Pravega")


class PravegaStandalone(OneProcessPeer):
    """One standalone Pravega (ZooKeeper, controller, segment store in one JVM)."""

    stop_timeout = 20.0

    def __init__(
        self,
        start_timeout: float = 120.0,
        *,
        proxy: bool = False,
        heap: str = "1g",
        cache: int = 512 * 1024 * 1024,
        tls: bool = False,
        auth: bool = False,
    ) -> None:
        #: The JVM's heap (tier 1, the durable log, is in memory until tier 2 holds the data).
        self.heap = heap
        #: The segment store's read/write cache, in bytes (direct memory).
        self.cache = cache
        #: With ``tls``, the controller and the segment store speak TLS only, with a
        #: certificate for ``localhost`` and ``127.0.0.1`` signed by the fixture's CA
        #: (``self.pki.ca``); see :func:`make_tls_files`.
        self.tls = tls
        self.pki: TlsFiles | None = None
        #: With ``auth``, the controller checks Basic credentials (:data:`ACCOUNTS`) and the
        #: segment store the delegation tokens the controller hands out.
        self.auth = auth
        self.zk_port, self.segment_port, self.controller_port, self.rest_port = free_ports(4)
        #: With ``proxy``, the segment store is published (what the controller tells clients)
        #: at a fault proxy in front of it, so tests can cut every client's data connections.
        #: The proxy runs in a process of its own: the official client blocks holding the
        #: interpreter lock, which would freeze a proxy thread in this process.
        self.proxy: ProxyProcess | None = None
        if proxy:
            self.proxy = ProxyProcess(LOOPBACK, self.segment_port)
        self._make_workdir(None, "streamwire-pravega-")
        self.start_timeout = start_timeout
        self.process = ServerProcess(
            "Pravega standalone",
            self.workdir / "console.log",
            error=PravegaError,
            extra_logs=[self.workdir / "standalone.log"],
        )

    @property
    def tier2(self) -> Path:
        """The directory holding tier 2 (long-term storage)."""
        return self.workdir / "tier2"

    @property
    def published_host(self) -> str:
        """The segment store host clients are told: 127.0.0.1, or ``localhost`` with TLS (the
        official client's TLS checks a DNS name and refuses an IP address)."""
        return "localhost" if self.tls else "127.0.0.1"

    @property
    def published_port(self) -> int:
        """The segment store port clients are told (the proxy's, when there is one)."""
        return self.proxy.port if self.proxy is not None else self.segment_port

    @property
    def controller_url(self) -> str:
        return f"{'tls' if self.tls else 'tcp'}://{LOOPBACK}:{self.controller_port}"

    def _ready(self) -> bool:
        if not tcp_accepts(LOOPBACK, self.controller_port):
            return False
        if self.pki is not None:
            # Both servers complete a TLS handshake checked against the fixture's CA.
            return all(
                tls_handshakes(p, self.pki.ca) for p in (self.controller_port, self.segment_port)
            )
        if self.auth:
            return tcp_accepts(LOOPBACK, self.segment_port)
        try:
            import pravega_client
        except ImportError:
            return True
        try:
            pravega_client.StreamManager(self.controller_url).create_scope("streamwire-probe")
            return True
        except Exception:
            return False

    def start(self) -> PravegaStandalone:
        classpath = resolve_classpath()
        conf = self.workdir / "standalone-config.properties"
        conf.write_text(
            "\n".join(
                [
                    f"singlenode.zk.port={self.zk_port}",
                    f"singlenode.segmentStore.port={self.segment_port}",
                    f"singlenode.controller.rpc.port={self.controller_port}",
                    f"singlenode.controller.rest.port={self.rest_port}",
                    "singlenode.controller.rest.enable=false",
                    *self._auth_lines(),
                    *self._tls_lines(),
                    "singlenode.metrics.enable=false",
                    "singlenode.admin.gateway.enable=false",
                    "",
                ]
            )
        )
        (self.workdir / "tmp").mkdir(exist_ok=True)
        tier2 = self.workdir / "tier2"
        tier2.mkdir(exist_ok=True)
        # The cache's buffers are direct memory; room above it for Netty's own buffers.
        direct = self.cache + 512 * 1024 * 1024
        argfile = self.workdir / "java.args"
        argfile.write_text(f'-cp "{classpath}"\n')
        cmd = [
            JAVA,
            "-Xms256m",
            f"-Xmx{self.heap}",
            f"-XX:MaxDirectMemorySize={direct}",
            f"-Djava.io.tmpdir={self.workdir / 'tmp'}",
            f"-Dsinglenode.configurationFile={conf}",
            f"-Dlogback.configurationFile={HERE / 'logback.xml'}",
            f"-Dpravega.log.file={self.workdir / 'standalone.log'}",
            f"-Dpravegaservice.service.published.host.nameOrIp={self.published_host}",
            f"-Dpravegaservice.service.published.port={self.published_port}",
            "-Dpravegaservice.storage.impl.name=FILESYSTEM",
            f"-Dfilesystem.root={tier2}",
            f"-Dpravegaservice.cache.size.max={self.cache}",
            f"@{argfile}",
            MAIN_CLASS,
        ]
        self.process.start(
            cmd, self._ready, timeout=self.start_timeout, cwd=self.workdir, interval=0.5
        )
        return self

    def _auth_lines(self) -> list[str]:
        if not self.auth:
            return ["singlenode.security.auth.enable=false"]
        accounts = self.workdir / "auth" / "passwd"
        write_accounts(accounts, ACCOUNTS)
        return [
            "singlenode.security.auth.enable=true",
            "singlenode.security.auth.credentials.username=admin",
            f"singlenode.security.auth.credentials.pwd={ACCOUNTS['admin']}",
            f"singlenode.security.auth.pwdAuthHandler.accountsDb.location={accounts}",
        ]

    def _tls_lines(self) -> list[str]:
        if not self.tls:
            return ["singlenode.security.tls.enable=false"]
        self.pki = make_tls_files(self.workdir / "tls")
        return [
            "singlenode.security.tls.enable=true",
            f"singlenode.security.tls.privateKey.location={self.pki.key}",
            f"singlenode.security.tls.certificate.location={self.pki.chain}",
            f"singlenode.security.tls.keyStore.location={self.pki.keystore}",
            f"singlenode.security.tls.keyStore.pwd.location={self.pki.password_file}",
            f"singlenode.security.tls.trustStore.location={self.pki.truststore}",
        ]

    def close(self) -> None:
        super().close()
        if self.proxy is not None:
            self.proxy.close()


# -- Auth --------------------------------------------------------------------------------------


def password_digest(password: str, salt: bytes) -> str:
    """Pravega's stored form of ``password`` (``StrongPasswordProcessor.encryptPassword``)."""
    key = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 5000, dklen=64)
    return f"5000:{salt.hex()}:{key.hex()}".encode().hex()


def write_accounts(path: Path, accounts: dict[str, str]) -> None:
    """The password auth handler's accounts file: every account may do everything."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            f"{user}:{password_digest(pw, os.urandom(32))}:prn::*,READ_UPDATE;\n"
            for user, pw in accounts.items()
        )
    )


# -- TLS ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TlsFiles:
    """What a TLS standalone reads, and what its clients trust."""

    #: The CA that signed the server certificate (clients trust it).
    ca: Path
    #: The server certificate then the CA's (PEM): the chain the servers send; the
    #: controller's own client to the segment store trusts it too.
    chain: Path
    #: The server's private key (PKCS#8 PEM, as Netty reads it).
    key: Path
    #: The same key and chain in a JKS key store (the REST server's), and its password file.
    keystore: Path
    password_file: Path
    #: A JKS trust store holding the CA (ZooKeeper's and the controller's Java clients).
    truststore: Path


#: The JKS stores' password (and the password file's content). The emulator opens the trust
#: store with the password file's content (its ZooKeeper server check) but also, when auth is
#: on, with ``singlenode.security.auth.credentials.pwd`` (ZooKeeper's TLS client; none when auth
#: is off): so both are the admin account's password. With two different passwords the store
#: comes up only after ZooKeeper's client has retried "Keystore was tampered with, or password
#: was incorrect" for ~45 s.
STORE_PASSWORD = ACCOUNTS["admin"]


def make_tls_files(dirpath: Path) -> TlsFiles:
    """A CA and a server certificate for ``localhost`` and ``127.0.0.1`` (``openssl``), and
    the JKS stores made from them with the JDK's ``keytool``."""
    from .secure import _ca, _leaf, _openssl

    dirpath.mkdir(parents=True, exist_ok=True)
    ca = _ca(dirpath, "ca", "streamwire Pravega test CA")
    cert, key = _leaf(
        dirpath,
        "server",
        "localhost",
        ca,
        f"subjectAltName=DNS:localhost,IP:{LOOPBACK}\n"
        "basicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth,clientAuth\n",
    )
    chain = dirpath / "server-chain.pem"
    chain.write_text(cert.read_text() + ca[0].read_text())
    password = STORE_PASSWORD
    password_file = dirpath / "password"
    password_file.write_text(password)
    p12 = dirpath / "server.p12"
    _openssl(
        "pkcs12", "-export", "-in", str(chain), "-inkey", str(key), "-name", "server",
        "-out", str(p12), "-passout", f"pass:{password}",
        cwd=dirpath,
    )  # fmt: skip
    keystore, truststore = dirpath / "server.jks", dirpath / "client.truststore.jks"
    keytool = str(Path(JAVA).with_name("keytool"))
    for args in (
        ["-importkeystore", "-srckeystore", str(p12), "-srcstoretype", "PKCS12",
         "-srcstorepass", password, "-destkeystore", str(keystore), "-deststoretype", "JKS",
         "-deststorepass", password, "-noprompt"],
        ["-importcert", "-noprompt", "-alias", "ca", "-file", str(ca[0]),
         "-keystore", str(truststore), "-storetype", "JKS", "-storepass", password],
    ):  # fmt: skip
        proc = subprocess.run(
            [keytool, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
        if proc.returncode != 0:
            raise PravegaError(f"keytool {args[0]} failed:\n{proc.stdout}{proc.stderr}")
    return TlsFiles(ca[0], chain, key, keystore, password_file, truststore)


def tls_handshakes(port: int, ca: Path) -> bool:
    """Whether ``127.0.0.1:port`` completes a TLS handshake with a certificate ``ca`` signed
    for 127.0.0.1."""
    import socket
    import ssl

    ctx = ssl.create_default_context(cafile=str(ca))
    try:
        with socket.create_connection((LOOPBACK, port), timeout=2.0) as raw:
            with ctx.wrap_socket(raw, server_hostname=LOOPBACK):
                return True
    except (OSError, ssl.SSLError):
        return False
