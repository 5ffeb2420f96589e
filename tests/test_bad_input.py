"""Bad input to the public Python API: each case raises its documented typed exception, and the
same client keeps working afterwards.

``CASES`` is the single source of ``docs/bad-input.md`` (``scripts/bad_input_table.py`` writes it;
``test_docs_table_is_current`` fails when the file is out of date).

Negative counts and sizes are a ``ConfigError`` naming the option (not Python's bare
``OverflowError`` from argument conversion); a negative ``event_time`` is an
``InvalidArgumentError``.
"""

from __future__ import annotations

import datetime
import pickle
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import streamwire
from streamwire import (
    AlreadyClosedError,
    AuthenticationError,
    AuthOauth2,
    CryptoError,
    ForkedProcessError,
    MessageId,
    MessageTooBigError,
    NotSupportedError,
    metrics,
)

from tests.aio.bad_cases import AIO_CASES
from tests.aio.bad_cases_pravega import AIO_PRAVEGA_CASES
from tests.aio.bad_cases_tank import AIO_TANK_CASES
from tests.bad_runner import CFG, INV, TYP, BadCase, check_forked, check_raises, ids, local
from tests.cli.bad_cases import CLI_CASES
from tests.peers.lite import PulsarLite
from tests.pravega.bad_cases import PRAVEGA_CASES
from tests.schemas.bad_cases import SCHEMA_CASES
from tests.spark.bad_cases import SPARK_SCHEMA_CASES
from tests.tank.bad_cases import TANK_CASES
from tests.transactions.bad_cases import TXN_CASES

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "bad-input.md"


@dataclass
class Ctx:
    """Live handles for the cases; ``closed_*`` were closed before any case ran."""

    url: str
    topic: str
    client: streamwire.Client
    producer: streamwire.Producer
    consumer: streamwire.Consumer
    reader: streamwire.Reader
    closed_client: streamwire.Client
    closed_producer: streamwire.Producer
    closed_consumer: streamwire.Consumer
    closed_reader: streamwire.Reader
    listener_consumer: streamwire.Consumer
    listener_reader: streamwire.Reader
    table_view: streamwire.TableView
    closed_table_view: streamwire.TableView


Case = BadCase[Ctx, object]


def _fresh(c: object) -> str:
    return f"persistent://public/default/bad-{uuid.uuid4().hex}"


MB6 = b"x" * (6 * 1024 * 1024)


class _PrivateOnly:
    """A key reader object with a private side only (a producer needs the public one)."""

    def get_private_key(self, key_name: str, metadata: dict[str, str]) -> bytes:
        return b""


class _RaisingKeys:
    """A key reader object whose key store is unreachable."""

    def get_public_key(self, key_name: str, metadata: dict[str, str]) -> bytes:
        raise OSError("key store unreachable")


# A public key on secp256k1 (openssl ecparam -name secp256k1): EC keys work on P-256, P-384
# and P-521 only.
_SECP256K1_PUBLIC = (
    b"-----BEGIN PUBLIC KEY-----\n"
    b"MFYwEAYHKoZIzj0CAQYFK4EEAAoDQgAEjZPQhYXy/RmL8Eij6MtsnKjZjUm1wIo2\n"
    b"h1z/jLMvG6/Ht7faS9R1BikpPtzTaGRO2uQqdkuDYZ1KvA9FRaTKyA==\n"
    b"-----END PUBLIC KEY-----\n"
)

