"""The few Pulsar admin REST calls the Data Source's driver makes (``admin.url`` option).

The binary protocol cannot list a partition's ledgers, and exact admission control across
ledgers needs them (see ``streamwire.spark.ledgers``): ``GET /admin/v2/{domain}/{tenant}/{ns}/
{topic}/internalStats`` answers the ledger list. Only the driver calls this, once per partition
per trigger. urllib only: no HTTP dependency for one GET. The service URL's token is sent as a
bearer token; ``https://`` admin URLs use the same CA bundle as ``pulsar+ssl://``.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from streamwire.exceptions import ConfigError, ServerError
from streamwire.spark.config import ClientConfig, get_option

__all__ = ["AdminConfig", "AdminError", "internal_stats"]


class AdminError(ServerError):
    """The admin API refused a call or could not be reached (message names the URL)."""


@dataclass(frozen=True)
class AdminConfig:
    """Picklable: where the admin API is and how to authenticate."""

    url: str
    token: Optional[str] = field(default=None, repr=False)
    token_file: Optional[str] = None
    trust_certs_file: Optional[str] = None
    timeout: float = 30.0

    @classmethod
    def from_options(
        cls, options: Mapping[str, str], client: ClientConfig
    ) -> Optional[AdminConfig]:
        """``admin.url`` (``adminUrl``, ``admin_url``), or None when it is not given.

        No default is derived from the service URL: the web port of a cluster is not a function
        of its broker port (the test brokers pick both at random), and a guessed URL that
        answers would be worse than none."""
        url = get_option(options, "admin.url", "adminUrl", "admin_url")
        if not url:
            return None
        text = str(url).rstrip("/")
        if not text.startswith(("http://", "https://")):
            raise ConfigError(
                f"streamwire: admin.url must be an http:// or https:// URL, got {text!r}"
            )
        return cls(
            url=text,
            token=client.auth_token,
            token_file=client.auth_token_file,
            trust_certs_file=client.tls_trust_certs_file,
            timeout=client.operation_timeout,
        )

    def _token(self) -> Optional[str]:
        if self.token:
            return self.token
        if self.token_file:
            with open(self.token_file) as f:
                return f.read().strip()
        return None

    def get(self, path: str) -> Any:
        # Imported here: option parsing on every planner worker needs none of this.
        import ssl
        import urllib.error
        import urllib.request

        url = f"{self.url}/admin/v2/{path}"
        headers = {"Accept": "application/json"}
        token = self._token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        context = None
        if url.startswith("https://"):
            context = ssl.create_default_context(cafile=self.trust_certs_file)
        request = urllib.request.Request(url, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=context) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            body = exc.read().decode(errors="replace")[:300]
            raise AdminError(
                f"admin API: GET {url} -> HTTP {exc.code}: {body}", retriable=exc.code >= 500
            ) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise AdminError(f"admin API: GET {url} failed: {exc}", retriable=True) from None


def topic_path(topic: str) -> str:
    """``persistent://t/ns/x-partition-0`` -> ``persistent/t/ns/x-partition-0`` (quoted)."""
    domain, _, rest = topic.partition("://")
    tenant, ns, name = rest.split("/", 2)
    return f"{domain}/{tenant}/{ns}/{urllib.parse.quote(name, safe='')}"


def internal_stats(admin: AdminConfig, topic: str) -> dict[str, Any]:
    """The managed ledger's internal stats of one partition (``ledgers``: id, entries, size)."""
    result = admin.get(f"{topic_path(topic)}/internalStats")
    if not isinstance(result, dict):
        raise AdminError(f"admin API: unexpected internalStats answer for {topic}: {result!r}")
    return result
