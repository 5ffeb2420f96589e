"""The official client's enums (``pulsar.Result``, ``pulsar.ConsumerType``, ...), with its
member names and numbers, and their translation to streamwire's string options.

The official enums are C++ enums bound by pybind11: they compare equal to their own members,
convert with ``int()`` and print as ``Result.Ok``. ``IntEnum`` with that ``__str__`` behaves
the same for the programs that use them (comparisons, ``int(x)``, printing, use as dict keys).
"""

from __future__ import annotations

import enum
import inspect


class _PulsarEnum(enum.IntEnum):
    # The official enums are looked up by number only: Name(value). (IntEnum's functional
    # API, Name(value, names, module, ...), is not theirs.)
    __signature__ = inspect.Signature(
        [inspect.Parameter("value", inspect.Parameter.POSITIONAL_ONLY)]
    )

    # pybind11 enums print as "Type.Member"; IntEnum would print the number.
    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class Result(_PulsarEnum):
    """The outcome of an operation (what ``send_async`` callbacks receive first).
    ``Result(value)`` is the member of that number."""

    Ok = 0
    UnknownError = 1
    InvalidConfiguration = 2
    Timeout = 3
    LookupError = 4
    ConnectError = 5
    ReadError = 6
    AuthenticationError = 7
    AuthorizationError = 8
    ErrorGettingAuthenticationData = 9
    BrokerMetadataError = 10
    BrokerPersistenceError = 11
    ChecksumError = 12
    ConsumerBusy = 13
    NotConnected = 14
    AlreadyClosed = 15
    InvalidMessage = 16
    ConsumerNotInitialized = 17
    ProducerNotInitialized = 18
    ProducerBusy = 19
    TooManyLookupRequestException = 20
    InvalidTopicName = 21
    InvalidUrl = 22
    ServiceUnitNotReady = 23
    OperationNotSupported = 24
    ProducerBlockedQuotaExceededError = 25
    ProducerBlockedQuotaExceededException = 26
    ProducerQueueIsFull = 27
    MessageTooBig = 28
    TopicNotFound = 29
    SubscriptionNotFound = 30
    ConsumerNotFound = 31
    UnsupportedVersionError = 32
    TopicTerminated = 33
    CryptoError = 34
    IncompatibleSchema = 35
    ConsumerAssignError = 36
    CumulativeAcknowledgementNotAllowedError = 37
    TransactionCoordinatorNotFoundError = 38
    InvalidTxnStatusError = 39
    NotAllowedError = 40
    TransactionConflict = 41
    TransactionNotFound = 42
    ProducerFenced = 43
    MemoryBufferIsFull = 44
    Interrupted = 45


class CompressionType(_PulsarEnum):
    """How a producer compresses batches (``compression_type=``). ``CompressionType(value)`` is the
    member of that number."""

    NONE = 0
    LZ4 = 1
    ZLib = 2
    ZSTD = 3
    SNAPPY = 4


class ConsumerType(_PulsarEnum):
    """The subscription type (``consumer_type=``). ``ConsumerType(value)`` is the member of that
    number."""

    Exclusive = 0
    Shared = 1
    Failover = 2
    KeyShared = 3


class InitialPosition(_PulsarEnum):
    """Where a new subscription starts (``initial_position=``). ``InitialPosition(value)`` is the
    member of that number."""

    Latest = 0
    Earliest = 1


class PartitionsRoutingMode(_PulsarEnum):
    """How a producer picks partitions (``message_routing_mode=``). ``PartitionsRoutingMode(value)``
    is the member of that number."""

    UseSinglePartition = 0
    RoundRobinDistribution = 1
    CustomPartition = 2


class BatchingType(_PulsarEnum):
    """How a producer groups messages into batches (``batching_type=``). ``BatchingType(value)`` is
    the member of that number."""

    Default = 0
    KeyBased = 1


class LoggerLevel(_PulsarEnum):
    """The level of a ``ConsoleLogger`` or ``FileLogger``. ``LoggerLevel(value)`` is the member of
    that number."""

    Debug = 0
    Info = 1
    Warn = 2
    Error = 3


class KeySharedMode(_PulsarEnum):
    """The mode of a ``ConsumerKeySharedPolicy``. ``KeySharedMode(value)`` is the member of that
    number."""

    AutoSplit = 0
    Sticky = 1


class ProducerAccessMode(_PulsarEnum):
    """Shared or exclusive access of a producer to its topic (``access_mode=``).
    ``ProducerAccessMode(value)`` is the member of that number."""

    Shared = 0
    Exclusive = 1
    WaitForExclusive = 2
    ExclusiveWithFencing = 3


class RegexSubscriptionMode(_PulsarEnum):
    """Which topics a regex subscription takes (``regex_subscription_mode=``).
    ``RegexSubscriptionMode(value)`` is the member of that number."""

    PersistentOnly = 0
    NonPersistentOnly = 1
    AllTopics = 2


class ConsumerCryptoFailureAction(_PulsarEnum):
    """What to do with a message that cannot be decrypted.
    ``ConsumerCryptoFailureAction(value)`` is the member of that number."""

    FAIL = 0
    DISCARD = 1
    CONSUME = 2


# streamwire spells these options as strings.
CRYPTO_FAILURE: dict[ConsumerCryptoFailureAction, str] = {
    ConsumerCryptoFailureAction.FAIL: "fail",
    ConsumerCryptoFailureAction.DISCARD: "discard",
    ConsumerCryptoFailureAction.CONSUME: "consume",
}
COMPRESSION: dict[CompressionType, str | None] = {
    CompressionType.NONE: None,
    CompressionType.LZ4: "lz4",
    CompressionType.ZLib: "zlib",
    CompressionType.ZSTD: "zstd",
    CompressionType.SNAPPY: "snappy",
}
SUBSCRIPTION: dict[ConsumerType, str] = {
    ConsumerType.Exclusive: "exclusive",
    ConsumerType.Shared: "shared",
    ConsumerType.Failover: "failover",
    ConsumerType.KeyShared: "key_shared",
}
POSITION: dict[InitialPosition, str] = {
    InitialPosition.Latest: "latest",
    InitialPosition.Earliest: "earliest",
}
ROUTING: dict[PartitionsRoutingMode, str] = {
    PartitionsRoutingMode.UseSinglePartition: "single",
    PartitionsRoutingMode.RoundRobinDistribution: "round_robin",
    # CustomPartition routes through message_router (checked where the producer is made).
    PartitionsRoutingMode.CustomPartition: "round_robin",
}
BATCHING: dict[BatchingType, str] = {
    BatchingType.Default: "default",
    BatchingType.KeyBased: "key_based",
}
ACCESS: dict[ProducerAccessMode, str] = {
    ProducerAccessMode.Shared: "shared",
    ProducerAccessMode.Exclusive: "exclusive",
    ProducerAccessMode.WaitForExclusive: "wait_for_exclusive",
    ProducerAccessMode.ExclusiveWithFencing: "exclusive_with_fencing",
}
REGEX_MODE: dict[RegexSubscriptionMode, str] = {
    RegexSubscriptionMode.PersistentOnly: "persistent",
    RegexSubscriptionMode.NonPersistentOnly: "non_persistent",
    RegexSubscriptionMode.AllTopics: "all",
}
