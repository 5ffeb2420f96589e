"""A tiny Pulsar admin REST client (urllib only) for Apache Pulsar in tests.

Topics may be given as ``persistent://tenant/ns/name``, ``non-persistent://...`` or a bare ``name``
(then ``persistent://public/default/name``).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

__all__ = ["AdminError", "PulsarAdmin", "topic_path"]


class AdminError(RuntimeError):
    """A non-2xx answer from the admin API."""

    def __init__(self, method: str, url: str, status: int, body: str) -> None:
        super().__init__(f"{method} {url} -> HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


def topic_path(topic: str) -> str:
    """``persistent://t/ns/x`` -> ``persistent/t/ns/x`` (URL-quoted local name)."""
    domain = "persistent"
    rest = topic
    if "://" in topic:
        domain, rest = topic.split("://", 1)
    parts = rest.split("/")
    if len(parts) == 1:
        parts = ["public", "default", parts[0]]
    if len(parts) != 3:
        raise ValueError(f"not a topic name: {topic!r}")
    tenant, ns, name = parts
    return f"{domain}/{tenant}/{ns}/{urllib.parse.quote(name, safe='')}"


class PulsarAdmin:
    """Calls ``{admin_url}/admin/v2/...``; raises :class:`AdminError` on HTTP errors.

    ``token``: sent as ``Authorization: Bearer <token>`` (brokers with authentication on).
    """

    def __init__(self, admin_url: str, timeout: float = 30.0, *, token: str | None = None) -> None:
        self.admin_url = admin_url.rstrip("/")
        self.timeout = timeout
        self._token = token

    def __repr__(self) -> str:
        auth = ", token=<redacted>" if self._token else ""
        return f"PulsarAdmin({self.admin_url!r}{auth})"

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: dict[str, str] | None = None,
        prefix: str = "admin/v2",
    ) -> Any:
        url = f"{self.admin_url}/{prefix}/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        data = None
        headers = {"Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise AdminError(method, url, exc.code, exc.read().decode(errors="replace")) from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    # -- topics -------------------------------------------------------------------------------
    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        self.request("PUT", f"{topic_path(topic)}/partitions", partitions)

    def get_partitions(self, topic: str) -> int:
        """Number of partitions (0 for a non-partitioned topic)."""
        meta = self.request("GET", f"{topic_path(topic)}/partitions")
        return int(meta.get("partitions", 0))

    def create_topic(self, topic: str) -> None:
        """Create a non-partitioned topic."""
        self.request("PUT", topic_path(topic))

    def terminate(self, topic: str) -> Any:
        """Terminate a topic (no more publishes); returns the last message id."""
        return self.request("POST", f"{topic_path(topic)}/terminate")

    def unload(self, topic: str) -> None:
        """Unload the topic: the broker closes its producers and consumers (they reconnect)."""
        self.request("PUT", f"{topic_path(topic)}/unload")

    def delete_topic(self, topic: str, *, force: bool = True, partitioned: bool = False) -> None:
        suffix = "/partitions" if partitioned else ""
        self.request("DELETE", f"{topic_path(topic)}{suffix}", params={"force": str(force).lower()})

    def topic_stats(self, topic: str, *, partitioned: bool = False) -> dict[str, Any]:
        suffix = "partitioned-stats" if partitioned else "stats"
        result: dict[str, Any] = self.request("GET", f"{topic_path(topic)}/{suffix}")
        return result

    def partitions_with_producer(self, topic: str, partitions: int, name: str) -> set[int]:
        """The partitions of ``topic`` (of ``partitions``) on which the broker shows a producer
        called ``name`` (one never loaded has none)."""
        found: set[int] = set()
        for i in range(partitions):
            try:
                stats = self.topic_stats(f"{topic}-partition-{i}")
            except AdminError as exc:
                if exc.status == 404:  # never loaded: no producer there
                    continue
                raise
            if any(p.get("producerName") == name for p in stats.get("publishers", [])):
                found.add(i)
        return found

    def lookup(self, topic: str) -> dict[str, Any]:
        """HTTP topic lookup (makes the broker own the topic's bundle); returns broker URLs."""
        result: dict[str, Any] = self.request(
            "GET", f"topic/{topic_path(topic)}", prefix="lookup/v2"
        )
        return result

    def grant_namespace_permission(
        self, role: str, actions: list[str], namespace: str = "public/default"
    ) -> None:
        """Grant ``role`` the ``actions`` ("produce", "consume", ...) on a whole namespace."""
        self.request("POST", f"namespaces/{namespace}/permissions/{role}", actions)

    def list_topics(self, namespace: str = "public/default") -> list[str]:
        result: list[str] = self.request("GET", f"persistent/{namespace}")
        return result
