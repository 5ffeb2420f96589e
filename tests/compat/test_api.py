"""The surface of ``streamwire.compat`` against the official module's (no broker needed):
every public name of ``pulsar`` and ``pulsar.exceptions`` is there (or is in the documented
list of what is not), the enums have the official members and numbers, exceptions map from
streamwire's classes to the official ones, message ids behave as the official ids, and the
``Record`` DSL gives the same definition text as the official one."""

from __future__ import annotations

import enum
import json
import logging
import time
import uuid
from types import ModuleType
from typing import Any

import pytest
import streamwire
import streamwire.compat as compat
from streamwire import exceptions as sw

from tests.compat.programs import make_records

# Official names streamwire.compat does not provide (docs/from-pulsar-client.md says why).
NOT_PROVIDED = {
    # typing re-exports and submodules of the official package
    "Callable", "List", "Optional", "Tuple", "Union", "logging", "re", "timedelta",
    "functions", "tableview",
    # Pulsar Functions, TableView, service discovery, raw C++ bindings
    "Function", "Context", "SerDe", "IdentitySerDe", "PickleSerDe", "TableView",
    "MessageBatch",
    "BatchReceivePolicy", "KeySharedPolicy", "DeadLetterPolicyBuilder",
}  # fmt: skip


def test_every_official_name(official_pulsar: ModuleType) -> None:
    official = {n for n in dir(official_pulsar) if not n.startswith("_")}
    missing = sorted(n for n in official - NOT_PROVIDED if not hasattr(compat, n))
    assert missing == []
    assert all(hasattr(compat, n) for n in compat.__all__)
    names = {n for n in dir(official_pulsar.exceptions) if not n.startswith("_")}
    assert sorted(names - set(compat.exceptions.__all__)) == []


@pytest.mark.parametrize(
    "name",
    [
        "Result", "CompressionType", "ConsumerType", "InitialPosition", "PartitionsRoutingMode",
        "BatchingType", "LoggerLevel", "KeySharedMode", "ProducerAccessMode",
        "RegexSubscriptionMode", "ConsumerCryptoFailureAction",
    ],
)  # fmt: skip
def test_enums_match(name: str, official_pulsar: ModuleType) -> None:
    theirs = getattr(official_pulsar, name)
    ours = getattr(compat, name)
    assert {k: int(v) for k, v in theirs.__members__.items()} == {
        k: int(v) for k, v in ours.__members__.items()
    }
    first = next(iter(theirs.__members__))
    assert str(getattr(ours, first)) == str(getattr(theirs, first))


@pytest.mark.parametrize(
    ("error", "official"),
    [
        (sw.OperationTimeoutError("t"), "Timeout"),
        (sw.ConnectError("c"), "ConnectError"),
        (sw.DisconnectedError("d"), "NotConnected"),
        (sw.AuthenticationError("a"), "AuthenticationError"),
        (sw.AuthorizationError("a"), "AuthorizationError"),
        (sw.TopicNotFoundError("t"), "TopicNotFound"),
        (sw.TopicNotFoundError("s", server_code=12), "SubscriptionNotFound"),
        (sw.ProducerBusyError("p"), "ProducerBusy"),
        (sw.ProducerFencedError("p"), "ProducerFenced"),
        (sw.ConsumerBusyError("c"), "ConsumerBusy"),
        (sw.IncompatibleSchemaError("i"), "IncompatibleSchema"),
        (sw.TopicTerminatedError("t"), "TopicTerminated"),
        (sw.MessageTooBigError("m"), "MessageTooBig"),
        (sw.ProducerQueueFullError("producer queue is full"), "ProducerQueueIsFull"),
        (sw.ProducerQueueFullError("client memory limit reached"), "MemoryBufferIsFull"),
        (sw.AlreadyClosedError("a"), "AlreadyClosed"),
        (sw.ConfigError("c"), "InvalidConfiguration"),
        (sw.NotSupportedError("n"), "OperationNotSupported"),
        (sw.ChecksumError("c"), "ChecksumError"),
        (sw.TransactionConflictError("t"), "TransactionConflict"),
        (sw.ServerError("s", server_code=1), "BrokerMetadataError"),
        (sw.ServerError("s", server_code=14), "TooManyLookupRequestException"),
        (sw.StreamwireError("?"), "UnknownError"),
    ],
)
def test_errors_map_to_official_names(
    error: sw.StreamwireError, official: str, official_pulsar: ModuleType
) -> None:
    out = compat.exceptions.translate(error)
    assert type(out).__name__ == official
    assert isinstance(out, compat.PulsarException) and out.__cause__ is error
    assert str(out) == str(error)
    # the same Result number as the official client's exception of that name
    assert int(compat.exceptions.result_of(error)) == int(getattr(official_pulsar.Result, official))


