"""A multi-broker Apache Pulsar cluster with a Pulsar proxy, assembled from Maven artifacts and
started on loopback ports: the production topology the single-node peers never exercise.

Five JVMs, all from the classpath :func:`tests.peers.apache.resolve_classpath` resolves for the
standalone (4.0.x), plus the proxy's jars:

1. ZooKeeper (``ZooKeeperServerMain``; tick 1 s so sessions may be short), the metadata store;
2. ``PulsarClusterMetadataSetup`` (one-shot): cluster ``test``, BookKeeper metadata,
   ``public/default`` with :data:`NAMESPACE_BUNDLES` bundles, transaction coordinators;
3. one bookie (``org.apache.bookkeeper.server.Main``);
4. two brokers (``PulsarBrokerStarter``), load manager on (bundles spread over both), dedup and
   transactions on, each with two advertised listeners: ``internal`` (its ``brokerServicePort``)
   and ``external`` (an extra bind address) on different ports;
5. the Pulsar proxy (``ProxyServiceStarter``). ``org.apache.pulsar:pulsar-proxy`` is served by
   Maven Central at 4.0.6 only; its jar, ``ipaddress`` and ``jetty-proxy`` are resolved once (no
   transitive dependencies) into ``~/.cache/streamwire/pulsar-proxy-4.0.6/`` and appended to the
   broker classpath.

The brokers' metadata sessions are short (:data:`SESSION_TIMEOUT_MS`): a SIGKILLed broker's
bundles are taken over by the other one after that long, not after Pulsar's default 30 s.

Automatic load shedding and automatic bundle splits are off so that topic ownership changes only
when a test asks for it (:meth:`ApacheCluster.unload`, :meth:`ApacheCluster.split_bundle`,
:meth:`ApacheCluster.kill_broker`); placement of new bundles still goes through the load manager.

CLI (from the repository root)::

    python -m tests.peers.apache_cluster --resolve-only   # download the proxy's jars once
    python -m tests.peers.apache_cluster                  # start, print URLs, wait for Ctrl-C
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .admin import PulsarAdmin, topic_path
from .apache import (
    JVM_FLAGS,
    _locked,
    cache_root,
    maven_classpath,
    pulsar_env,
    pulsar_java,
    resolve_classpath,
    throwaway_pom,
)
from .cluster_security import ClusterSecurity
from .process import Peer, ProcessOwner, ServerProcess, serve_until_signal
from .util import LOOPBACK, free_ports, tail, tcp_accepts, wait_until

__all__ = [
    "ApacheCluster",
    "ApacheClusterError",
    "ClusterBroker",
    "resolve_proxy_classpath",
]

CLUSTER_NAME = "test"
NAMESPACE = "public/default"
NAMESPACE_BUNDLES = 8
#: Metadata session timeout of the brokers: how long a SIGKILLed broker keeps its bundles.
SESSION_TIMEOUT_MS = 6000
#: ZooKeeper's tick; its minimum session timeout is two ticks.
ZK_TICK_MS = 1000
TRANSACTION_COORDINATORS = 2

PROXY_VERSION = "4.0.6"
#: (group, artifact, version) put on the broker classpath for the proxy. 4.0.6 is the newest
#: ``pulsar-proxy`` served; it runs on the 4.0.7+ broker jars. It needs ``ipaddress`` (else
#: ``NoClassDefFoundError: inet/ipaddr/AddressStringException``) and Jetty's proxy servlet,
#: which the broker's dependency tree does not bring.
PROXY_ARTIFACTS: tuple[tuple[str, str, str], ...] = (
    ("org.apache.pulsar", "pulsar-proxy", PROXY_VERSION),
    ("com.github.seancfoley", "ipaddress", "5.5.0"),
    ("org.eclipse.jetty", "jetty-proxy", "9.4.57.v20241219"),
)

# The JVM flags of the standalone without its heap settings (each role sets its own: five JVMs
# share the machine).
_BASE_FLAGS: tuple[str, ...] = tuple(
    f for f in JVM_FLAGS if not f.startswith(("-Xms", "-Xmx", "-XX:MaxDirectMemorySize"))
)
HEAP_FLAGS: dict[str, tuple[str, ...]] = {
    "zookeeper": ("-Xms64m", "-Xmx128m"),
    "setup": ("-Xms64m", "-Xmx192m"),
    "bookie": ("-Xms128m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m"),
    "broker": ("-Xms192m", "-Xmx512m", "-XX:MaxDirectMemorySize=384m"),
    "proxy": ("-Xms96m", "-Xmx256m", "-XX:MaxDirectMemorySize=192m"),
}


class ApacheClusterError(RuntimeError):
    """Resolution, start-up or an operation of the cluster failed (with the logs' tails)."""


# --------------------------------------------------------------------------------------------
# Resolution of the proxy's jars
# --------------------------------------------------------------------------------------------
def _proxy_pom() -> str:
    deps = "".join(
        f"""    <dependency>
      <groupId>{g}</groupId>
      <artifactId>{a}</artifactId>
      <version>{v}</version>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>
    </dependency>
"""
        for g, a, v in PROXY_ARTIFACTS
    )
    note = "Throwaway pom written by tests/peers/apache_cluster.py: only used to fetch three jars."
    body = f"""  <dependencies>
{deps}  </dependencies>
"""
    return throwaway_pom(note, "pulsar-proxy-classpath", PROXY_VERSION, body)


def resolve_proxy_classpath(*, verbose: bool = False) -> str:
    """The proxy's extra jars (``os.pathsep``-joined), invoking Maven only on first use."""
    workdir = cache_root() / f"pulsar-proxy-{PROXY_VERSION}"
    cp_file = workdir / "classpath.txt"
    with _locked(cache_root() / ".resolve.lock"):
        if cp_file.exists():
            jars = cp_file.read_text().strip().split(os.pathsep)
            if len(jars) == len(PROXY_ARTIFACTS) and all(os.path.isfile(j) for j in jars):
                return os.pathsep.join(jars)
        if verbose:
            print(f"resolving pulsar-proxy {PROXY_VERSION} with Maven ...", file=sys.stderr)
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "pom.xml").write_text(_proxy_pom())
        return maven_classpath(workdir, ApacheClusterError, "resolving the proxy's jars")


