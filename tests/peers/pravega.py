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
back with every count checked (the old settings fail it after about 130 MB).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .apache import (
    DEPENDENCY_PLUGIN,
    JAVA,
    MAVEN,
    MAVEN_REPO_LOCAL,
    SETTINGS_XML,
    _locked,
    cache_root,
)
from .process import ServerProcess
from .proxy_process import ProxyProcess
from .util import LOOPBACK, free_ports, tail, tcp_accepts

__all__ = ["PravegaError", "PravegaStandalone", "resolve_classpath"]

HERE = Path(__file__).resolve().parent / "pravega_conf"
MAIN_CLASS = "io.pravega.local.LocalPravegaEmulator"


class PravegaError(RuntimeError):
    """Pravega standalone could not be assembled or did not start."""


def resolve_classpath() -> str:
    """The standalone's classpath, computed by Maven once and cached."""
    import subprocess

    workdir = cache_root() / "pravega-0.13.0"
    cp_file = workdir / "classpath.txt"
    with _locked(cache_root() / ".resolve-pravega.lock"):
        if cp_file.exists():
            cp = cp_file.read_text().strip()
            if cp and all(os.path.isfile(j) for j in cp.split(os.pathsep)):
                return cp
        workdir.mkdir(parents=True, exist_ok=True)
        shutil.copy(HERE / "pom.xml", workdir / "pom.xml")
        (workdir / "settings.xml").write_text(SETTINGS_XML)
        tmp = workdir / "classpath.txt.tmp"
        cmd = [
            MAVEN,
            "-B",
            "-q",
            "-s",
            str(workdir / "settings.xml"),
            "-f",
            str(workdir / "pom.xml"),
            f"{DEPENDENCY_PLUGIN}:build-classpath",
            f"-Dmdep.outputFile={tmp}",
            "-Dmdep.includeScope=runtime",
        ]
        if MAVEN_REPO_LOCAL:
            cmd.append(f"-Dmaven.repo.local={MAVEN_REPO_LOCAL}")
        log = workdir / "mvn.log"
        with open(log, "wb") as out:
            rc = subprocess.call(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        if rc != 0 or not tmp.exists():
            raise PravegaError(
                f"mvn build-classpath for Pravega failed (rc={rc})\n" + tail(log, 30)
            )
        cp = tmp.read_text().strip()
        tmp.replace(cp_file)
        return cp


class PravegaStandalone:
    """One standalone Pravega (ZooKeeper, controller, segment store in one JVM)."""

    def __init__(
        self,
        start_timeout: float = 120.0,
        *,
        proxy: bool = False,
        heap: str = "1g",
        cache: int = 512 * 1024 * 1024,
    ) -> None:
        #: The JVM's heap (tier 1, the durable log, is in memory until tier 2 holds the data).
        self.heap = heap
        #: The segment store's read/write cache, in bytes (direct memory).
        self.cache = cache
        self.zk_port, self.segment_port, self.controller_port, self.rest_port = free_ports(4)
        #: With ``proxy``, the segment store is published (what the controller tells clients)
        #: at a fault proxy in front of it, so tests can cut every client's data connections.
        #: The proxy runs in a process of its own: the official client blocks holding the
        #: interpreter lock, which would freeze a proxy thread in this process.
        self.proxy: ProxyProcess | None = None
        if proxy:
            self.proxy = ProxyProcess(LOOPBACK, self.segment_port)
        self.workdir = Path(tempfile.mkdtemp(prefix="streamwire-pravega-"))
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
    def published_port(self) -> int:
        """The segment store port clients are told (the proxy's, when there is one)."""
        return self.proxy.port if self.proxy is not None else self.segment_port

    @property
    def controller_url(self) -> str:
        return f"tcp://{LOOPBACK}:{self.controller_port}"

    def _ready(self) -> bool:
        if not tcp_accepts(LOOPBACK, self.controller_port):
            return False
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
                    "singlenode.security.auth.enable=false",
                    "singlenode.security.tls.enable=false",
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
            "-Dpravegaservice.service.published.host.nameOrIp=127.0.0.1",
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

    def stop(self) -> int | None:
        return self.process.stop(20.0)

    def close(self) -> None:
        self.stop()
        if self.proxy is not None:
            self.proxy.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self) -> str:
        return self.process.log_tail()