CASES: list[Case] = [
    # -- Client ---------------------------------------------------------------------------------
    Case("Client()", "service_url not a str (123)", TYP, lambda c: streamwire.Client(123)),  # type: ignore[arg-type]
    Case("Client()", "empty service_url", CFG, lambda c: streamwire.Client("")),
    Case("Client()", "wrong scheme (tank://)", CFG, lambda c: streamwire.Client("tank://x:1")),
    Case("Client()", "HTTP URL with a path", CFG, lambda c: streamwire.Client("http://x:1/admin")),
    Case(
        "Client()",
        "listener_name with a comma",
        CFG,
        lambda c: streamwire.Client("pulsar://x:1", listener_name="a,b"),
    ),
    Case("Client()", "no host (pulsar://)", CFG, lambda c: streamwire.Client("pulsar://")),
    Case(
        "AutoClusterFailover()",
        "no secondary ([])",
        CFG,
        lambda c: streamwire.AutoClusterFailover(c.url, []),
    ),
    Case(
        "AutoClusterFailover()",
        "secondary a str, not a list",
        TYP,
        lambda c: streamwire.AutoClusterFailover(c.url, c.url),  # type: ignore[arg-type]
    ),
    Case(
        "AutoClusterFailover()",
        "failover_threshold=0",
        CFG,
        lambda c: streamwire.AutoClusterFailover(c.url, [c.url], failover_threshold=0),
    ),
    Case(
        "AutoClusterFailover()",
        "switch_back_threshold=-1",
        CFG,
        lambda c: streamwire.AutoClusterFailover(c.url, [c.url], switch_back_threshold=-1),
    ),
    Case(
        "AutoClusterFailover()",
        "check_interval=0",
        CFG,
        lambda c: streamwire.AutoClusterFailover(c.url, [c.url], check_interval=0),
    ),
    Case(
        "AutoClusterFailover()",
        "a secondary neither a URL nor a ServiceInfo (42)",
        TYP,
        lambda c: streamwire.AutoClusterFailover(c.url, [42]),  # type: ignore[list-item]
    ),
    Case(
        "ServiceInfo()",
        "auth_token and auth_token_file both",
        CFG,
        lambda c: streamwire.ServiceInfo(c.url, auth_token="t", auth_token_file="f"),
    ),
    Case(
        "ServiceInfo()",
        "tls_cert_file without tls_key_file",
        CFG,
        lambda c: streamwire.ServiceInfo(c.url, tls_cert_file="/c.pem"),
    ),
    Case(
        "ServiceInfo()",
        "auth_token not a str or callable (42)",
        TYP,
        lambda c: streamwire.ServiceInfo(c.url, auth_token=42),  # type: ignore[arg-type]
    ),
    Case(
        "Client()",
        "AutoClusterFailover with a ServiceInfo whose CA file is missing",
        CFG,
        lambda c: streamwire.Client(
            streamwire.AutoClusterFailover(
                c.url, [streamwire.ServiceInfo(c.url, tls_trust_certs_file="/nonexistent.pem")]
            )
        ),
    ),
    Case(
        "Client()",
        "AutoClusterFailover with a bad secondary URL (kafka://)",
        CFG,
        lambda c: streamwire.Client(streamwire.AutoClusterFailover(c.url, ["kafka://x:1"])),
    ),
    Case(
        "Client()",
        "operation_timeout=-1",
        CFG,
        lambda c: streamwire.Client(c.url, operation_timeout=-1),
    ),
    Case(
        "Client()",
        "operation_timeout=NaN",
        CFG,
        lambda c: streamwire.Client(c.url, operation_timeout=float("nan")),
    ),
    Case(
        "Client()",
        "operation_timeout not a number ('1')",
        TYP,
        lambda c: streamwire.Client(c.url, operation_timeout="1"),  # type: ignore[arg-type]
    ),
    Case(
        "Client()",
        "connection_timeout=0",
        CFG,
        lambda c: streamwire.Client(c.url, connection_timeout=0),
    ),
    Case(
        "Client()",
        "keepalive_interval=-1",
        CFG,
        lambda c: streamwire.Client(c.url, keepalive_interval=-1),
    ),
    Case("Client()", "io_threads=0", CFG, lambda c: streamwire.Client(c.url, io_threads=0)),
    Case(
        "Client()",
        "memory_limit=-1",
        CFG,
        lambda c: streamwire.Client(c.url, memory_limit=-1),
    ),
    Case(
        "Client()",
        "auth_token not str/callable (5)",
        TYP,
        lambda c: streamwire.Client(c.url, auth_token=5),  # type: ignore[arg-type]
    ),
    Case(
        "Client()",
        "message_listener_threads=0",
        CFG,
        lambda c: streamwire.Client(c.url, message_listener_threads=0),
    ),
    Case(
        "Client()",
        "message_listener_threads=-1",
        CFG,
        lambda c: streamwire.Client(c.url, message_listener_threads=-1),
    ),
    Case(
        "Client()",
        "message_listener_threads not an int (1.5)",
        TYP,
        lambda c: streamwire.Client(c.url, message_listener_threads=1.5),  # type: ignore[arg-type]
    ),
    # -- AuthOauth2 (streamwire.auth) ------------------------------------------------------------
    Case(
        "AuthOauth2()",
        "issuer_url not http(s)",
        CFG,
        lambda c: AuthOauth2("ftp://x", client_id="a", client_secret="b"),
    ),
    Case("AuthOauth2()", "no credentials", CFG, lambda c: AuthOauth2("http://127.0.0.1:1")),
    Case(
        "AuthOauth2()",
        "private_key and client_id both",
        CFG,
        lambda c: AuthOauth2("http://127.0.0.1:1", private_key="/k.json", client_id="a"),
    ),
    Case(
        "AuthOauth2()",
        "timeout=0",
        CFG,
        lambda c: AuthOauth2("http://127.0.0.1:1", client_id="a", client_secret="b", timeout=0),
    ),
    Case(
        "AuthOauth2()",
        "expiry_adjustment=1.5",
        CFG,
        lambda c: AuthOauth2(
            "http://127.0.0.1:1", client_id="a", client_secret="b", expiry_adjustment=1.5
        ),
    ),
    Case(
        "AuthOauth2()",
        "tls_trust_certs_file missing",
        CFG,
        lambda c: AuthOauth2(
            "https://127.0.0.1:1", client_id="a", client_secret="b", tls_trust_certs_file="/no/ca"
        ),
    ),
    Case("AuthOauth2.from_params()", "not JSON", CFG, lambda c: AuthOauth2.from_params("{x")),
    Case(
        "AuthOauth2.from_params()",
        "unsupported type",
        CFG,
        lambda c: AuthOauth2.from_params('{"type": "jwt_bearer", "issuer_url": "http://x"}'),
    ),
    Case(
        "AuthOauth2.from_params()",
        "no issuer_url",
        CFG,
        lambda c: AuthOauth2.from_params('{"private_key": "/k.json"}'),
    ),
    Case(
        "AuthOauth2.get_data()",
        "issuer unreachable",
        AuthenticationError,
        lambda c: AuthOauth2("http://127.0.0.1:1", client_id="a", client_secret="b").get_data(),
    ),
    Case(
        "AuthOauth2.get_data()",
        "private_key file missing",
        AuthenticationError,
        lambda c: AuthOauth2("http://127.0.0.1:1", private_key="/nonexistent/k.json").get_data(),
    ),
    Case(
        "Client()",
        "tls_trust_certs_file missing",
        CFG,
        lambda c: streamwire.Client(
            "pulsar+ssl://127.0.0.1:1", tls_trust_certs_file="/nonexistent/ca.pem"
        ),
    ),
    Case("Client", "pickled", TYP, lambda c: pickle.dumps(c.client)),
    Case("configure()", "io_threads=0", CFG, lambda c: streamwire.configure(0)),
    Case("configure()", "io_threads=-1", CFG, lambda c: streamwire.configure(-1)),
    # -- Lookup ---------------------------------------------------------------------------------
    Case("Lookup.partitions()", "empty topic", INV, lambda c: c.client.lookup().partitions("")),
    Case(
        "Lookup.partitions()",
        "topic None",
        TYP,
        lambda c: c.client.lookup().partitions(None),  # type: ignore[arg-type]
    ),
    Case(
        "Lookup.partitions()",
        "bad domain (foo://)",
        INV,
        lambda c: c.client.lookup().partitions("foo://a/b/c"),
    ),
    Case(
        "Lookup.topics_of_namespace()",
        "no tenant/ ('bad')",
        INV,
        lambda c: c.client.lookup().topics_of_namespace("bad"),
    ),
    # -- end-to-end encryption ------------------------------------------------------------------
    Case(
        "Client.create_producer()",
        "encryption_keys without a crypto_key_reader",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), encryption_keys=["k"]),
    ),
    Case(
        "Client.create_producer()",
        "crypto_key_reader without encryption_keys",
        CFG,
        lambda c: c.client.create_producer(
            _fresh(c), crypto_key_reader=streamwire.CryptoKeyReader(public_key=b"x")
        ),
    ),
    Case(
        "Client.create_producer()",
        "crypto_key_reader not a CryptoKeyReader",
        TYP,
        lambda c: c.client.create_producer(
            _fresh(c),
            encryption_keys=["k"],
            crypto_key_reader="key.pem",  # type: ignore[arg-type]
        ),
    ),
    Case(
        "Client.create_producer()",
        "crypto_key_reader object without get_public_key",
        TYP,
        lambda c: c.client.create_producer(
            _fresh(c),
            encryption_keys=["k"],
            crypto_key_reader=_PrivateOnly(),  # type: ignore[arg-type]
        ),
    ),
    Case(
        "Client.create_producer()",
        "crypto_key_reader object whose get_public_key raises",
        CryptoError,
        lambda c: c.client.create_producer(
            _fresh(c), encryption_keys=["k"], crypto_key_reader=_RaisingKeys()
        ),
    ),
    Case(
        "Client.create_producer()",
        "encryption_keys whose public key the reader lacks",
        CryptoError,
        lambda c: c.client.create_producer(
            _fresh(c),
            encryption_keys=["k"],
            crypto_key_reader=streamwire.CryptoKeyReader(private_key=b"x"),
        ),
    ),
    Case(
        "Client.create_producer()",
        "a public key that is not PEM",
        CryptoError,
        lambda c: c.client.create_producer(
            _fresh(c),
            encryption_keys=["k"],
            crypto_key_reader=streamwire.CryptoKeyReader(public_key=b"not a key"),
        ),
    ),
    Case(
        "Client.create_producer()",
        "an EC public key on an unsupported curve (secp256k1)",
        CryptoError,
        lambda c: c.client.create_producer(
            _fresh(c),
            encryption_keys=["k"],
            crypto_key_reader=streamwire.CryptoKeyReader(public_key=_SECP256K1_PUBLIC),
        ),
    ),
    Case(
        "Client.subscribe()",
        "crypto_failure_action='explode'",
        CFG,
        lambda c: c.client.subscribe(_fresh(c), "s", crypto_failure_action="explode"),
    ),
    Case(
        "Client.create_reader()",
        "crypto_failure_action='FAIL' (lower case only)",
        CFG,
        lambda c: c.client.create_reader(_fresh(c), crypto_failure_action="FAIL"),
    ),
    Case(
        "CryptoKeyReader()",
        "public_key_path that does not exist",
        CFG,
        lambda c: streamwire.CryptoKeyReader(public_key_path="/nonexistent/key.pem"),
    ),
    Case(
        "CryptoKeyReader()",
        "public_key not bytes or str (123)",
        TYP,
        lambda c: streamwire.CryptoKeyReader(public_key=123),  # type: ignore[arg-type]
    ),
    Case(
        "CryptoKeyReader()",
        "both public_key_path and public_key",
        CFG,
        lambda c: streamwire.CryptoKeyReader(public_key_path="a.pem", public_key=b"x"),
    ),
    Case(
        "CryptoKeyReader()",
        "keys value not a (public, private) tuple",
        TYP,
        lambda c: streamwire.CryptoKeyReader(keys={"k": "pem"}),  # type: ignore[dict-item]
    ),
    # -- create_producer ------------------------------------------------------------------------
    Case("Client.create_producer()", "empty topic", INV, lambda c: c.client.create_producer("")),
    Case(
        "Client.create_producer()",
        "topic not a str (123)",
        TYP,
        lambda c: c.client.create_producer(123),  # type: ignore[arg-type]
    ),
    Case(
        "Client.create_producer()",
        "bad domain (foo://a/b/c)",
        INV,
        lambda c: c.client.create_producer("foo://a/b/c"),
    ),
    Case(
        "Client.create_producer()",
        "too many parts (persistent://a/b/c/d/e)",
        INV,
        lambda c: c.client.create_producer("persistent://a/b/c/d/e"),
    ),
    Case(
        "Client.create_producer()",
        "NUL in topic",
        INV,
        lambda c: c.client.create_producer("a\x00b"),
    ),
    Case(
        "Client.create_producer()",
        "batching_max_messages=0",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), batching_max_messages=0),
    ),
    Case(
        "Client.create_producer()",
        "batching_max_messages=-1",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), batching_max_messages=-1),
    ),
    Case(
        "Client.create_producer()",
        "batching_max_bytes=0",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), batching_max_bytes=0),
    ),
    Case(
        "Client.create_producer()",
        "batching_max_delay=-1",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), batching_max_delay=-1),
    ),
    Case(
        "Client.create_producer()",
        "batching_type='by_key' (not 'default' or 'key_based')",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), batching_type="by_key"),
    ),
    Case(
        "Client.create_producer()",
        "batching_type='key_based' with batching=False",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), batching=False, batching_type="key_based"),
    ),
    Case(
        "Client.create_producer()",
        "lazy_start_partitioned_producers=True with access_mode='exclusive'",
        CFG,
        lambda c: c.client.create_producer(
            _fresh(c), lazy_start_partitioned_producers=True, access_mode="exclusive"
        ),
    ),
    Case(
        "Client.create_producer()",
        "message_router not callable (5)",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), message_router=5),  # type: ignore[arg-type]
    ),
    Case(
        "Client.create_producer()",
        "max_pending_messages=0",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), max_pending_messages=0),
    ),
    Case(
        "Client.create_producer()",
        "max_pending_messages=-1",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), max_pending_messages=-1),
    ),
    Case(
        "Client.create_producer()",
        "send_timeout=-1",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), send_timeout=-1),
    ),
    Case(
        "Client.create_producer()",
        "compression='bogus'",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), compression="bogus"),
    ),
    Case(
        "Client.create_producer()",
        "access_mode='bogus'",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), access_mode="bogus"),
    ),
    Case(
        "Client.create_producer()",
        "routing='bogus'",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), routing="bogus"),
    ),
    Case(
        "Client.create_producer()",
        "properties value not str",
        TYP,
        lambda c: c.client.create_producer(_fresh(c), properties={"a": 1}),  # type: ignore[dict-item]
    ),
    # -- Producer -------------------------------------------------------------------------------
    Case("Producer.send()", "value not bytes (123)", TYP, lambda c: c.producer.send(123)),  # type: ignore[arg-type]
    Case("Producer.send()", "value None", TYP, lambda c: c.producer.send(None)),  # type: ignore[arg-type]
    Case(
        "Producer.send()",
        "key not str (5)",
        TYP,
        lambda c: c.producer.send(b"x", key=5),  # type: ignore[arg-type]
    ),
    Case(
        "Producer.send()",
        "properties value not str",
        TYP,
        lambda c: c.producer.send(b"x", properties={"a": 1}),  # type: ignore[dict-item]
    ),
    Case(
        "Producer.send()",
        "event_time=-1",
        INV,
        lambda c: c.producer.send(b"x", event_time=-1),
    ),
    Case(
        "Producer.send()",
        "sequence_id=-1",
        INV,
        lambda c: c.producer.send(b"x", sequence_id=-1),
    ),
    Case(
        "Producer.send()",
        "deliver_after=-1",
        INV,
        lambda c: c.producer.send(b"x", deliver_after=-1),
    ),
    Case(
        "Producer.send()",
        "deliver_after=timedelta(seconds=-1)",
        INV,
        lambda c: c.producer.send(b"x", deliver_after=datetime.timedelta(seconds=-1)),
    ),
    Case(
        "Producer.send()",
        "deliver_after not a number or timedelta ('soon')",
        TYP,
        lambda c: c.producer.send(b"x", deliver_after="soon"),  # type: ignore[arg-type]
    ),
    Case(
        "Producer.send()",
        "deliver_at a naive datetime",
        INV,
        lambda c: c.producer.send(b"x", deliver_at=datetime.datetime(2030, 1, 1)),
    ),
    Case(
        "Producer.send()",
        "6 MiB value (limit 5 MiB, no chunking)",
        MessageTooBigError,
        lambda c: c.producer.send(MB6),
    ),
    Case(
        "Producer.send_async()",
        "callback not callable (5)",
        TYP,
        lambda c: c.producer.send_async(b"x", 5),  # type: ignore[arg-type]
    ),
    Case(
        "Producer.send_async()",
        "6 MiB value",
        MessageTooBigError,
        lambda c: c.producer.send_async(MB6).result(timeout=30),
    ),
    Case("Producer.send_many()", "not a sequence (5)", TYP, lambda c: c.producer.send_many(5)),
    Case("Producer.send_many()", "element not bytes", TYP, lambda c: c.producer.send_many([1])),
    Case(
        "Producer.send_many()",
        "an Arrow column of integers (a polars Series, via the PyCapsule interface)",
        TYP,
        lambda c: c.producer.send_many(__import__("polars").Series([1, 2])),
    ),
    Case(
        "Producer.send_many()",
        "keys longer than values",
        INV,
        lambda c: c.producer.send_many([b"a"], keys=["a", "b"]),
    ),
    Case(
        "Producer.send_many()",
        "ids=False, not a sequence (5)",
        TYP,
        lambda c: c.producer.send_many(5, ids=False),
    ),
    Case(
        "Producer.send_many()",
        "ids=False, element not bytes",
        TYP,
        lambda c: c.producer.send_many([b"a", 1], ids=False),
    ),
    Case(
        "Producer.send_many()",
        "ids=False, a 6 MiB value among small ones (nothing is sent)",
        MessageTooBigError,
        lambda c: c.producer.send_many([b"a", MB6], ids=False),
    ),
    Case(
        "Producer.send_many()",
        'ids="no" (not a bool)',
        TYP,
        lambda c: c.producer.send_many([b"a"], ids="no"),  # type: ignore[call-overload]
    ),
    Case(
        "SendFuture.result()",
        "timeout=-1",
        INV,
        lambda c: c.producer.send_async(b"x").result(timeout=-1),
    ),
    # -- subscribe / Consumer -------------------------------------------------------------------
    Case("Client.subscribe()", "empty topic", INV, lambda c: c.client.subscribe("", "s")),
    Case("Client.subscribe()", "empty topic list", INV, lambda c: c.client.subscribe([], "s")),
    Case(
        "Client.subscribe()",
        "empty subscription_name",
        CFG,
        lambda c: c.client.subscribe(_fresh(c), ""),
    ),
    Case(
        "Client.subscribe()",
        "subscription_name not str (5)",
        TYP,
        lambda c: c.client.subscribe(_fresh(c), 5),  # type: ignore[arg-type]
    ),
    Case(
        "Client.subscribe()",
        "subscription_type='bogus'",
        CFG,
        lambda c: c.client.subscribe(_fresh(c), "s", subscription_type="bogus"),
    ),
    Case(
        "Client.subscribe()",
        "initial_position='bogus'",
        CFG,
        lambda c: c.client.subscribe(_fresh(c), "s", initial_position="bogus"),
    ),
    Case(
        "Client.subscribe()",
        "receiver_queue_size=0",
        CFG,
        lambda c: c.client.subscribe(_fresh(c), "s", receiver_queue_size=0),
    ),
    Case(
        "Client.subscribe()",
        "receiver_queue_size=-1",
        CFG,
        lambda c: c.client.subscribe(_fresh(c), "s", receiver_queue_size=-1),
    ),
    Case(
        "Client.subscribe()",
        "ack_timeout=-1",
        CFG,
        lambda c: c.client.subscribe(_fresh(c), "s", ack_timeout=-1),
    ),
    Case(
        "Client.subscribe()",
        "dead_letter_policy max_redeliver_count=-1",
        CFG,
        lambda c: c.client.subscribe(
            _fresh(c), "s", dead_letter_policy={"max_redeliver_count": -1}
        ),
    ),
    Case(
        "Client.subscribe()",
        "message_listener not callable (5)",
        TYP,
        lambda c: c.client.subscribe(_fresh(c), "s", message_listener=5),  # type: ignore[arg-type]
    ),
    Case(
        "Client.create_reader()",
        "reader_listener not callable ('x')",
        TYP,
        lambda c: c.client.create_reader(c.topic, reader_listener="x"),  # type: ignore[arg-type]
    ),
    Case(
        "Consumer.receive()",
        "consumer with a message_listener",
        CFG,
        lambda c: c.listener_consumer.receive(timeout=0.1),
    ),
    Case(
        "Consumer.receive_many()",
        "consumer with a message_listener",
        CFG,
        lambda c: c.listener_consumer.receive_many(10, timeout=0.1),
    ),
    Case(
        "Reader.read_next()",
        "reader with a reader_listener",
        CFG,
        lambda c: c.listener_reader.read_next(timeout=0.1),
    ),
    Case(
        "Consumer.pause_message_listener()",
        "consumer without a message_listener",
        CFG,
        lambda c: c.consumer.pause_message_listener(),
    ),
    Case(
        "Client.subscribe()",
        "dead_letter_policy initial_subscription_name=''",
        CFG,
        lambda c: c.client.subscribe(
            _fresh(c),
            "s",
            dead_letter_policy={"max_redeliver_count": 1, "initial_subscription_name": ""},
        ),
    ),
    Case(
        "Client.subscribe()",
        "regex_subscription_mode='bogus'",
        CFG,
        lambda c: c.client.subscribe(_fresh(c), "s", regex_subscription_mode="bogus"),
    ),
    Case(
        "Client.subscribe()",
        "key_shared_policy allow_out_of_order_delivery not a bool (1)",
        CFG,
        lambda c: c.client.subscribe(
            _fresh(c),
            "s",
            subscription_type="key_shared",
            key_shared_policy={"allow_out_of_order_delivery": 1},
        ),
    ),
    Case(
        "Client.subscribe()",
        "key_shared_policy unknown key",
        CFG,
        lambda c: c.client.subscribe(
            _fresh(c), "s", subscription_type="key_shared", key_shared_policy={"ordered": True}
        ),
    ),
    Case(
        "Client.subscribe()",
        "allow_out_of_order_delivery on an exclusive subscription",
        CFG,
        lambda c: c.client.subscribe(
            _fresh(c), "s", key_shared_policy={"allow_out_of_order_delivery": True}
        ),
    ),
    Case("Consumer.receive()", "timeout=-1", INV, lambda c: c.consumer.receive(timeout=-1)),
    Case(
        "Consumer.receive()",
        "timeout not a number ('a')",
        TYP,
        lambda c: c.consumer.receive(timeout="a"),  # type: ignore[arg-type]
    ),
    Case(
        "Consumer.receive_many()",
        "max_messages=0",
        INV,
        lambda c: c.consumer.receive_many(0, timeout=0.1),
    ),
    Case(
        "Consumer.receive_many()",
        "max_messages=-1",
        INV,
        lambda c: c.consumer.receive_many(-1, timeout=0.1),
    ),
    Case(
        "Consumer.receive_many()",
        "max_bytes=0",
        INV,
        lambda c: c.consumer.receive_many(10, timeout=0.1, max_bytes=0),
    ),
    Case(
        "Consumer.receive_arrow()",
        "max_bytes=-1",
        INV,
        lambda c: c.consumer.receive_arrow(10, timeout=0.1, max_bytes=-1),
    ),
    Case(
        "Reader.read_many()",
        "max_bytes=0",
        INV,
        lambda c: c.reader.read_many(10, timeout=0.1, max_bytes=0),
    ),
    Case(
        "Consumer.acknowledge()",
        "not a Message/MessageId ('x')",
        TYP,
        lambda c: c.consumer.acknowledge("x"),  # type: ignore[arg-type]
    ),
    Case(
        "Consumer.acknowledge_cumulative()",
        "not a Message/MessageId (5)",
        TYP,
        lambda c: c.consumer.acknowledge_cumulative(5),  # type: ignore[arg-type]
    ),
    Case("Consumer.seek()", "not a MessageId/int ('x')", TYP, lambda c: c.consumer.seek("x")),  # type: ignore[arg-type]
    Case(
        "Consumer.acknowledge()",
        "txn not a Transaction ('x')",
        TYP,
        lambda c: c.consumer.acknowledge(MessageId.earliest, txn="x"),  # type: ignore[arg-type]
    ),
    Case(
        "Consumer.acknowledge_cumulative()",
        "txn not a Transaction (5)",
        TYP,
        lambda c: c.consumer.acknowledge_cumulative(MessageId.earliest, txn=5),  # type: ignore[arg-type]
    ),
    # -- Transactions (the Apache-only rows are in tests/transactions/bad_cases.py) --------------
    Case("Client.transaction()", "timeout=0", INV, lambda c: c.client.transaction(timeout=0)),
    Case(
        "Client.resume_transaction()",
        "id not a tuple",
        TypeError,
        lambda c: c.client.resume_transaction("x"),  # type: ignore[arg-type]
    ),
    Case(
        "Client.resume_transaction()",
        "timeout=0",
        INV,
        lambda c: c.client.resume_transaction((0, 1), timeout=0),
    ),
    Case(
        "Client.resume_transaction()",
        "a broker without transactions (pulsar-lite)",
        NotSupportedError,
        lambda c: c.client.resume_transaction((0, 1)),
    ),
    Case("Client.transaction()", "timeout=-1", INV, lambda c: c.client.transaction(timeout=-1)),
    Case(
        "Client.transaction()",
        "timeout=NaN",
        INV,
        lambda c: c.client.transaction(timeout=float("nan")),
    ),
    Case(
        "Client.transaction()",
        "timeout not a number ('1')",
        TYP,
        lambda c: c.client.transaction(timeout="1"),  # type: ignore[arg-type]
    ),
    Case(
        "Client.transaction()",
        "a broker without transactions (pulsar-lite)",
        NotSupportedError,
        lambda c: c.client.transaction(),
    ),
    Case(
        "Producer.send()",
        "txn not a Transaction ('x')",
        TYP,
        lambda c: c.producer.send(b"x", txn="x"),  # type: ignore[arg-type]
        note="nothing is sent",
    ),
    Case(
        "Producer.send_many()",
        "txn not a Transaction ('x')",
        TYP,
        lambda c: c.producer.send_many([b"x"], txn="x"),  # type: ignore[arg-type]
        note="nothing is sent",
    ),
    Case(
        "Producer.send_async()",
        "txn not a Transaction (5)",
        TYP,
        lambda c: c.producer.send_async(b"x", txn=5),  # type: ignore[arg-type]
        note="nothing is sent",
    ),
    # -- TableView -----------------------------------------------------------------------------
    Case(
        "Client.create_table_view()",
        "empty topic",
        INV,
        lambda c: c.client.create_table_view(""),
    ),
    Case(
        "Client.create_table_view()",
        "schema not a streamwire.schema object ('x')",
        TYP,
        lambda c: c.client.create_table_view(_fresh(c), schema="x"),  # type: ignore[arg-type]
    ),
    Case(
        "Client.create_table_view()",
        "subscription_name=''",
        CFG,
        lambda c: c.client.create_table_view(_fresh(c), subscription_name=""),
    ),
    Case(
        "Client.create_table_view()",
        "receiver_queue_size=0",
        CFG,
        lambda c: c.client.create_table_view(_fresh(c), receiver_queue_size=0),
    ),
    Case(
        "Client.create_table_view()",
        "auto_update_partitions_interval=-1",
        CFG,
        lambda c: c.client.create_table_view(_fresh(c), auto_update_partitions_interval=-1),
    ),
    Case(
        "Client.create_table_view()",
        "auto_update_partitions_interval=nan",
        CFG,
        lambda c: c.client.create_table_view(
            _fresh(c), auto_update_partitions_interval=float("nan")
        ),
    ),
    Case(
        "Client.create_table_view()",
        "auto_update_partitions_interval=1e30",
        CFG,
        lambda c: c.client.create_table_view(_fresh(c), auto_update_partitions_interval=1e30),
        note="a period that long would overflow the timer; 0 means never",
    ),
    Case(
        "Client.create_table_view()",
        "auto_update_partitions_interval='1'",
        TYP,
        lambda c: c.client.create_table_view(
            _fresh(c),
            auto_update_partitions_interval="1",  # type: ignore[arg-type]
        ),
    ),
    Case(
        "Client.create_producer()",
        "auto_update_partitions_interval=-1",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), auto_update_partitions_interval=-1),
    ),
    Case(
        "Client.create_producer()",
        "auto_update_partitions_interval=inf",
        CFG,
        lambda c: c.client.create_producer(_fresh(c), auto_update_partitions_interval=float("inf")),
        note="0 means never",
    ),
    Case(
        "Client.subscribe()",
        "auto_update_partitions_interval=-1",
        CFG,
        lambda c: c.client.subscribe(_fresh(c), "s", auto_update_partitions_interval=-1),
    ),
    Case(
        "Client.subscribe()",
        "auto_update_partitions_interval=nan",
        CFG,
        lambda c: c.client.subscribe(_fresh(c), "s", auto_update_partitions_interval=float("nan")),
    ),
    Case(
        "Client.create_reader()",
        "auto_update_partitions_interval=1e30",
        CFG,
        lambda c: c.client.create_reader(_fresh(c), auto_update_partitions_interval=1e30),
    ),
    Case(
        "Client.create_producer()",
        "auto_update_partitions_interval='1'",
        TYP,
        lambda c: c.client.create_producer(
            _fresh(c),
            auto_update_partitions_interval="1",  # type: ignore[arg-type]
        ),
    ),
    Case(
        "Client.create_table_view()",
        "schema given positionally",
        TYP,
        lambda c: c.client.create_table_view(_fresh(c), "sub"),  # type: ignore[misc]
        note="every option is keyword-only: the official client's second parameter is "
        "subscription_name, ours would silently differ",
    ),
    Case(
        "TableView.get()",
        "key not a str (5)",
        TYP,
        lambda c: c.table_view.get(5),  # type: ignore[arg-type]
    ),
    Case(
        "TableView.for_each()",
        "callback not callable (5)",
        TYP,
        lambda c: c.table_view.for_each(5),  # type: ignore[arg-type]
    ),
    Case(
        "TableView.for_each_and_listen()",
        "callback not callable (None)",
        TYP,
        lambda c: c.table_view.for_each_and_listen(None),  # type: ignore[arg-type]
    ),
    Case(
        "TableView.listen()",
        "callback not callable ('x')",
        TYP,
        lambda c: c.table_view.listen("x"),  # type: ignore[arg-type]
    ),
    # -- Reader / MessageId ---------------------------------------------------------------------
    Case(
        "Client.create_reader()",
        "start_message_id='bogus'",
        CFG,
        lambda c: c.client.create_reader(_fresh(c), "bogus"),
    ),
    Case(
        "Client.create_reader()",
        "empty topic",
        INV,
        lambda c: c.client.create_reader("", MessageId.earliest),
    ),
    Case("Reader.read_next()", "timeout=-1", INV, lambda c: c.reader.read_next(timeout=-1)),
    Case(
        "Reader.read_many()",
        "max_messages=-1",
        INV,
        lambda c: c.reader.read_many(-1, timeout=0.1),
    ),
    Case(
        "MessageId.deserialize()",
        "garbage bytes",
        INV,
        lambda c: MessageId.deserialize(b"\xff\xff\xff"),
    ),
    Case(
        "MessageId.deserialize()",
        "str instead of bytes",
        TYP,
        lambda c: MessageId.deserialize("x"),  # type: ignore[arg-type]
    ),
    # -- streamwire.metrics ----------------------------------------------------------------------
    Case("metrics.serve()", 'port not an int ("9100")', TYP, lambda c: metrics.serve(port="9100")),  # type: ignore[arg-type]
    Case("metrics.serve()", "port=True", TYP, lambda c: metrics.serve(port=True)),
    Case("metrics.serve()", "port=70000", INV, lambda c: metrics.serve(port=70000)),
    Case("metrics.serve()", "host not a str (127)", TYP, lambda c: metrics.serve(host=127)),  # type: ignore[arg-type]
    Case("metrics.serve()", "empty host", INV, lambda c: metrics.serve(host="")),
    Case(
        "metrics.enable_opentelemetry()",
        "meter_provider not a MeterProvider",
        TYP,
        lambda c: metrics.enable_opentelemetry(meter_provider="x"),
    ),
    # -- closed handles -------------------------------------------------------------------------
    Case(
        "Producer.metrics()",
        "closed producer",
        AlreadyClosedError,
        lambda c: c.closed_producer.metrics(),
        "closed",
        "totals stay in `Client.metrics()`",
    ),
    Case(
        "Consumer.metrics()",
        "closed consumer",
        AlreadyClosedError,
        lambda c: c.closed_consumer.metrics(),
        "closed",
    ),
    Case(
        "Reader.metrics()",
        "closed reader",
        AlreadyClosedError,
        lambda c: c.closed_reader.metrics(),
        "closed",
    ),
    Case(
        "Client.metrics()",
        "closed client",
        AlreadyClosedError,
        lambda c: c.closed_client.metrics(),
        "closed",
    ),
    Case(
        "Producer.send()",
        "closed producer",
        AlreadyClosedError,
        lambda c: c.closed_producer.send(b"x"),
        "closed",
    ),
    Case(
        "Producer.send_async()",
        "closed producer",
        AlreadyClosedError,
        lambda c: c.closed_producer.send_async(b"x"),
        "closed",
    ),
    Case(
        "Producer.flush()",
        "closed producer",
        AlreadyClosedError,
        lambda c: c.closed_producer.flush(),
        "closed",
    ),
    Case(
        "Consumer.receive()",
        "closed consumer",
        AlreadyClosedError,
        lambda c: c.closed_consumer.receive(timeout=0.1),
        "closed",
    ),
    Case(
        "Consumer.acknowledge()",
        "closed consumer",
        AlreadyClosedError,
        lambda c: c.closed_consumer.acknowledge(MessageId(0, 0)),
        "closed",
    ),
    Case(
        "Reader.read_next()",
        "closed reader",
        AlreadyClosedError,
        lambda c: c.closed_reader.read_next(timeout=0.1),
        "closed",
    ),
    Case(
        "Client.create_producer()",
        "closed client",
        AlreadyClosedError,
        lambda c: c.closed_client.create_producer(c.topic),
        "closed",
    ),
    Case(
        "Client.transaction()",
        "closed client",
        AlreadyClosedError,
        lambda c: c.closed_client.transaction(),
        "closed",
    ),
    Case(
        "Client.subscribe()",
        "closed client",
        AlreadyClosedError,
        lambda c: c.closed_client.subscribe(c.topic, "x"),
        "closed",
    ),
    Case(
        "Client.create_reader()",
        "closed client",
        AlreadyClosedError,
        lambda c: c.closed_client.create_reader(c.topic, MessageId.earliest),
        "closed",
    ),
    Case(
        "Client.create_table_view()",
        "closed client",
        AlreadyClosedError,
        lambda c: c.closed_client.create_table_view(c.topic),
        "closed",
    ),
    Case(
        "TableView.get()",
        "closed table view",
        AlreadyClosedError,
        lambda c: c.closed_table_view.get("k"),
        "closed",
    ),
    Case(
        "TableView.items()",
        "closed table view",
        AlreadyClosedError,
        lambda c: c.closed_table_view.items(),
        "closed",
    ),
    Case(
        "TableView.for_each_and_listen()",
        "closed table view",
        AlreadyClosedError,
        lambda c: c.closed_table_view.for_each_and_listen(print),
        "closed",
    ),
    Case(
        "Client.lookup()",
        "closed client",
        AlreadyClosedError,
        lambda c: c.closed_client.lookup(),
        "closed",
    ),
    # -- use after fork (run in a forked child) -------------------------------------------------
    Case(
        "Producer.send()",
        "parent's producer in a forked child",
        ForkedProcessError,
        lambda c: c.producer.send(b"x"),
        "fork",
    ),
    Case(
        "Consumer.receive()",
        "parent's consumer in a forked child",
        ForkedProcessError,
        lambda c: c.consumer.receive(timeout=0.1),
        "fork",
    ),
    Case(
        "Reader.read_next()",
        "parent's reader in a forked child",
        ForkedProcessError,
        lambda c: c.reader.read_next(timeout=0.1),
        "fork",
    ),
    Case(
        "TableView.get()",
        "parent's table view in a forked child",
        ForkedProcessError,
        lambda c: c.table_view.get("k"),
        "fork",
    ),
    Case(
        "Client.create_producer()",
        "parent's client in a forked child",
        ForkedProcessError,
        lambda c: c.client.create_producer(c.topic),
        "fork",
    ),
    Case(
        "Producer.metrics()",
        "parent's producer in a forked child",
        ForkedProcessError,
        lambda c: c.producer.metrics(),
        "fork",
    ),
    Case(
        "Lookup.partitions()",
        "parent's client in a forked child",
        ForkedProcessError,
        lambda c: c.client.lookup().partitions(c.topic),
        "fork",
    ),
]

