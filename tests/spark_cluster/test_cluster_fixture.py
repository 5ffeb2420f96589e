"""The cluster fixture itself: a start that fails says why (the daemons' logs) and leaves no
process behind. Uses a cluster of its own, not the session's."""

from __future__ import annotations

import os

import pytest

from tests.peers.spark_cluster import SparkClusterError, SparkStandaloneCluster


def test_a_worker_that_cannot_start_fails_with_the_logs() -> None:
    cluster = SparkStandaloneCluster(workers=1, memory="plenty", start_timeout=120)
    try:
        with pytest.raises(SparkClusterError) as info:
            cluster.start()
        message = str(info.value)
        assert "Spark worker 0 exited with" in message
        assert "plenty" in message  # the worker's own complaint, from its log
        assert "master.log" in message  # every daemon's log tail comes with it
        pids = cluster.pids
        assert pids, "nothing was started"
        for pid in pids:  # the master was stopped too
            assert not os.path.exists(f"/proc/{pid}") or _zombie(pid), pid
    finally:
        cluster.close()


def _zombie(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "Z"