# --------------------------------------------------------------------------------------------
# Configuration files
# --------------------------------------------------------------------------------------------
def _props(conf: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in conf.items())


def _zk_url(zk_port: int) -> str:
    return f"zk:{LOOPBACK}:{zk_port}"


def bookie_conf(port: int, zk_port: int, data: Path) -> str:
    return _props(
        {
            "bookiePort": str(port),
            "advertisedAddress": LOOPBACK,
            "listeningInterface": "lo",
            "allowLoopback": "true",
            "useHostNameAsBookieID": "false",
            "metadataServiceUri": f"zk://{LOOPBACK}:{zk_port}/ledgers",
            "journalDirectories": str(data / "journal"),
            "ledgerDirectories": str(data / "ledgers"),
            "httpServerEnabled": "false",
            "journalSyncData": "false",
            "journalWriteData": "true",
            "ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
            "dbStorage_writeCacheMaxSizeMb": "32",
            "dbStorage_readAheadCacheMaxSizeMb": "32",
            "dbStorage_rocksDB_blockCacheSize": "16777216",
            "statsProviderClass": "org.apache.bookkeeper.stats.NullStatsProvider",
            "enableStatistics": "false",
            # Room for a full-size (5 MiB) entry plus framing, as the brokers send.
            "nettyMaxFrameSizeBytes": "5253120",
        }
    )