GROUP_TITLES = {"input": "Wrong input", "closed": "Closed handles", "fork": "Use after fork"}


def _rows(cases: Sequence[BadCase[Any, Any]], group: str) -> list[str]:
    out = ["| Call | Input | Exception |", "| --- | --- | --- |"]
    for case in cases:
        if case.group != group:
            continue
        exc = f"`{case.expected.__name__}`"
        if case.expected.__module__ == "builtins":
            exc += " (built-in)"
        if case.note:
            exc += f" — {case.note}"
        inp = case.input.replace("|", "\\|")
        out.append(f"| `{case.call}` | {inp} | {exc} |")
    return [*out, ""]


def render_table(cases: list[Case] | None = None) -> str:
    """``docs/bad-input.md``: one Markdown table per group and protocol, generated from
    ``CASES`` (Pulsar), ``tests/tank/bad_cases.py`` (TANK) and ``tests/pravega/bad_cases.py``
    (Pravega)."""
    cases = CASES if cases is None else cases
    out = [
        "# Bad input: what the Python API raises",
        "",
        "Generated by `scripts/bad_input_table.py` from `tests/test_bad_input.py` (`CASES`)",
        "`tests/tank/bad_cases.py`, `tests/pravega/bad_cases.py`, `tests/aio/bad_cases.py` and",
        "`tests/aio/bad_cases_tank.py`, `tests/aio/bad_cases_pravega.py`,",
        "`tests/transactions/bad_cases.py`, `tests/schemas/bad_cases.py`,",
        "`tests/spark/bad_cases.py`;",
        "the tests run every row",
        "(and check the client still",
        "works after it) and fail when this file is out of date. Exceptions are in",
        "`streamwire.exceptions` unless marked built-in.",
        "",
    ]
    for group, title in GROUP_TITLES.items():
        out += [f"## {title}", "", *_rows(cases, group)]
    out += ["## Transactions (Apache Pulsar, `tests/transactions/bad_cases.py`)", ""]
    out += _rows(TXN_CASES, "input")
    out += [
        "## Schemas (`streamwire.schema`, `schema=`; run on Apache Pulsar)",
        "",
        *_rows(SCHEMA_CASES, "input"),
    ]
    out += [
        "## Spark typed columns (`valueSchema`, `send_many` of a RecordBatch; Apache Pulsar,",
        "`tests/spark/bad_cases.py`)",
        "",
        *_rows(SPARK_SCHEMA_CASES, "input"),
    ]
    out += ["## TANK (`streamwire.tank`)", ""]
    for group, title in GROUP_TITLES.items():
        out += [f"### {title}", "", *_rows(TANK_CASES, group)]
    out += ["## Pravega (`streamwire.pravega`)", ""]
    for group, title in GROUP_TITLES.items():
        out += [f"### {title}", "", *_rows(PRAVEGA_CASES, group)]
    out += ["## asyncio (`streamwire.aio`)", ""]
    for group, title in GROUP_TITLES.items():
        if group != "fork":
            out += [f"### {title}", "", *_rows(AIO_CASES, group)]
    out += ["## asyncio TANK (`streamwire.aio.tank`)", ""]
    for group, title in GROUP_TITLES.items():
        if group in ("input", "closed"):
            out += [f"### {title}", "", *_rows(AIO_TANK_CASES, group)]
    out += ["## asyncio Pravega (`streamwire.aio.pravega`)", ""]
    for group, title in GROUP_TITLES.items():
        if group in ("input", "closed"):
            out += [f"### {title}", "", *_rows(AIO_PRAVEGA_CASES, group)]
    out += [
        "## Command line (`streamwire`)",
        "",
        "| Command | Input | Exit status and message |",
        "| --- | --- | --- |",
    ]
    for cli in CLI_CASES:
        cmd = " ".join(cli.args).replace("|", "\\|")
        out.append(f"| `streamwire {cmd}` | {cli.input} | {cli.code}: `{cli.says}` |")
    out.append("")
    return "\n".join(out)


