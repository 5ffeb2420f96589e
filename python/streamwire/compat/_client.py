"""``Client``, ``Producer``, ``Consumer`` and ``Reader`` with the official client's
signatures, units and callback shapes, each a thin layer over the streamwire object of the
same name (no second client: every call goes to the engine).

The translation is mechanical and kept in one place per call: milliseconds become seconds,
enums become streamwire's option strings, the official option objects (``_options``) become
streamwire's mappings, messages and ids are wrapped in objects with the official method
spellings (``_message``), and a streamwire error becomes the official exception class
(``compat.exceptions.translate``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NoReturn, Optional, Union

import streamwire
from streamwire import _native
from streamwire.compat import _enums
from streamwire.compat._auth import Authentication
from streamwire.compat._common import (
    _check_type,
    _check_type_or_none,
    _missing,
    _raise,
    official_errors,
)
from streamwire.compat._consumer import Consumer, Reader
from streamwire.compat._enums import (
    BatchingType,
    CompressionType,
    ConsumerCryptoFailureAction,
    ConsumerType,
    InitialPosition,
    PartitionsRoutingMode,
    ProducerAccessMode,
    RegexSubscriptionMode,
)
from streamwire.compat._message import (
    Message,
    MessageId,
    _native_id,
    _Position,
    _RoutedMessage,
)
from streamwire.compat._options import (
    _DEFAULT_BATCH,
    AutoClusterFailover,
    ConsumerBatchReceivePolicy,
    ConsumerDeadLetterPolicy,
    ConsumerKeySharedPolicy,
    CryptoKeyReader,
    _install_logger,
)
from streamwire.compat._producer import Producer
from streamwire.compat._table_view import TableView
from streamwire.compat.schema import BytesSchema, Schema
from streamwire.exceptions import StreamwireError

__all__ = ["Client", "Consumer", "Producer", "Reader"]


class Client:
    """The official ``pulsar.Client`` on a :class:`streamwire.Client`.

    Durations are given as the official client takes them (``operation_timeout_seconds``,
    ``connection_timeout_ms``). ``concurrent_lookup_requests``, ``log_conf_file_path``,
    ``stats_interval_in_seconds`` and ``use_tls`` are accepted and have no effect (the last
    two have none in the official client either; TLS follows the URL's scheme).

    Args:
        service_url: ``pulsar://host:port`` or ``pulsar+ssl://host:port`` (a str), or an
            :class:`AutoClusterFailover` (clusters to move between).
        authentication: an ``Authentication*`` object, or None (with failover: for the
            clusters whose ``ServiceInfo`` has none of its own).
        operation_timeout_seconds: the timeout of lookups, subscribes, closes... (int seconds).
        io_threads: the engine's I/O threads for the process (the first setting takes
            effect); the official default, 1, leaves the engine's own default.
        message_listener_threads: the threads that run message and reader listeners.
        concurrent_lookup_requests: accepted, no effect.
        log_conf_file_path: accepted, no effect.
        stats_interval_in_seconds: accepted, no effect.
        use_tls: accepted, no effect (the URL's scheme decides).
        tls_trust_certs_file_path: the CA bundle to trust (default: the system's).
        tls_allow_insecure_connection: accept any broker certificate (dangerous).
        tls_validate_hostname: accepted; the host name is verified unless
            ``tls_allow_insecure_connection`` is True (docs/from-pulsar-client.md).
        logger: a ``logging.Logger``, ``ConsoleLogger`` or ``FileLogger`` for streamwire's log.
        connection_timeout_ms: the TCP/TLS connect timeout in milliseconds.
        listener_name: the broker listener to look topics up for.
        tls_private_key_file_path: the client key for TLS authentication.
        tls_certificate_file_path: the client certificate for TLS authentication.
    """

    def __init__(
        self,
        service_url: Union[str, AutoClusterFailover],
        authentication: Optional[Authentication] = None,
        operation_timeout_seconds: int = 30,
        io_threads: int = 1,
        message_listener_threads: int = 1,
        concurrent_lookup_requests: int = 50000,
        log_conf_file_path: Optional[str] = None,
        stats_interval_in_seconds: int = 600,
        use_tls: bool = False,
        tls_trust_certs_file_path: Optional[str] = None,
        tls_allow_insecure_connection: bool = False,
        tls_validate_hostname: bool = False,
        logger: Any = None,
        connection_timeout_ms: int = 10000,
        listener_name: Optional[str] = None,
        tls_private_key_file_path: Optional[str] = None,
        tls_certificate_file_path: Optional[str] = None,
    ) -> None:
        if not isinstance(service_url, (str, AutoClusterFailover)):
            raise ValueError(
                "Argument service_url is expected to be of type 'str' or 'AutoClusterFailover'"
            )
        target: Union[str, streamwire.AutoClusterFailover] = (
            service_url if isinstance(service_url, str) else service_url._native
        )
        _check_type_or_none(Authentication, authentication, "authentication")
        _check_type(int, operation_timeout_seconds, "operation_timeout_seconds")
        _check_type(int, connection_timeout_ms, "connection_timeout_ms")
        _check_type(int, io_threads, "io_threads")
        _check_type(int, message_listener_threads, "message_listener_threads")
        _check_type_or_none(str, tls_trust_certs_file_path, "tls_trust_certs_file_path")
        _check_type(bool, tls_allow_insecure_connection, "tls_allow_insecure_connection")
        _check_type(bool, tls_validate_hostname, "tls_validate_hostname")
        options: dict[str, Any] = {}
        if authentication is not None:
            options.update(authentication.client_options())
        if tls_certificate_file_path is not None:
            options["tls_cert_file"] = tls_certificate_file_path
        if tls_private_key_file_path is not None:
            options["tls_key_file"] = tls_private_key_file_path
        if logger is not None:
            _install_logger(logger)
        try:
            # tls_validate_hostname=False (the official default) does not turn verification
            # off here: streamwire verifies the broker's host name unless the connection is
            # explicitly insecure (see docs/from-pulsar-client.md).
            self._client = streamwire.Client(
                target,
                operation_timeout=float(operation_timeout_seconds),
                connection_timeout=connection_timeout_ms / 1000.0,
                # The official default (1) is the C++ client's tuning: it leaves streamwire's
                # engine at its own default rather than pinning the process to one I/O thread.
                io_threads=None if io_threads == 1 else io_threads,
                message_listener_threads=message_listener_threads,
                tls_trust_certs_file=tls_trust_certs_file_path,
                tls_allow_insecure_connection_DANGEROUS=tls_allow_insecure_connection,
                listener_name=listener_name,
                **options,
            )
        except StreamwireError as e:
            _raise(e)

    @property
    def native(self) -> streamwire.Client:
        """The underlying :class:`streamwire.Client`."""
        return self._client

    def create_producer(
        self,
        topic: str,
        producer_name: Optional[str] = None,
        schema: Schema = BytesSchema(),  # noqa: B008  (the official signature)
        initial_sequence_id: Optional[int] = None,
        send_timeout_millis: int = 30000,
        compression_type: CompressionType = CompressionType.NONE,
        max_pending_messages: int = 1000,
        max_pending_messages_across_partitions: int = 50000,
        block_if_queue_full: bool = False,
        batching_enabled: bool = False,
        batching_max_messages: int = 1000,
        batching_max_allowed_size_in_bytes: int = 128 * 1024,
        batching_max_publish_delay_ms: int = 10,
        chunking_enabled: bool = False,
        message_routing_mode: PartitionsRoutingMode = PartitionsRoutingMode.RoundRobinDistribution,
        lazy_start_partitioned_producers: bool = False,
        properties: Optional[dict[str, str]] = None,
        batching_type: BatchingType = BatchingType.Default,
        encryption_key: Optional[str] = None,
        crypto_key_reader: Optional[CryptoKeyReader] = None,
        access_mode: ProducerAccessMode = ProducerAccessMode.Shared,
        message_router: Optional[Callable[[Any, int], int]] = None,
    ) -> Producer:
        """A producer on ``topic`` (the official defaults: no batching, a queue of 1000 that
        fails rather than blocks when full).

        Args:
            topic: the topic name.
            producer_name: a name for the producer (default: the broker picks one).
            schema: a ``pulsar.schema`` schema (default ``BytesSchema()``).
            initial_sequence_id: the sequence id before the first message's.
            send_timeout_millis: how long a message may wait for the broker's receipt (ms).
            compression_type: a ``CompressionType``.
            max_pending_messages: the producer's queue of unacknowledged messages.
            max_pending_messages_across_partitions: accepted, no effect.
            block_if_queue_full: wait for room (True) or fail the send (False).
            batching_enabled: batch messages.
            batching_max_messages: messages per batch at most.
            batching_max_allowed_size_in_bytes: bytes per batch at most.
            batching_max_publish_delay_ms: how long a batch may wait to fill (ms).
            chunking_enabled: split messages larger than the broker's limit.
            message_routing_mode: a ``PartitionsRoutingMode``.
            lazy_start_partitioned_producers: connect each partition on its first message.
            properties: the producer's metadata (str to str).
            batching_type: a ``BatchingType``.
            encryption_key: the key name to encrypt every message for (end-to-end encryption).
            crypto_key_reader: a ``CryptoKeyReader`` with the public key.
            access_mode: a ``ProducerAccessMode``.
            message_router: ``fn(msg, num_partitions) -> int`` for ``CustomPartition``; ``msg``
                has ``partition_key()`` only.
        """
        _check_type(str, topic, "topic")
        _check_type_or_none(str, producer_name, "producer_name")
        _check_type(Schema, schema, "schema")
        _check_type_or_none(int, initial_sequence_id, "initial_sequence_id")
        _check_type(int, send_timeout_millis, "send_timeout_millis")
        _check_type(CompressionType, compression_type, "compression_type")
        _check_type(int, max_pending_messages, "max_pending_messages")
        _check_type(bool, block_if_queue_full, "block_if_queue_full")
        _check_type(bool, batching_enabled, "batching_enabled")
        _check_type(int, batching_max_messages, "batching_max_messages")
        _check_type(int, batching_max_allowed_size_in_bytes, "batching_max_allowed_size_in_bytes")
        _check_type(int, batching_max_publish_delay_ms, "batching_max_publish_delay_ms")
        _check_type(bool, chunking_enabled, "chunking_enabled")
        _check_type_or_none(dict, properties, "properties")
        _check_type(BatchingType, batching_type, "batching_type")
        _check_type(PartitionsRoutingMode, message_routing_mode, "message_routing_mode")
        _check_type(ProducerAccessMode, access_mode, "access_mode")
        _check_type_or_none(str, encryption_key, "encryption_key")
        _check_type_or_none(CryptoKeyReader, crypto_key_reader, "crypto_key_reader")
        if batching_enabled and chunking_enabled:
            raise ValueError("Batching and chunking of messages can't be enabled together.")
        router: Optional[Callable[[Optional[str], int], int]] = None
        if message_router is not None:
            user_router = message_router

            def router(key: Optional[str], n: int) -> int:
                return int(user_router(_RoutedMessage(key), n))

        try:
            producer = self._client.create_producer(
                topic,
                producer_name=producer_name,
                batching=batching_enabled,
                batching_max_messages=batching_max_messages,
                batching_max_bytes=batching_max_allowed_size_in_bytes,
                batching_max_delay=batching_max_publish_delay_ms / 1000.0,
                batching_type=_enums.BATCHING[batching_type],
                compression=_enums.COMPRESSION[compression_type],
                max_pending_messages=max_pending_messages,
                block_if_queue_full=block_if_queue_full,
                send_timeout=send_timeout_millis / 1000.0,
                # The official client ignores 0 (it tests the value for truth); so does this.
                initial_sequence_id=initial_sequence_id or None,
                access_mode=_enums.ACCESS[access_mode],
                routing=_enums.ROUTING[message_routing_mode],
                message_router=router,
                lazy_start_partitioned_producers=lazy_start_partitioned_producers,
                chunking=chunking_enabled,
                properties=properties,
                schema=schema._native,
                encryption_keys=[encryption_key] if encryption_key else None,
                crypto_key_reader=crypto_key_reader._for_producer() if crypto_key_reader else None,
            )
        except StreamwireError as e:
            _raise(e)
        return Producer(producer, schema)

    def subscribe(
        self,
        topic: Union[str, list[str], re.Pattern[str]],
        subscription_name: str,
        consumer_type: ConsumerType = ConsumerType.Exclusive,
        schema: Schema = BytesSchema(),  # noqa: B008
        message_listener: Optional[Callable[[Consumer, Message], object]] = None,
        receiver_queue_size: int = 1000,
        max_total_receiver_queue_size_across_partitions: int = 50000,
        consumer_name: Optional[str] = None,
        unacked_messages_timeout_ms: Optional[int] = None,
        broker_consumer_stats_cache_time_ms: int = 30000,
        negative_ack_redelivery_delay_ms: int = 60000,
        is_read_compacted: bool = False,
        properties: Optional[dict[str, str]] = None,
        pattern_auto_discovery_period: int = 60,
        initial_position: InitialPosition = InitialPosition.Latest,
        crypto_key_reader: Optional[CryptoKeyReader] = None,
        replicate_subscription_state_enabled: bool = False,
        max_pending_chunked_message: int = 10,
        auto_ack_oldest_chunked_message_on_queue_full: bool = False,
        start_message_id_inclusive: bool = False,
        batch_receive_policy: Optional[ConsumerBatchReceivePolicy] = None,
        key_shared_policy: Optional[ConsumerKeySharedPolicy] = None,
        batch_index_ack_enabled: bool = False,
        regex_subscription_mode: RegexSubscriptionMode = RegexSubscriptionMode.PersistentOnly,
        dead_letter_policy: Optional[ConsumerDeadLetterPolicy] = None,
        crypto_failure_action: ConsumerCryptoFailureAction = ConsumerCryptoFailureAction.FAIL,
    ) -> Consumer:
        """A consumer of ``topic`` (a name, a list of names or a compiled regex).

        Args:
            topic: a topic name, a list of them, or a compiled ``re`` pattern.
            subscription_name: the subscription.
            consumer_type: a ``ConsumerType``.
            schema: a ``pulsar.schema`` schema (default ``BytesSchema()``).
            message_listener: ``fn(consumer, msg)`` run for each message on a listener thread.
            receiver_queue_size: messages fetched ahead.
            max_total_receiver_queue_size_across_partitions: accepted, no effect.
            consumer_name: a name for the consumer.
            unacked_messages_timeout_ms: redeliver messages unacknowledged this long (ms).
            broker_consumer_stats_cache_time_ms: accepted, no effect.
            negative_ack_redelivery_delay_ms: delay before a negatively acknowledged message
                comes again (ms).
            is_read_compacted: read the compacted view of the topic.
            properties: not supported when non-empty (``NotImplementedError``).
            pattern_auto_discovery_period: how often a regex subscription looks for new
                topics (seconds).
            initial_position: an ``InitialPosition`` for a new subscription.
            crypto_key_reader: a ``CryptoKeyReader`` with the private key.
            replicate_subscription_state_enabled: replicate the subscription's position.
            max_pending_chunked_message: chunked messages assembled at once at most.
            auto_ack_oldest_chunked_message_on_queue_full: not supported when True.
            start_message_id_inclusive: not supported when True.
            batch_receive_policy: a ``ConsumerBatchReceivePolicy`` for ``batch_receive()``.
            key_shared_policy: a ``ConsumerKeySharedPolicy``.
            batch_index_ack_enabled: acknowledge single messages of a batch on the broker.
            regex_subscription_mode: a ``RegexSubscriptionMode``.
            dead_letter_policy: a ``ConsumerDeadLetterPolicy``.
            crypto_failure_action: a ``ConsumerCryptoFailureAction``: FAIL (held back,
                unacknowledged; ``receive`` raises ``CryptoError``), DISCARD or CONSUME
                (delivered encrypted, with ``encryption_context()``).
        """
        _check_type(str, subscription_name, "subscription_name")
        _check_type(ConsumerType, consumer_type, "consumer_type")
        _check_type(Schema, schema, "schema")
        _check_type(int, receiver_queue_size, "receiver_queue_size")
        _check_type_or_none(str, consumer_name, "consumer_name")
        _check_type_or_none(int, unacked_messages_timeout_ms, "unacked_messages_timeout_ms")
        _check_type(int, negative_ack_redelivery_delay_ms, "negative_ack_redelivery_delay_ms")
        _check_type(bool, is_read_compacted, "is_read_compacted")
        _check_type_or_none(dict, properties, "properties")
        _check_type(InitialPosition, initial_position, "initial_position")
        _check_type_or_none(
            ConsumerBatchReceivePolicy, batch_receive_policy, "batch_receive_policy"
        )
        _check_type_or_none(ConsumerKeySharedPolicy, key_shared_policy, "key_shared_policy")
        _check_type(RegexSubscriptionMode, regex_subscription_mode, "regex_subscription_mode")
        _check_type_or_none(ConsumerDeadLetterPolicy, dead_letter_policy, "dead_letter_policy")
        if not isinstance(topic, (str, list, re.Pattern)):
            raise ValueError(
                "Argument 'topic' is expected to be of a type between (str, list, re.pattern)"
            )
        _check_type_or_none(CryptoKeyReader, crypto_key_reader, "crypto_key_reader")
        _check_type(ConsumerCryptoFailureAction, crypto_failure_action, "crypto_failure_action")
        if properties:
            _missing("consumer properties (subscribe(properties=...))")
        if start_message_id_inclusive:
            _missing("start_message_id_inclusive on a consumer")
        if auto_ack_oldest_chunked_message_on_queue_full:
            _missing("auto_ack_oldest_chunked_message_on_queue_full")
        consumer = Consumer(
            schema, batch_receive_policy or _DEFAULT_BATCH, receiver_queue_size, consumer_type
        )
        listener: Optional[Callable[[_native.Consumer, _native.Message], object]] = None
        if message_listener is not None:
            user_listener = message_listener

            # The official listener gets the consumer object the program holds.
            def listener(_c: _native.Consumer, m: _native.Message) -> object:
                if consumer._after is not None and consumer._skip(m):
                    return None
                return user_listener(consumer, Message(m, schema))

        ack_timeout = None
        if unacked_messages_timeout_ms:
            ack_timeout = unacked_messages_timeout_ms / 1000.0
        try:
            consumer._h = self._client.subscribe(
                topic,
                subscription_name,
                subscription_type=_enums.SUBSCRIPTION[consumer_type],
                initial_position=_enums.POSITION[initial_position],
                receiver_queue_size=receiver_queue_size,
                consumer_name=consumer_name,
                negative_ack_redelivery_delay=negative_ack_redelivery_delay_ms / 1000.0,
                ack_timeout=ack_timeout,
                batch_index_ack=batch_index_ack_enabled,
                read_compacted=is_read_compacted,
                replicate_subscription_state=replicate_subscription_state_enabled,
                pattern_auto_discovery_period=float(pattern_auto_discovery_period),
                regex_subscription_mode=_enums.REGEX_MODE[regex_subscription_mode],
                dead_letter_policy=dead_letter_policy.policy() if dead_letter_policy else None,
                max_pending_chunked_messages=max_pending_chunked_message,
                key_shared_policy=key_shared_policy.policy() if key_shared_policy else None,
                schema=schema._native,
                message_listener=listener,
                crypto_key_reader=crypto_key_reader._for_consumer() if crypto_key_reader else None,
                crypto_failure_action=_enums.CRYPTO_FAILURE[crypto_failure_action],
            )
        except StreamwireError as e:
            _raise(e)
        return consumer

    def create_reader(
        self,
        topic: str,
        start_message_id: _Position,
        schema: Schema = BytesSchema(),  # noqa: B008
        reader_listener: Optional[Callable[[Reader, Message], object]] = None,
        receiver_queue_size: int = 1000,
        reader_name: Optional[str] = None,
        subscription_role_prefix: Optional[str] = None,
        is_read_compacted: bool = False,
        crypto_key_reader: Optional[CryptoKeyReader] = None,
        start_message_id_inclusive: bool = False,
        crypto_failure_action: ConsumerCryptoFailureAction = ConsumerCryptoFailureAction.FAIL,
    ) -> Reader:
        """A reader of ``topic`` from ``start_message_id``.

        Args:
            topic: the topic name.
            start_message_id: ``MessageId.earliest``, ``MessageId.latest`` or a message's id.
            schema: a ``pulsar.schema`` schema (default ``BytesSchema()``).
            reader_listener: ``fn(reader, msg)`` run for each message on a listener thread.
            receiver_queue_size: messages fetched ahead.
            reader_name: a name for the reader.
            subscription_role_prefix: not supported when given.
            is_read_compacted: not supported when True.
            crypto_key_reader: a ``CryptoKeyReader`` with the private key.
            start_message_id_inclusive: also deliver the message at ``start_message_id``.
            crypto_failure_action: a ``ConsumerCryptoFailureAction``: FAIL (held back,
                unacknowledged; ``receive`` raises ``CryptoError``), DISCARD or CONSUME
                (delivered encrypted, with ``encryption_context()``).
        """
        _check_type(str, topic, "topic")
        _check_type((MessageId, _native.MessageId), start_message_id, "start_message_id")
        _check_type(Schema, schema, "schema")
        _check_type(int, receiver_queue_size, "receiver_queue_size")
        _check_type_or_none(str, reader_name, "reader_name")
        _check_type(bool, start_message_id_inclusive, "start_message_id_inclusive")
        _check_type_or_none(CryptoKeyReader, crypto_key_reader, "crypto_key_reader")
        _check_type(ConsumerCryptoFailureAction, crypto_failure_action, "crypto_failure_action")
        if is_read_compacted:
            _missing("is_read_compacted on a reader")
        if subscription_role_prefix:
            _missing("subscription_role_prefix")
        reader = Reader(schema)
        listener: Optional[Callable[[_native.Reader, _native.Message], object]] = None
        if reader_listener is not None:
            user_listener = reader_listener

            def listener(_r: _native.Reader, m: _native.Message) -> object:
                if reader._after is not None and reader._skip(m):
                    return None
                return user_listener(reader, Message(m, schema))

        try:
            reader._h = self._client.create_reader(
                topic,
                _native_id(start_message_id),
                inclusive=start_message_id_inclusive,
                receiver_queue_size=receiver_queue_size,
                reader_name=reader_name,
                schema=schema._native,
                reader_listener=listener,
                crypto_key_reader=crypto_key_reader._for_consumer() if crypto_key_reader else None,
                crypto_failure_action=_enums.CRYPTO_FAILURE[crypto_failure_action],
            )
        except StreamwireError as e:
            _raise(e)
        return reader

    def create_table_view(
        self,
        topic: str,
        subscription_name: Optional[str] = None,
        schema: Schema = BytesSchema(),  # noqa: B008  (the official signature)
    ) -> TableView:
        """A :class:`TableView` of ``topic``: the latest value of each key, decoded with
        ``schema``, read from the start of the topic and then followed.

        Args:
            topic: the topic (partitioned or not).
            subscription_name: the name of the view's reader subscription (None: a
                generated one).
            schema: a ``pulsar.schema`` schema (default ``BytesSchema()``).
        """
        _check_type(str, topic, "topic")
        _check_type_or_none(str, subscription_name, "subscription_name")
        _check_type(Schema, schema, "schema")
        try:
            view = self._client.create_table_view(
                topic, schema=schema._native, subscription_name=subscription_name
            )
        except StreamwireError as e:
            _raise(e)
        return TableView(view, topic, subscription_name)

    def get_service_info(self) -> NoReturn:
        """Not supported (``NotImplementedError``): streamwire has no ServiceInfo."""
        _missing("ServiceInfo (get_service_info)")

    def get_topic_partitions(self, topic: str) -> list[str]:
        """The partitions of ``topic`` (``[topic]`` for a topic without partitions)."""
        _check_type(str, topic, "topic")
        try:
            return self._client.lookup().topic_partitions(topic)
        except StreamwireError as e:
            _raise(e)

    def shutdown(self) -> None:
        """Close the client (streamwire's close does not wait for pending work either)."""
        self.close()

    @official_errors
    def close(self) -> None:
        """Close the client and its producers, consumers and readers."""
        self._client.close()