def test_schema_errors_stay_value_errors() -> None:
    error = sw.SchemaError("does not fit")
    assert compat.exceptions.translate(error) is error


def test_message_ids(official_pulsar: ModuleType) -> None:
    theirs = official_pulsar.MessageId(2, 10, 20, 3)
    ours = compat.MessageId(2, 10, 20, 3)
    assert str(ours) == str(theirs) == "(10,20,2,3)"
    assert ours.serialize() == theirs.serialize()
    back = compat.MessageId.deserialize(theirs.serialize())
    assert (back.ledger_id(), back.entry_id(), back.partition(), back.batch_index()) == (
        10, 20, 2, 3,
    )  # fmt: skip
    assert back == ours and hash(back) == hash(ours) and back < compat.MessageId(2, 10, 21, 0)
    for end in ("earliest", "latest"):
        assert (
            getattr(compat.MessageId, end).serialize()
            == getattr(official_pulsar.MessageId, end).serialize()
        )
    assert compat.MessageId.wrap(streamwire.MessageId(1, 2)).native == streamwire.MessageId(1, 2)


def test_record_definitions_match(official_pulsar: ModuleType) -> None:
    theirs = make_records(official_pulsar)
    ours = make_records(compat)
    assert json.dumps(ours[2].schema(), indent=True) == json.dumps(theirs[2].schema(), indent=True)
    assert (
        compat.schema.AvroSchema(ours[2])._native.definition.decode()
        == official_pulsar.schema.AvroSchema(theirs[2]).schema_info().schema()
    )

    class Sorted(compat.schema.Record):
        _sorted_fields = True
        b = compat.schema.Long(required=True)
        a = compat.schema.Array(compat.schema.Map(compat.schema.String()))

    class SortedTheirs(official_pulsar.schema.Record):
        _sorted_fields = True
        b = official_pulsar.schema.Long(required=True)
        a = official_pulsar.schema.Array(
            official_pulsar.schema.Map(official_pulsar.schema.String())
        )

    mine, other = Sorted.schema(), SortedTheirs.schema()
    other["name"] = "Sorted"
    assert mine == other


def test_record_behaviour(official_pulsar: ModuleType) -> None:
    color, point, reading = make_records(compat)
    r = reading(name=b"bytes become str", color="red", where={"x": 1.0, "y": 2.0}, level=1)
    assert r.name == "bytes become str" and r.color is color.red
    assert isinstance(r.where, point) and r.where.y == 2.0
    assert r.ok is False and r.note == "none"
    with pytest.raises(TypeError):
        reading(count="not an int")
    with pytest.raises(AttributeError):
        r.undeclared = 1
    assert reading(level=1) == reading(level=1) and reading(level=1) != reading(level=2)
    assert issubclass(color, enum.Enum)


def test_unsupported_options_say_what(official_pulsar: ModuleType) -> None:
    with pytest.raises(NotImplementedError, match="Athenz"):
        compat.AuthenticationAthenz("{}")
    with pytest.raises(NotImplementedError, match="shared library"):
        compat.Authentication("libauth.so", "")
    with pytest.raises(NotImplementedError, match="ServiceInfoProvider"):
        compat.ServiceInfoProvider()
    # The official argument checks (and their ValueError) for the failover objects.
    with pytest.raises(ValueError, match="primary"):
        compat.AutoClusterFailover(None, [])  # type: ignore[arg-type]
    # Options are checked before anything connects: no broker is needed for these.
    client = compat.Client("pulsar://127.0.0.1:1")
    try:
        with pytest.raises(compat.InvalidConfiguration, match="crypto_key_reader"):
            client.create_producer("t", encryption_key="k")
        with pytest.raises(ValueError, match="consumer_type"):
            client.subscribe("t", "s", consumer_type="shared")  # type: ignore[arg-type]
    finally:
        client.close()