def broker_conf(
    zk_port: int,
    internal_port: int,
    external_port: int,
    web_port: int,
    extra: dict[str, str] | None = None,
) -> str:
    conf = {
        "clusterName": CLUSTER_NAME,
        "metadataStoreUrl": _zk_url(zk_port),
        "configurationMetadataStoreUrl": _zk_url(zk_port),
        "metadataStoreSessionTimeoutMillis": str(SESSION_TIMEOUT_MS),
        "brokerServicePort": str(internal_port),
        "webServicePort": str(web_port),
        "bindAddress": LOOPBACK,
        # Names the broker (``host:webPort``) and its web URL; without it Pulsar uses the host name.
        "advertisedAddress": LOOPBACK,
        # The external listener needs a socket of its own; a connection arriving on it gets
        # external addresses in lookups unless the client names a listener.
        "bindAddresses": f"external:pulsar://{LOOPBACK}:{external_port}",
        "advertisedListeners": (
            f"internal:pulsar://{LOOPBACK}:{internal_port},"
            f"external:pulsar://{LOOPBACK}:{external_port}"
        ),
        "internalListenerName": "internal",
        "functionsWorkerEnabled": "false",
        "webSocketServiceEnabled": "false",
        "exposeTopicLevelMetricsInPrometheus": "false",
        "exposeConsumerLevelMetricsInPrometheus": "false",
        "exposeProducerLevelMetricsInPrometheus": "false",
        "exposeManagedLedgerMetricsInPrometheus": "false",
        "exposeManagedCursorMetricsInPrometheus": "false",
        "loadBalancerEnabled": "true",
        # Placement by the load manager, but no ownership changes the tests did not ask for.
        "loadBalancerSheddingEnabled": "false",
        "loadBalancerAutoBundleSplitEnabled": "false",
        "loadBalancerAutoUnloadSplitBundlesEnabled": "false",
        "loadBalancerDistributeBundlesEvenlyEnabled": "true",
        "defaultNumberOfNamespaceBundles": str(NAMESPACE_BUNDLES),
        "allowAutoTopicCreation": "true",
        "allowAutoTopicCreationType": "non-partitioned",
        "allowAutoSubscriptionCreation": "true",
        "brokerDeleteInactiveTopicsEnabled": "false",
        # Keep what was written: without a subscription or a retention policy Pulsar deletes
        # a topic's closed ledgers, so messages acknowledged before an unload or a broker kill
        # (which close the ledger) would vanish before the tests read them back.
        "defaultRetentionTimeInMinutes": "120",
        "defaultRetentionSizeInMB": "1024",
        "brokerDeduplicationEnabled": "true",
        "transactionCoordinatorEnabled": "true",
        "acknowledgmentAtBatchIndexLevelEnabled": "true",
        "systemTopicEnabled": "true",
        "topicLevelPoliciesEnabled": "true",
        "nettyMaxFrameSizeBytes": "5253120",
        "managedLedgerDefaultEnsembleSize": "1",
        "managedLedgerDefaultWriteQuorum": "1",
        "managedLedgerDefaultAckQuorum": "1",
        "managedLedgerCacheSizeMB": "32",
        "brokerShutdownTimeoutMs": "3000",
        "authenticationEnabled": "false",
        "authorizationEnabled": "false",
    }
    conf.update(extra or {})
    return _props(conf)


def proxy_conf(
    zk_port: int,
    service_port: int,
    web_port: int,
    broker_ports: list[int],
    extra: dict[str, str] | None = None,
) -> str:
    conf = {
        "clusterName": CLUSTER_NAME,
        "metadataStoreUrl": _zk_url(zk_port),
        "configurationMetadataStoreUrl": _zk_url(zk_port),
        "servicePort": str(service_port),
        "webServicePort": str(web_port),
        "bindAddress": LOOPBACK,
        "advertisedAddress": LOOPBACK,
        # The default allows only 6650/6651 and "*" is refused: name every broker port.
        "brokerProxyAllowedTargetPorts": ",".join(str(p) for p in broker_ports),
        "brokerProxyAllowedHostNames": "*",
        "brokerProxyAllowedIPAddresses": "*",
        "authenticationEnabled": "false",
        "authorizationEnabled": "false",
    }
    conf.update(extra or {})
    return _props(conf)


# --------------------------------------------------------------------------------------------
# The cluster
# --------------------------------------------------------------------------------------------
def _http_ok(url: str, timeout: float = 2.0, token: str | None = None) -> bool:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), timeout=timeout
        ) as resp:
            return 200 <= int(resp.status) < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