@pytest.fixture(scope="module")
def ctx(lite_broker: PulsarLite) -> Iterator[Ctx]:
    url = lite_broker.service_url
    topic = f"persistent://public/default/bad-{uuid.uuid4().hex}"
    with streamwire.Client(url, operation_timeout=10) as client:
        closed_client = streamwire.Client(url)
        closed_client.close()
        closed_producer = client.create_producer(topic)
        closed_producer.close()
        closed_consumer = client.subscribe(topic, "closed")
        closed_consumer.close()
        closed_reader = client.create_reader(topic, MessageId.earliest)
        closed_reader.close()
        # A topic of its own with a message in it (pulsar-lite answers the last message id
        # of an empty topic with an error, to the official client's TableView too).
        tv_topic = _fresh(None)
        with client.create_producer(tv_topic) as p:
            p.send(b"v", key="k")
        closed_table_view = client.create_table_view(tv_topic)
        closed_table_view.close()
        yield Ctx(
            url=url,
            topic=topic,
            client=client,
            producer=client.create_producer(topic),
            consumer=client.subscribe(topic, "live", initial_position="earliest"),
            reader=client.create_reader(topic, MessageId.earliest),
            closed_client=closed_client,
            closed_producer=closed_producer,
            closed_consumer=closed_consumer,
            closed_reader=closed_reader,
            listener_consumer=client.subscribe(
                _fresh(None), "l", message_listener=lambda cons, m: cons.acknowledge(m)
            ),
            listener_reader=client.create_reader(topic, reader_listener=lambda r, m: None),
            table_view=client.create_table_view(tv_topic),
            closed_table_view=closed_table_view,
        )