def test_authentication_maps_to_client_options() -> None:
    assert compat.AuthenticationToken("tok").client_options() == {"auth_token": "tok"}
    tls = compat.AuthenticationTLS("c.pem", "k.pem").client_options()
    assert (tls["tls_cert_file"], tls["tls_key_file"], tls["auth"].method_name) == (
        "c.pem", "k.pem", "tls",
    )  # fmt: skip
    basic = compat.AuthenticationBasic(auth_params_string='{"username": "u", "password": "p"}')
    assert basic.client_options()["auth"].get_data() == b"u:p"
    other = compat.AuthenticationBasic("u", "p", method="oms3.0").client_options()["auth"]
    assert other.method_name == "oms3.0"
    oauth = compat.AuthenticationOauth2(
        '{"issuer_url": "http://127.0.0.1:1", "client_id": "i", "private_key": "/nope.json"}'
    )
    assert oauth.client_options()["auth"].method_name == "token"
    with pytest.raises(ValueError):
        compat.AuthenticationToken(42)  # type: ignore[arg-type]


def test_avro_bytes_match_the_official_encoding(official_pulsar: ModuleType) -> None:
    """Avro binary is deterministic: a record encodes to the same bytes with both modules,
    and each decodes the other's into its own class."""
    from tests.compat.programs import _reading

    theirs_classes, ours_classes = make_records(official_pulsar), make_records(compat)
    theirs = official_pulsar.schema.AvroSchema(theirs_classes[2])
    ours = compat.schema.AvroSchema(ours_classes[2])
    for i in range(3):
        data = ours.encode(_reading(ours_classes, i))
        assert data == theirs.encode(_reading(theirs_classes, i))
        back = ours.decode(data)
        assert isinstance(back, ours_classes[2]) and back == _reading(ours_classes, i)
    plain = compat.schema.AvroSchema(None, theirs_classes[1].schema())
    assert plain.decode(plain.encode({"x": 1.0, "y": None})) == {"x": 1.0, "y": None}
    with pytest.raises(ValueError, match="dict"):
        plain.encode(ours_classes[1](x=1.0))


def test_native_objects_are_reachable(lite_broker: Any) -> None:
    client = compat.Client(lite_broker.service_url)
    try:
        topic = f"persistent://public/default/native-{uuid.uuid4().hex}"
        producer = client.create_producer(topic)
        consumer = client.subscribe(topic, "s")
        reader = client.create_reader(topic, compat.MessageId.earliest)
        assert isinstance(client.native, streamwire.Client)
        assert isinstance(producer.native, streamwire.Producer)
        assert isinstance(consumer.native, streamwire.Consumer)
        assert isinstance(reader.native, streamwire.Reader)
        assert producer.native.topic == consumer.native.topic == topic
    finally:
        client.close()


def test_a_receipt_that_fails_reaches_the_callback_as_a_result(
    lite_broker: Any, fault_proxy: Any
) -> None:
    """A send that fails after ``send_async`` returned (its send timeout passes while the
    broker's connection forwards nothing) reaches the callback through the dispatcher as the
    official client reports it: a ``Result`` and an empty id."""
    proxy = fault_proxy(lite_broker)
    results: list[tuple[Any, str]] = []
    client = compat.Client(proxy.url)
    try:
        producer = client.create_producer(
            f"persistent://public/default/late-{uuid.uuid4().hex}", send_timeout_millis=500
        )
        proxy.stall(True)
        producer.send_async(b"x", lambda res, msg_id: results.append((res, str(msg_id))))
        deadline = time.monotonic() + 20
        while not results and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proxy.stall(False)
        client.close()
    assert results == [(compat.Result.Timeout, "(-1,-1,-1,-1)")]


def test_an_error_level_logger_does_not_silence_warnings_for_the_process(lite_broker: Any) -> None:
    """``Client(logger=ConsoleLogger(Error))`` filters the console at ERROR, but the
    ``streamwire`` logger keeps passing warnings to the process's other handlers (it failed the
    Pravega retry test, whose warning was dropped after the compat tests had run)."""
    target = logging.getLogger("streamwire")
    before = target.level
    # A logger of the test's own; its forwarding handler is removed again at the end.
    mine = logging.getLogger(f"compat-debug-{uuid.uuid4().hex}")
    mine.setLevel(logging.DEBUG)
    mine.propagate = False
    try:
        target.setLevel(logging.WARNING)
        client = compat.Client(
            lite_broker.service_url, logger=compat.ConsoleLogger(compat.LoggerLevel.Error)
        )
        client.close()
        assert target.getEffectiveLevel() == logging.WARNING
        client = compat.Client(lite_broker.service_url, logger=mine)
        client.close()
        assert target.getEffectiveLevel() == logging.DEBUG, "a lower level is still honoured"
    finally:
        target.setLevel(before)
        for handler in [h for h in target.handlers if getattr(h, "target", None) is mine]:
            target.removeHandler(handler)
