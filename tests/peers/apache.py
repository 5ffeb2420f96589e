"""Apache Pulsar standalone, assembled from Maven Central and started on loopback ports.

Resolution (first run only): a throwaway pom depending on ``org.apache.pulsar:pulsar-broker`` plus
the log4j2 SLF4J binding is written to ``~/.cache/streamwire/pulsar-<version>/`` and
``mvn dependency:build-classpath`` writes ``classpath.txt`` there (jars land in ``~/.m2``).
Later runs read the cached classpath and never invoke Maven, unless a jar has disappeared.

Start: a minimal ``standalone.conf`` (loopback only, free ports, functions off, RocksDB metadata
store, in-process bookie), a log4j2 config that logs to a file, and
``java ... org.apache.pulsar.PulsarStandaloneStarter``. Ready when
``GET /admin/v2/namespaces/public/default`` answers 200.

CLI (from the repository root)::

    python -m tests.peers.apache --resolve-only   # download once (set-up scripts, CI)
    python -m tests.peers.apache                  # start, print URLs, wait for Ctrl-C
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .process import OneProcessPeer, ServerProcess, serve_until_signal
from .util import LOOPBACK, free_ports, tail

if TYPE_CHECKING:
    from .admin import PulsarAdmin

__all__ = ["ApachePulsar", "ApachePulsarError", "resolve_classpath"]

#: Candidate 4.0.x (LTS) versions, newest first. The first one that resolves from Maven Central
#: is used and remembered; ``STREAMWIRE_PULSAR_VERSION`` forces one.
PULSAR_VERSIONS: tuple[str, ...] = ("4.0.8", "4.0.7")
MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
JAVA = os.environ.get("STREAMWIRE_JAVA", "java")
MAVEN = os.environ.get("STREAMWIRE_MVN", "mvn")
#: Optional Maven local repository (default: Maven's own, ~/.m2/repository).
MAVEN_REPO_LOCAL = os.environ.get("STREAMWIRE_M2_REPO")

JVM_FLAGS: tuple[str, ...] = (
    "-Xms256m",
    "-Xmx1g",
    "-XX:MaxDirectMemorySize=1g",
    "-XX:+UseG1GC",
    "-XX:TieredStopAtLevel=1",
    "-Xshare:auto",
    "--add-opens",
    "java.base/java.io=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.util.zip=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.nio=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-opens",
    "java.base/sun.net=ALL-UNNAMED",
    "--add-opens",
    "java.management/sun.management=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.platform=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djava.net.preferIPv4Stack=true",
    "-Dbookkeeper.metadata.bookie.drivers="
    "org.apache.pulsar.metadata.bookkeeper.PulsarMetadataBookieDriver",
    "-Dbookkeeper.metadata.client.drivers="
    "org.apache.pulsar.metadata.bookkeeper.PulsarMetadataClientDriver",
    "-Dzookeeper.4lw.commands.whitelist=*",
    "-Dpulsar.allocator.exit_on_oom=true",
)
MAIN_CLASS = "org.apache.pulsar.PulsarStandaloneStarter"


class ApachePulsarError(RuntimeError):
    """Resolution or start-up of Apache Pulsar failed (the message carries the log tail)."""


# --------------------------------------------------------------------------------------------
# Resolution
# --------------------------------------------------------------------------------------------
def cache_root() -> Path:
    base = os.environ.get("STREAMWIRE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "streamwire"
    )
    return Path(base)


def throwaway_pom(note: str, artifact_id: str, version: str, body: str) -> str:
    """A pom that exists only for Maven to resolve ``body``'s dependencies (``note``: who
    wrote it and why, an XML comment)."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- {note} -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.streamwire.tests</groupId>
  <artifactId>{artifact_id}</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
{body}</project>
"""


#: The standalone's dependencies (``{version}``: Pulsar's).
POM_BODY = """  <dependencyManagement>
    <dependencies>
      <!-- Pulsar's own parent pom pins every third-party version it was built with. -->
      <dependency>
        <groupId>org.apache.pulsar</groupId>
        <artifactId>pulsar</artifactId>
        <version>{version}</version>
        <type>pom</type>
        <scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>org.apache.pulsar</groupId>
      <artifactId>pulsar-broker</artifactId>
      <version>{version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j2-impl</artifactId>
    </dependency>
  </dependencies>
"""

# Pulsar's parent pom lists extra repositories (e.g. Confluent's); route everything to Central.
SETTINGS_XML = f"""<?xml version="1.0" encoding="UTF-8"?>
<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <mirrors>
    <mirror>
      <id>central-only</id>
      <mirrorOf>*</mirrorOf>
      <url>{MAVEN_CENTRAL}</url>
    </mirror>
  </mirrors>
</settings>
"""


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _cached_classpath(version: str) -> str | None:
    cp_file = cache_root() / f"pulsar-{version}" / "classpath.txt"
    if not cp_file.exists():
        return None
    cp = cp_file.read_text().strip()
    jars = cp.split(os.pathsep) if cp else []
    if not jars or not all(os.path.isfile(j) for j in jars):
        return None
    return cp


def maven_classpath(workdir: Path, error: type[Exception], what: str) -> str:
    """Run ``mvn dependency:build-classpath`` on ``workdir/pom.xml`` (the caller wrote it),
    every repository routed to Maven Central; the classpath, also kept in
    ``workdir/classpath.txt`` for later runs. Raises ``error`` with Maven's log when ``what``
    (say, "resolving Pravega") fails. Shared by every JVM peer."""
    if shutil.which(MAVEN) is None:
        raise error(f"Maven ({MAVEN!r}) not found: install it (apt-get install maven)")
    (workdir / "settings.xml").write_text(SETTINGS_XML)
    tmp_out = workdir / "classpath.txt.tmp"
    cmd = [
        MAVEN,
        "-B",
        "-q",
        "-s",
        str(workdir / "settings.xml"),
        "-f",
        str(workdir / "pom.xml"),
        f"{DEPENDENCY_PLUGIN}:build-classpath",
        f"-Dmdep.outputFile={tmp_out}",
        "-Dmdep.includeScope=runtime",
    ]
    if MAVEN_REPO_LOCAL:
        cmd.append(f"-Dmaven.repo.local={MAVEN_REPO_LOCAL}")
    log = workdir / "mvn.log"
    with open(log, "wb") as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if rc != 0 or not tmp_out.exists():
        raise error(f"{what} failed (rc={rc})\n" + tail(log, 30))
    cp = tmp_out.read_text().strip()
    tmp_out.replace(workdir / "classpath.txt")
    return cp


def _run_maven(version: str) -> str:
    workdir = cache_root() / f"pulsar-{version}"
    workdir.mkdir(parents=True, exist_ok=True)
    note = "Throwaway pom written by tests/peers/apache.py: only used to compute a classpath."
    body = POM_BODY.format(version=version)
    pom = throwaway_pom(note, "pulsar-standalone-classpath", version, body)
    (workdir / "pom.xml").write_text(pom)
    what = f"mvn dependency:build-classpath for Pulsar {version}"
    return maven_classpath(workdir, ApachePulsarError, what)


def resolve_classpath(version: str | None = None, *, verbose: bool = False) -> tuple[str, str]:
    """Return (version, classpath) for Apache Pulsar standalone, invoking Maven only if needed."""
    forced = version or os.environ.get("STREAMWIRE_PULSAR_VERSION")
    pointer = cache_root() / "pulsar-4.0-resolved.txt"
    candidates: list[str]
    if forced:
        candidates = [forced]
    else:
        remembered = pointer.read_text().strip() if pointer.exists() else ""
        candidates = ([remembered] if remembered else []) + [
            v for v in PULSAR_VERSIONS if v != remembered
        ]
    with _locked(cache_root() / ".resolve.lock"):
        for v in candidates:
            cp = _cached_classpath(v)
            if cp is not None:
                return v, cp
        errors: list[str] = []
        for v in candidates:
            if verbose:
                print(f"resolving Apache Pulsar {v} with Maven ...", file=sys.stderr, flush=True)
            try:
                cp = _run_maven(v)
            except ApachePulsarError as exc:
                errors.append(str(exc))
                continue
            if not forced:
                pointer.write_text(v + "\n")
            return v, cp
    raise ApachePulsarError("could not resolve Apache Pulsar:\n" + "\n\n".join(errors))


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------
def standalone_conf(
    broker_port: int,
    web_port: int,
    bookie_port: int,
    *,
    transactions: bool = True,
    extra: dict[str, str] | None = None,
) -> str:
    """A minimal standalone.conf (also read by the in-process bookie)."""
    conf: dict[str, str] = {
        "clusterName": "standalone",
        "brokerServicePort": str(broker_port),
        "webServicePort": str(web_port),
        "bindAddress": LOOPBACK,
        "advertisedAddress": LOOPBACK,
        "bindAddresses": "",
        "advertisedListeners": "",
        "metadataStoreSessionTimeoutMillis": "30000",
        # Nothing beyond the two ports: no functions, no stats servers, no extra listeners.
        "functionsWorkerEnabled": "false",
        "webSocketServiceEnabled": "false",
        "exposeTopicLevelMetricsInPrometheus": "false",
        "exposeConsumerLevelMetricsInPrometheus": "false",
        "exposeProducerLevelMetricsInPrometheus": "false",
        "exposeManagedLedgerMetricsInPrometheus": "false",
        "exposeManagedCursorMetricsInPrometheus": "false",
        "exposePublisherStats": "false",
        "statsUpdateFrequencyInSecs": "60",
        "loadBalancerEnabled": "false",
        "loadBalancerSheddingEnabled": "false",
        "allowAutoTopicCreation": "true",
        "allowAutoTopicCreationType": "non-partitioned",
        "allowAutoSubscriptionCreation": "true",
        "brokerDeleteInactiveTopicsEnabled": "false",
        "brokerDeduplicationEnabled": "true",
        # As Pulsar's shipped standalone.conf: room for a full-size message plus framing, so
        # entries at the 5 MiB maximum (chunked messages) are accepted by the bookie.
        "nettyMaxFrameSizeBytes": "5253120",
        "acknowledgmentAtBatchIndexLevelEnabled": "true",
        "transactionCoordinatorEnabled": "true" if transactions else "false",
        "systemTopicEnabled": "true",
        "topicLevelPoliciesEnabled": "true",
        "authenticationEnabled": "false",
        "authorizationEnabled": "false",
        "managedLedgerDefaultEnsembleSize": "1",
        "managedLedgerDefaultWriteQuorum": "1",
        "managedLedgerDefaultAckQuorum": "1",
        "managedLedgerCacheSizeMB": "64",
        "brokerShutdownTimeoutMs": "3000",
        # In-process bookie.
        "allowLoopback": "true",
        # Without an interface the bookie binds the wildcard address; "lo" binds 127.0.0.1.
        "listeningInterface": "lo",
        "bookiePort": str(bookie_port),
        # BKCluster only honours --bookkeeper-port when ephemeral ports are "allowed";
        # otherwise it picks a random port, which would change on restart (and strand ledgers).
        "allowEphemeralPorts": "true",
        "useHostNameAsBookieID": "false",
        "journalSyncData": "false",
        "journalWriteData": "true",
        "httpServerEnabled": "false",
        "dbStorage_writeCacheMaxSizeMb": "32",
        "dbStorage_readAheadCacheMaxSizeMb": "32",
        "dbStorage_rocksDB_blockCacheSize": "16777216",
        "statsProviderClass": "org.apache.bookkeeper.stats.NullStatsProvider",
        "enableStatistics": "false",
    }
    conf.update(extra or {})
    return "".join(f"{k}={v}\n" for k, v in conf.items())


LOG4J2_XML = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn" shutdownHook="disable">
  <Appenders>
    <File name="file" fileName="{log}" append="true" immediateFlush="true">
      <PatternLayout pattern="%d{{HH:mm:ss.SSS}} [%t] %-5level %c{{1}} - %msg%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Logger name="org.apache.zookeeper" level="warn"/>
    <Logger name="org.apache.bookkeeper" level="warn"/>
    <Logger name="org.apache.pulsar.metadata" level="warn"/>
    <Logger name="org.eclipse.jetty" level="warn"/>
    <Root level="info"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
"""


def pulsar_java(
    workdir: Path, classpath: str, flags: Sequence[str], main: str, *args: str
) -> list[str]:
    """The command line of a Pulsar JVM whose files are in ``workdir``: log4j2 logging to
    ``workdir/pulsar.log``, the (long) classpath off the command line in a java @argfile.
    Shared by the standalone and every process of the cluster."""
    log4j = workdir / "log4j2.xml"
    log4j.write_text(LOG4J2_XML.format(log=workdir / "pulsar.log"))
    argfile = workdir / "java.args"
    argfile.write_text(f'-cp "{classpath}"\n')
    return [
        JAVA,
        *flags,
        f"-Dlog4j2.configurationFile={log4j}",
        f"-Dpulsar.log.dir={workdir}",
        f"@{argfile}",
        main,
        *args,
    ]


def pulsar_env() -> dict[str, str]:
    """This environment without ``PULSAR_*`` variables (Pulsar's scripts read them; a
    developer's own must not change the peers)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PULSAR_")}


# --------------------------------------------------------------------------------------------
# The broker
# --------------------------------------------------------------------------------------------
class ApachePulsar(OneProcessPeer):
    """An Apache Pulsar standalone broker (RocksDB metadata, in-process bookie) on loopback."""

    #: A broker flushes its ledgers on SIGTERM: give it longer than the default.
    stop_timeout = 20.0

    def __init__(
        self,
        *,
        version: str | None = None,
        transactions: bool = True,
        extra_conf: dict[str, str] | None = None,
        start_timeout: float = 180.0,
        workdir: str | Path | None = None,
        admin_token: str | None = None,
    ) -> None:
        self.requested_version = version
        self.version: str | None = None
        self.transactions = transactions
        self.extra_conf = dict(extra_conf or {})
        self.start_timeout = start_timeout
        #: Bearer token for the admin API (and the readiness probe) when authentication is on.
        self.admin_token = admin_token
        self._make_workdir(workdir, "streamwire-apache-")
        self.broker_port, self.web_port, self.bookie_port = free_ports(3)
        self.conf_path = self.workdir / "standalone.conf"
        self.log_path = self.workdir / "pulsar.log"  # pulsar_java's log4j2 file
        self.console_path = self.workdir / "console.log"
        self.process = ServerProcess(
            "Apache Pulsar",
            self.console_path,
            error=ApachePulsarError,
            extra_logs=[self.log_path],
        )
        self.last_start_seconds: float | None = None

    @property
    def service_url(self) -> str:
        return f"pulsar://{LOOPBACK}:{self.broker_port}"

    @property
    def admin_url(self) -> str:
        return f"http://{LOOPBACK}:{self.web_port}"

    def admin(self) -> PulsarAdmin:
        from .admin import PulsarAdmin

        return PulsarAdmin(self.admin_url, token=self.admin_token)

    def start(self) -> ApachePulsar:
        if self.running:
            return self
        t0 = time.monotonic()
        self.version, classpath = resolve_classpath(self.requested_version)
        self.conf_path.write_text(
            standalone_conf(
                self.broker_port,
                self.web_port,
                self.bookie_port,
                transactions=self.transactions,
                extra=self.extra_conf,
            )
        )
        data = self.workdir / "data"
        cmd = pulsar_java(
            self.workdir,
            classpath,
            JVM_FLAGS,
            MAIN_CLASS,
            "--config",
            str(self.conf_path),
            "--no-functions-worker",
            "--no-stream-storage",
            "-a",
            LOOPBACK,
            "--metadata-dir",
            str(data / "metadata"),
            "--bookkeeper-dir",
            str(data / "bookkeeper"),
            "--bookkeeper-port",
            str(self.bookie_port),
        )
        self.process.start(
            cmd,
            self._ready,
            timeout=self.start_timeout,
            cwd=self.workdir,
            env=pulsar_env(),
            interval=0.25,
        )
        self.last_start_seconds = time.monotonic() - t0
        return self

    def _ready(self) -> bool:
        url = f"{self.admin_url}/admin/v2/namespaces/public/default"
        headers = {"Authorization": f"Bearer {self.admin_token}"} if self.admin_token else {}
        req = urllib.request.Request(url, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=2) as resp:
                return int(resp.status) == 200
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def __repr__(self) -> str:
        return (
            f"ApachePulsar(version={self.version!r}, url={self.service_url!r}, "
            f"admin={self.admin_url!r}, pid={self.pid})"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.peers.apache", description=__doc__)
    parser.add_argument("--resolve-only", action="store_true", help="download jars and exit")
    parser.add_argument("--version", default=None, help="Pulsar version (default: newest 4.0.x)")
    parser.add_argument("--no-transactions", action="store_true")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    version, cp = resolve_classpath(args.version, verbose=True)
    print(
        f"Apache Pulsar {version}: {len(cp.split(os.pathsep))} jars "
        f"(resolved in {time.monotonic() - t0:.1f}s)",
        flush=True,
    )
    if args.resolve_only:
        return 0
    broker = ApachePulsar(version=version, transactions=not args.no_transactions)

    def start() -> None:
        broker.start()
        print(f"service_url={broker.service_url}", flush=True)
        print(f"admin_url={broker.admin_url}", flush=True)
        print(f"pid={broker.pid} log={broker.log_path}", flush=True)
        print(f"started in {broker.last_start_seconds:.1f}s; Ctrl-C to stop", flush=True)

    serve_until_signal(start, lambda: broker.running, broker.close)
    return 0


if __name__ == "__main__":
    sys.exit(main())