def still_works(c: Ctx) -> None:
    """The same client, producer and consumer work after the bad call."""
    assert c.client.lookup().partitions(c.topic) == 0
    payload = uuid.uuid4().bytes
    c.producer.send(payload)
    for _ in range(1000):
        msg = c.consumer.receive(timeout=10)
        c.consumer.acknowledge(msg)
        if msg.data() == payload:
            return
    raise AssertionError("the message sent after the bad call never arrived")


LOCAL = local(CASES)


@pytest.mark.parametrize("case", LOCAL, ids=ids(LOCAL))
def test_bad_input(ctx: Ctx, case: Case) -> None:
    check_raises(case, ctx, still_works)


def test_use_after_fork(ctx: Ctx) -> None:
    """In a forked child every parent handle raises ForkedProcessError; a new client works."""

    def child_works() -> None:
        with streamwire.Client(ctx.url, operation_timeout=10) as child_client:
            child_client.create_producer(ctx.topic).send(b"from the child")

    check_forked(CASES, ctx, child_works, still_works)


def test_docs_table_is_current() -> None:
    assert DOC.exists(), "run: .venv/bin/python scripts/bad_input_table.py"
    assert DOC.read_text() == render_table(), (
        "docs/bad-input.md is out of date; run: .venv/bin/python scripts/bad_input_table.py"
    )