class _KeepMethodRedirects(urllib.request.HTTPRedirectHandler):
    """Follow 307/308 for every method, keeping method and body: a broker answers an admin
    call on a topic or bundle it does not own with a 307 to the owner, which urllib follows
    only for GET and HEAD."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if code in (307, 308):
            return urllib.request.Request(
                newurl,
                data=req.data,
                headers=dict(req.header_items()),
                method=req.get_method(),
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_KeepMethodRedirects)


def admin_call(
    web_url: str,
    method: str,
    path: str,
    *,
    params: dict[str, str] | None = None,
    token: str | None = None,
) -> Any:
    """``method {web_url}/admin/v2/{path}`` following redirects to the owning broker; the
    decoded JSON answer (None when empty). Raises :class:`ApacheClusterError` on HTTP errors."""
    url = f"{web_url}/admin/v2/{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None
    if method in ("PUT", "POST"):
        # Some endpoints (bundle split) take an optional JSON body and refuse other types.
        headers["Content-Type"] = "application/json"
        data = b""
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with _OPENER.open(req, timeout=60) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")[:500]
        raise ApacheClusterError(f"{method} {url} -> HTTP {exc.code}: {body}") from None
    return json.loads(raw) if raw else None


@dataclass
class ClusterBroker(ProcessOwner):
    """One broker of the cluster: its ports, files and process."""

    index: int
    internal_port: int
    external_port: int
    web_port: int
    workdir: Path
    #: TLS ports (0 unless the cluster is secured).
    tls_port: int = 0
    web_tls_port: int = 0
    process: ServerProcess = field(init=False)

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.process = ServerProcess(
            f"broker {self.index}",
            self.workdir / "console.log",
            error=ApacheClusterError,
            extra_logs=[self.workdir / "pulsar.log"],
        )

    @property
    def service_url(self) -> str:
        """The ``internal`` listener (the broker's ``brokerServicePort``)."""
        return f"pulsar://{LOOPBACK}:{self.internal_port}"

    @property
    def external_url(self) -> str:
        """The ``external`` listener."""
        return f"pulsar://{LOOPBACK}:{self.external_port}"

    @property
    def web_url(self) -> str:
        return f"http://{LOOPBACK}:{self.web_port}"

    @property
    def tls_url(self) -> str:
        """The ``internal`` listener's ``pulsar+ssl://`` address (secured clusters)."""
        return f"pulsar+ssl://{LOOPBACK}:{self.tls_port}"

    @property
    def web_tls_url(self) -> str:
        return f"https://{LOOPBACK}:{self.web_tls_port}"

    @property
    def broker_id(self) -> str:
        """How the load manager names this broker (``host:webPort``)."""
        return f"{LOOPBACK}:{self.web_port}"

    def owns(self, url: str) -> bool:
        """True when ``url`` (a lookup answer) names one of this broker's listeners."""
        own = [self.service_url, self.external_url, self.web_url]
        if self.tls_port:
            own += [self.tls_url, self.web_tls_url]
        return url.rstrip("/") in own


class ApacheCluster(Peer):
    """ZooKeeper, a bookie, two brokers and a proxy on loopback (see the module docstring)."""

    def __init__(
        self,
        *,
        brokers: int = 2,
        version: str | None = None,
        start_timeout: float = 180.0,
        workdir: str | Path | None = None,
        broker_extra_conf: dict[str, str] | None = None,
        secured: bool = False,
    ) -> None:
        self.requested_version = version
        self.version: str | None = None
        self.start_timeout = start_timeout
        self.broker_extra_conf = dict(broker_extra_conf or {})
        self._make_workdir(workdir, "streamwire-cluster-")
        #: TLS material, tokens and settings when ``secured`` (see tests/peers/cluster_security.py).
        self.security = ClusterSecurity.make(self.workdir / "pki") if secured else None
        # One call, so that no port is handed out twice.
        ports = free_ports(4 + 3 * brokers + (2 + 2 * brokers if secured else 0))
        self.zk_port, self.bookie_port, self.proxy_port, self.proxy_web_port = ports[:4]
        tls = ports[4 + 3 * brokers :]
        self.proxy_tls_port, self.proxy_web_tls_port = (tls[0], tls[1]) if secured else (0, 0)
        self.brokers: list[ClusterBroker] = [
            ClusterBroker(
                i,
                ports[4 + 3 * i],
                ports[5 + 3 * i],
                ports[6 + 3 * i],
                self.workdir / f"broker{i}",
                *((tls[2 + 2 * i], tls[3 + 2 * i]) if secured else (0, 0)),
            )
            for i in range(brokers)
        ]
        self.zookeeper = self._process("zookeeper")
        self.bookie = self._process("bookie")
        self.proxy = self._process("proxy")
        self._classpath = ""
        self._proxy_classpath = ""
        self.last_start_seconds: float | None = None
        #: Seconds each phase of the last :meth:`start` took.
        self.timings: dict[str, float] = {}

    def _process(self, role: str) -> ServerProcess:
        d = self.workdir / role
        d.mkdir(parents=True, exist_ok=True)
        return ServerProcess(
            role, d / "console.log", error=ApacheClusterError, extra_logs=[d / "pulsar.log"]
        )

    # -- URLs ---------------------------------------------------------------------------------
    @property
    def service_url(self) -> str:
        """Broker 0's ``internal`` listener."""
        return self.brokers[0].service_url

    @property
    def proxy_url(self) -> str:
        return f"pulsar://{LOOPBACK}:{self.proxy_port}"

    @property
    def proxy_web_url(self) -> str:
        return f"http://{LOOPBACK}:{self.proxy_web_port}"

    @property
    def web_url(self) -> str:
        """Broker 0's admin/web service."""
        return self.brokers[0].web_url

    @property
    def proxy_tls_url(self) -> str:
        """The proxy's ``pulsar+ssl://`` port (secured clusters)."""
        return f"pulsar+ssl://{LOOPBACK}:{self.proxy_tls_port}"

    @property
    def proxy_web_tls_url(self) -> str:
        return f"https://{LOOPBACK}:{self.proxy_web_tls_port}"

    @property
    def admin_token(self) -> str | None:
        """The super-user's token of a secured cluster (None otherwise)."""
        return self.security.admin_token if self.security else None

    def admin(self, broker: int = 0) -> PulsarAdmin:
        return PulsarAdmin(self.brokers[broker].web_url, token=self.admin_token)

    def _live_web(self) -> str:
        for b in self.brokers:
            if b.running:
                return b.web_url
        raise ApacheClusterError("no broker is running")

    def _live_admin(self) -> PulsarAdmin:
        return PulsarAdmin(self._live_web(), token=self.admin_token)

    def admin_call(self, method: str, path: str, **params: str) -> Any:
        """An admin REST call to a running broker, redirects to the owner followed."""
        return admin_call(
            self._live_web(), method, path, params=params or None, token=self.admin_token
        )

    # -- start --------------------------------------------------------------------------------
    def _java(self, role: str, main: str, *args: str, proxy: bool = False) -> list[str]:
        d = self.workdir / role
        d.mkdir(parents=True, exist_ok=True)
        cp = self._classpath + (os.pathsep + self._proxy_classpath if proxy else "")
        kind = role.rstrip("0123456789")
        return pulsar_java(d, cp, (*HEAP_FLAGS[kind], *_BASE_FLAGS), main, *args)

    def start(self) -> ApacheCluster:
        t0 = time.monotonic()
        self.version, self._classpath = resolve_classpath(self.requested_version)
        self._proxy_classpath = resolve_proxy_classpath()
        self.timings["resolve"] = time.monotonic() - t0
        try:
            self._phase("zookeeper", self._start_zookeeper)
            self._phase("metadata", self._setup_metadata)
            self._phase("bookie", self._start_bookie)
            self._phase("brokers", self._start_brokers)
            self._phase("proxy", self._start_proxy)
        except BaseException:
            self.stop()
            raise
        self.last_start_seconds = time.monotonic() - t0
        return self

    def _phase(self, name: str, step: Callable[[], None]) -> None:
        t = time.monotonic()
        step()
        self.timings[name] = time.monotonic() - t

    def _start_zookeeper(self) -> None:
        data = self.workdir / "zookeeper" / "data"
        data.mkdir(parents=True, exist_ok=True)
        cmd = self._java(
            "zookeeper",
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(self.zk_port),
            str(data),
            str(ZK_TICK_MS),
        )
        # ZooKeeperServerMain binds the wildcard address; the admin server is switched off.
        cmd.insert(1, "-Dzookeeper.admin.enableServer=false")
        cmd.insert(1, f"-Dzookeeper.clientPortAddress={LOOPBACK}")
        self.zookeeper.start(
            cmd,
            lambda: tcp_accepts(LOOPBACK, self.zk_port),
            timeout=60,
            cwd=self.workdir,
            env=pulsar_env(),
            interval=0.1,
        )

    def _setup_metadata(self) -> None:
        zk = f"zk:{LOOPBACK}:{self.zk_port}"
        b0 = self.brokers[0]
        cmd = self._java(
            "setup",
            "org.apache.pulsar.PulsarClusterMetadataSetup",
            "--cluster",
            CLUSTER_NAME,
            "--metadata-store",
            zk,
            "--configuration-metadata-store",
            zk,
            "--web-service-url",
            b0.web_url,
            "--broker-service-url",
            b0.service_url,
            "--initial-num-transaction-coordinators",
            str(TRANSACTION_COORDINATORS),
            "--default-namespace-bundle-number",
            str(NAMESPACE_BUNDLES),
        )
        if self.security is not None:
            cmd += ["--web-service-url-tls", b0.web_tls_url, "--broker-service-url-tls", b0.tls_url]
        log = self.workdir / "setup" / "console.log"
        with open(log, "ab") as out:
            rc = subprocess.call(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=pulsar_env(),
                cwd=self.workdir,
                timeout=120,
            )
        if rc != 0:
            raise ApacheClusterError(
                f"PulsarClusterMetadataSetup failed (rc={rc})\n"
                + tail(log, 40)
                + "\n"
                + tail(self.workdir / "setup" / "pulsar.log", 40)
            )

    def _start_bookie(self) -> None:
        d = self.workdir / "bookie"
        conf = d / "bk.conf"
        conf.write_text(bookie_conf(self.bookie_port, self.zk_port, d / "data"))
        cmd = self._java("bookie", "org.apache.bookkeeper.server.Main", "--conf", str(conf))
        self.bookie.start(
            cmd,
            lambda: tcp_accepts(LOOPBACK, self.bookie_port),
            timeout=90,
            cwd=self.workdir,
            env=pulsar_env(),
            interval=0.2,
        )

    def _broker_cmd(self, b: ClusterBroker) -> list[str]:
        conf = b.workdir / "broker.conf"
        extra: dict[str, str] = {}
        if self.security is not None:
            extra = self.security.broker_conf(b.tls_port, b.web_tls_port)
            # The internal listener gets the TLS address too: lookups of TLS clients (and of
            # the proxy, which talks TLS to the brokers) answer with it.
            extra["advertisedListeners"] = (
                f"internal:pulsar://{LOOPBACK}:{b.internal_port},"
                f"internal:pulsar+ssl://{LOOPBACK}:{b.tls_port},"
                f"external:pulsar://{LOOPBACK}:{b.external_port}"
            )
        extra.update(self.broker_extra_conf)
        conf.write_text(
            broker_conf(self.zk_port, b.internal_port, b.external_port, b.web_port, extra)
        )
        return self._java(
            f"broker{b.index}",
            "org.apache.pulsar.PulsarBrokerStarter",
            "--broker-conf",
            str(conf),
        )

    def _broker_ready(self, b: ClusterBroker) -> bool:
        return (
            _http_ok(f"{b.web_url}/admin/v2/brokers/ready", token=self.admin_token)
            and tcp_accepts(LOOPBACK, b.external_port)
            and (not b.tls_port or tcp_accepts(LOOPBACK, b.tls_port))
        )

    def _start_broker(self, b: ClusterBroker) -> None:
        b.process.start(
            self._broker_cmd(b),
            lambda: self._broker_ready(b),
            timeout=self.start_timeout,
            cwd=self.workdir,
            env=pulsar_env(),
            interval=0.25,
        )

    def _start_brokers(self) -> None:
        # In parallel: JVM start-up is mostly waiting on class loading and ZooKeeper.
        errors: list[BaseException] = []

        def run(b: ClusterBroker) -> None:
            try:
                self._start_broker(b)
            except BaseException as exc:  # re-raised in the calling thread
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(b,)) for b in self.brokers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        self._wait_registered(len(self.brokers))

    def active_brokers(self) -> list[str]:
        """Broker ids (``host:webPort``) registered in the cluster, as the load manager sees."""
        try:
            result: list[str] = self._live_admin().request("GET", f"brokers/{CLUSTER_NAME}")
        except (OSError, RuntimeError):
            return []
        return result

    def _wait_registered(self, n: int, timeout: float = 60.0) -> None:
        if not wait_until(lambda: len(self.active_brokers()) >= n, timeout, 0.25):
            raise ApacheClusterError(
                f"{n} brokers not registered within {timeout:.0f}s: {self.active_brokers()}\n"
                + self.log_tail()
            )

    def _start_proxy(self) -> None:
        d = self.workdir / "proxy"
        conf = d / "proxy.conf"
        ports = [p for b in self.brokers for p in (b.internal_port, b.external_port)]
        extra: dict[str, str] = {}
        if self.security is not None:
            ports += [b.tls_port for b in self.brokers]
            extra = self.security.proxy_conf(self.proxy_tls_port, self.proxy_web_tls_port)
        conf.write_text(
            proxy_conf(self.zk_port, self.proxy_port, self.proxy_web_port, ports, extra)
        )
        cmd = self._java(
            "proxy",
            "org.apache.pulsar.proxy.server.ProxyServiceStarter",
            "--config",
            str(conf),
            proxy=True,
        )
        self.proxy.start(
            cmd,
            lambda: (
                tcp_accepts(LOOPBACK, self.proxy_port)
                and tcp_accepts(LOOPBACK, self.proxy_web_port)
                and (not self.proxy_tls_port or tcp_accepts(LOOPBACK, self.proxy_tls_port))
            ),
            timeout=120,
            cwd=self.workdir,
            env=pulsar_env(),
            interval=0.2,
        )

    # -- operations ---------------------------------------------------------------------------
    def kill_broker(self, i: int) -> None:
        """SIGKILL broker ``i`` (a crash: its bundles move once its session expires)."""
        self.brokers[i].process.kill()

    def stop_broker(self, i: int) -> None:
        """Graceful stop (SIGTERM): the broker hands its bundles over before exiting."""
        self.brokers[i].process.stop(30)

    def restart_broker(self, i: int, *, timeout: float | None = None) -> None:
        """Start broker ``i`` again (stopping it first if it runs) on the same ports."""
        b = self.brokers[i]
        if b.running:
            b.process.stop(30)
        b.process.start(
            self._broker_cmd(b),
            lambda: self._broker_ready(b),
            timeout=timeout or self.start_timeout,
            cwd=self.workdir,
            env=pulsar_env(),
            interval=0.25,
        )
        self._wait_registered(sum(1 for x in self.brokers if x.running))

    def restart_proxy(self) -> None:
        """Stop the proxy (SIGTERM) and start it again on the same ports."""
        self.proxy.stop(20)
        self._start_proxy()

    def lookup(self, topic: str) -> dict[str, Any]:
        """The admin lookup of ``topic`` (assigns its bundle if nobody owns it)."""
        return self._live_admin().lookup(topic)

    def owner(self, topic: str) -> int:
        """Index of the broker that owns ``topic`` (asks for an owner if there is none)."""
        answer = self.lookup(topic)
        url = str(answer.get("brokerUrl", ""))
        for b in self.brokers:
            if b.owns(url):
                return b.index
        raise ApacheClusterError(f"lookup of {topic} named no broker of ours: {answer}")

    def unload(self, topic: str) -> None:
        """Unload ``topic``: its broker closes producers and consumers, which look it up again."""
        self.admin_call("PUT", f"{topic_path(topic)}/unload")

    def place(self, topic: str, broker: int, tries: int = 5) -> None:
        """Make broker ``broker`` own ``topic``'s bundle: unload the bundle with Pulsar's
        ``destinationBroker`` (the load manager gives it to that broker at the next lookup).
        Deterministic, unlike waiting for the load manager to spread fresh bundles, which on
        a loaded machine may put every bundle on one broker for minutes."""
        target = self.brokers[broker]
        namespace = "/".join(topic.split("://", 1)[-1].split("/")[:2])
        for _ in range(tries):
            if self.owner(topic) == broker:
                return
            self.admin_call(
                "PUT",
                f"namespaces/{namespace}/{self.bundle_of(topic)}/unload",
                destinationBroker=target.broker_id,
            )
        if self.owner(topic) != broker:
            raise ApacheClusterError(f"{topic} is not on broker {broker} after {tries} unloads")

    def rebalance(self, namespace: str = NAMESPACE) -> None:
        """Unload every bundle of ``namespace``: the next lookups place them again, spread over
        the running brokers (after a restart the survivor holds them all)."""
        self.admin_call("PUT", f"namespaces/{namespace}/unload")

    def bundle_of(self, topic: str) -> str:
        """The namespace bundle range (``0x..._0x...``) holding ``topic``."""
        result = self._live_admin().request(
            "GET", f"{topic_path(topic)}/bundle", prefix="lookup/v2/topic"
        )
        return str(result)

    def split_bundle(self, namespace: str = NAMESPACE, bundle: str | None = None) -> list[str]:
        """Split ``bundle`` of ``namespace`` (default: every bundle, one at a time) in two, with
        unloading; returns the namespace's bundle boundaries afterwards."""
        targets = [bundle] if bundle else self.bundles(namespace)
        for rng in targets:
            self.admin_call("PUT", f"namespaces/{namespace}/{rng}/split", unload="true")
        return self.bundle_boundaries(namespace)

    def bundle_boundaries(self, namespace: str = NAMESPACE) -> list[str]:
        data: dict[str, Any] = self._live_admin().request("GET", f"namespaces/{namespace}/bundles")
        return [str(x) for x in data["boundaries"]]

    def bundles(self, namespace: str = NAMESPACE) -> list[str]:
        """Bundle ranges (``0x00000000_0x20000000`` ...) of ``namespace``."""
        b = self.bundle_boundaries(namespace)
        return [f"{lo}_{hi}" for lo, hi in zip(b, b[1:])]

    # -- stop, logs ---------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop every process by PID (proxy, brokers, bookie, ZooKeeper)."""
        self.proxy.stop(10)
        for b in self.brokers:
            b.process.stop(15)
        self.bookie.stop(10)
        self.zookeeper.stop(10)

    def log_tail(self, lines: int = 40) -> str:
        """The tails of every process's logs (console and log4j file)."""
        procs = [self.zookeeper, self.bookie, *(b.process for b in self.brokers), self.proxy]
        parts = [f"=== {p.name} ===\n{p.log_tail(lines)}" for p in procs]
        setup = tail(self.workdir / "setup" / "console.log", lines)
        if setup:
            parts.insert(1, f"=== metadata setup ===\n{setup}")
        return "\n".join(parts)

    def describe(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "service_url": self.service_url,
            "proxy_url": self.proxy_url,
            "web_url": self.web_url,
            "brokers": [
                {
                    "service_url": b.service_url,
                    "external_url": b.external_url,
                    "web_url": b.web_url,
                    "pid": b.pid,
                }
                for b in self.brokers
            ],
            "workdir": str(self.workdir),
            **(
                {
                    "proxy_tls_url": self.proxy_tls_url,
                    "proxy_web_tls_url": self.proxy_web_tls_url,
                    "broker_tls_urls": [b.tls_url for b in self.brokers],
                    "ca": str(self.security.pki.ca),
                }
                if self.security is not None
                else {}
            ),
        }

    def __repr__(self) -> str:
        return f"ApacheCluster({self.describe()!r})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.peers.apache_cluster", description=__doc__
    )
    parser.add_argument("--resolve-only", action="store_true", help="download jars and exit")
    parser.add_argument(
        "--secured",
        action="store_true",
        help="TLS ports and token authentication (admin token printed)",
    )
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    version, cp = resolve_classpath(verbose=True)
    proxy_cp = resolve_proxy_classpath(verbose=True)
    print(
        f"Apache Pulsar {version}: {len(cp.split(os.pathsep))} jars, proxy "
        f"{PROXY_VERSION}: {len(proxy_cp.split(os.pathsep))} jars "
        f"(resolved in {time.monotonic() - t0:.1f}s)",
        flush=True,
    )
    if args.resolve_only:
        return 0
    cluster = ApacheCluster(version=version, secured=args.secured)

    def start() -> None:
        cluster.start()
        print(json.dumps(cluster.describe(), indent=2), flush=True)
        if cluster.admin_token:
            print(f"admin token (role admin): {cluster.admin_token}", flush=True)
        timings = ", ".join(f"{k} {v:.1f}s" for k, v in cluster.timings.items())
        print(f"started in {cluster.last_start_seconds:.1f}s ({timings}); Ctrl-C to stop")

    serve_until_signal(start, lambda: cluster.proxy.running, cluster.close)
    return 0


if __name__ == "__main__":
    sys.exit(main())
