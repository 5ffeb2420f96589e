"""Just enough of the Pulsar binary protocol for the test infrastructure.

Frame layout (all integers big-endian)::

    [totalSize u32][commandSize u32][BaseCommand]                     simple command
    ... + [0x0e02][brokerEntryMetadataSize u32][BrokerEntryMetadata]   optional
        + [0x0e01][CRC32C u32]                                          optional
        + [metadataSize u32][MessageMetadata][payload]                  payload-carrying

``totalSize`` counts everything after itself. Used by the fault proxy (to truncate and corrupt
frames on their boundaries), by golden-frame checks and by a dependency-free readiness probe.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

MAGIC_CRC32C = 0x0E01
MAGIC_BROKER_ENTRY_METADATA = 0x0E02

COMMAND_NAMES: dict[int, str] = {
    2: "CONNECT",
    3: "CONNECTED",
    4: "SUBSCRIBE",
    5: "PRODUCER",
    6: "SEND",
    7: "SEND_RECEIPT",
    8: "SEND_ERROR",
    9: "MESSAGE",
    10: "ACK",
    11: "FLOW",
    12: "UNSUBSCRIBE",
    13: "SUCCESS",
    14: "ERROR",
    15: "CLOSE_PRODUCER",
    16: "CLOSE_CONSUMER",
    17: "PRODUCER_SUCCESS",
    18: "PING",
    19: "PONG",
    20: "REDELIVER_UNACKNOWLEDGED_MESSAGES",
    21: "PARTITIONED_METADATA",
    22: "PARTITIONED_METADATA_RESPONSE",
    23: "LOOKUP",
    24: "LOOKUP_RESPONSE",
    25: "CONSUMER_STATS",
    26: "CONSUMER_STATS_RESPONSE",
    27: "REACHED_END_OF_TOPIC",
    28: "SEEK",
    29: "GET_LAST_MESSAGE_ID",
    30: "GET_LAST_MESSAGE_ID_RESPONSE",
    31: "ACTIVE_CONSUMER_CHANGE",
    32: "GET_TOPICS_OF_NAMESPACE",
    33: "GET_TOPICS_OF_NAMESPACE_RESPONSE",
    34: "GET_SCHEMA",
    35: "GET_SCHEMA_RESPONSE",
    36: "AUTH_CHALLENGE",
    37: "AUTH_RESPONSE",
    38: "ACK_RESPONSE",
    39: "GET_OR_CREATE_SCHEMA",
    40: "GET_OR_CREATE_SCHEMA_RESPONSE",
    50: "NEW_TXN",
    51: "NEW_TXN_RESPONSE",
    52: "ADD_PARTITION_TO_TXN",
    53: "ADD_PARTITION_TO_TXN_RESPONSE",
    54: "ADD_SUBSCRIPTION_TO_TXN",
    55: "ADD_SUBSCRIPTION_TO_TXN_RESPONSE",
    56: "END_TXN",
    57: "END_TXN_RESPONSE",
    58: "END_TXN_ON_PARTITION",
    59: "END_TXN_ON_PARTITION_RESPONSE",
    60: "END_TXN_ON_SUBSCRIPTION",
    61: "END_TXN_ON_SUBSCRIPTION_RESPONSE",
    62: "TC_CLIENT_CONNECT_REQUEST",
    63: "TC_CLIENT_CONNECT_RESPONSE",
    64: "WATCH_TOPIC_LIST",
    65: "WATCH_TOPIC_LIST_SUCCESS",
    66: "WATCH_TOPIC_UPDATE",
    67: "WATCH_TOPIC_LIST_CLOSE",
    68: "TOPIC_MIGRATED",
}
COMMAND_TYPES: dict[str, int] = {name: num for num, name in COMMAND_NAMES.items()}


class FrameError(ValueError):
    """Bytes that are not a well-formed Pulsar frame."""


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Decode a protobuf varint at ``pos``; return (value, next position)."""
    result = 0
    shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise FrameError("truncated or oversized varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def command_type(command: bytes) -> int:
    """The ``type`` (field 1) of an encoded BaseCommand."""
    pos = 0
    while pos < len(command):
        key, pos = read_varint(command, pos)
        field, wire = key >> 3, key & 7
        if field == 1 and wire == 0:
            value, _ = read_varint(command, pos)
            return value
        if wire == 0:
            _, pos = read_varint(command, pos)
        elif wire == 2:
            length, pos = read_varint(command, pos)
            pos += length
        elif wire == 5:
            pos += 4
        elif wire == 1:
            pos += 8
        else:
            raise FrameError(f"unsupported wire type {wire}")
    raise FrameError("BaseCommand without a type")


@dataclass(frozen=True)
class Frame:
    """Offsets into one complete frame (``raw`` includes the 4-byte totalSize prefix)."""

    raw: bytes
    command_type: int
    command_start: int
    command_end: int
    broker_entry_metadata: bool = False
    checksum: int | None = None
    checksum_offset: int | None = None  # offset of the first byte covered by the CRC
    metadata_start: int | None = None
    payload_start: int | None = None

    @property
    def command_name(self) -> str:
        return COMMAND_NAMES.get(self.command_type, f"UNKNOWN({self.command_type})")

    @property
    def has_payload_section(self) -> bool:
        return self.payload_start is not None

    @property
    def payload(self) -> bytes:
        return self.raw[self.payload_start :] if self.payload_start is not None else b""

    @property
    def command(self) -> bytes:
        return self.raw[self.command_start : self.command_end]


def frame_length(buf: bytes | bytearray | memoryview, pos: int = 0) -> int | None:
    """Length of the frame starting at ``pos`` including its prefix, or None if not known yet."""
    if len(buf) - pos < 4:
        return None
    (total,) = struct.unpack_from(">I", buf, pos)
    return 4 + int(total)


def parse_frame(raw: bytes) -> Frame:
    """Parse one complete frame (as returned by :func:`split_frames`)."""
    if len(raw) < 8:
        raise FrameError("frame shorter than 8 bytes")
    total, cmd_size = struct.unpack_from(">II", raw, 0)
    if total + 4 != len(raw):
        raise FrameError(f"totalSize {total} does not match {len(raw) - 4} bytes")
    cmd_start, cmd_end = 8, 8 + cmd_size
    if cmd_end > len(raw):
        raise FrameError("commandSize beyond the frame")
    ctype = command_type(raw[cmd_start:cmd_end])
    if cmd_end == len(raw):
        return Frame(raw, ctype, cmd_start, cmd_end)
    pos = cmd_end
    bem = False
    if len(raw) - pos >= 2 and struct.unpack_from(">H", raw, pos)[0] == MAGIC_BROKER_ENTRY_METADATA:
        (bem_size,) = struct.unpack_from(">I", raw, pos + 2)
        pos += 6 + bem_size
        bem = True
    checksum: int | None = None
    checksum_offset: int | None = None
    if len(raw) - pos >= 2 and struct.unpack_from(">H", raw, pos)[0] == MAGIC_CRC32C:
        (checksum,) = struct.unpack_from(">I", raw, pos + 2)
        pos += 6
        checksum_offset = pos
    if len(raw) - pos < 4:
        raise FrameError("payload section without a metadata size")
    (meta_size,) = struct.unpack_from(">I", raw, pos)
    meta_start = pos + 4
    payload_start = meta_start + meta_size
    if payload_start > len(raw):
        raise FrameError("metadataSize beyond the frame")
    return Frame(
        raw, ctype, cmd_start, cmd_end, bem, checksum, checksum_offset, meta_start, payload_start
    )


def split_frames(stream: bytes) -> tuple[list[bytes], bytes]:
    """Split a byte stream into complete frames; return (frames, leftover incomplete bytes)."""
    frames: list[bytes] = []
    pos = 0
    while True:
        n = frame_length(stream, pos)
        if n is None or pos + n > len(stream):
            return frames, stream[pos:]
        frames.append(bytes(stream[pos : pos + n]))
        pos += n


def encode_simple(command: bytes) -> bytes:
    """Wrap an encoded BaseCommand into a simple (payload-less) frame."""
    return struct.pack(">II", len(command) + 4, len(command)) + command


def encode_connect(client_version: str = "streamwire-tests", protocol_version: int = 21) -> bytes:
    """A CONNECT frame (BaseCommand{type=CONNECT, connect={client_version, protocol_version}})."""
    version = client_version.encode()
    connect = (
        b"\x0a" + encode_varint(len(version)) + version + b"\x20" + encode_varint(protocol_version)
    )
    base = b"\x08" + encode_varint(COMMAND_TYPES["CONNECT"]) + b"\x12"
    base += encode_varint(len(connect)) + connect
    return encode_simple(base)


def handshake(host: str, port: int, timeout: float = 2.0) -> Frame:
    """Send CONNECT and return the CONNECTED frame; raise on anything else."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(encode_connect())
        buf = b""
        while True:
            n = frame_length(buf)
            if n is not None and len(buf) >= n:
                frame = parse_frame(buf[:n])
                if frame.command_name != "CONNECTED":
                    raise FrameError(f"expected CONNECTED, got {frame.command_name}")
                return frame
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed during handshake")
            buf += chunk


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC32C (Castagnoli), as used by Pulsar's 0x0e01 checksum section (pure Python, slow)."""
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _CRC32C_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def encode_payload_frame(
    command: bytes, metadata: bytes, payload: bytes, *, checksum: bool = True
) -> bytes:
    """A payload-carrying frame; with ``checksum`` the 0x0e01 + CRC32C section is included."""
    body = struct.pack(">I", len(metadata)) + metadata + payload
    section = struct.pack(">HI", MAGIC_CRC32C, crc32c(body)) + body if checksum else body
    rest = struct.pack(">I", len(command)) + command + section
    return struct.pack(">I", len(rest)) + rest


def verify_checksum(frame: Frame) -> bool | None:
    """True/False when the frame carries a CRC32C section, None when it has none."""
    if frame.checksum is None or frame.checksum_offset is None:
        return None
    return crc32c(frame.raw[frame.checksum_offset :]) == frame.checksum


def _fields(msg: bytes) -> list[tuple[int, int, bytes, bytes]]:
    """Split a protobuf message into (field, wire type, raw key+value bytes, value bytes)."""
    out: list[tuple[int, int, bytes, bytes]] = []
    pos = 0
    while pos < len(msg):
        start = pos
        key, pos = read_varint(msg, pos)
        field_no, wire = key >> 3, key & 7
        if wire == 0:
            _, end = read_varint(msg, pos)
            value = msg[pos:end]
        elif wire == 2:
            length, vstart = read_varint(msg, pos)
            end = vstart + length
            value = msg[vstart:end]
        elif wire == 5:
            end = pos + 4
            value = msg[pos:end]
        elif wire == 1:
            end = pos + 8
            value = msg[pos:end]
        else:
            raise FrameError(f"unsupported wire type {wire}")
        if end > len(msg):
            raise FrameError("field beyond the message")
        out.append((field_no, wire, msg[start:end], value))
        pos = end
    return out


def _len_field(field_no: int, value: bytes) -> bytes:
    return encode_varint(field_no << 3 | 2) + encode_varint(len(value)) + value


def rewrite_lookup_response(frame: bytes, service_url: str) -> bytes | None:
    """If ``frame`` is a LOOKUP_RESPONSE carrying a broker URL, return it with that URL replaced
    by ``service_url`` (so a client keeps talking through a proxy); otherwise None."""
    if len(frame) < 8:
        return None
    total, cmd_size = struct.unpack_from(">II", frame, 0)
    if total + 4 != len(frame) or 8 + cmd_size != len(frame):
        return None  # only simple (payload-less) frames are candidates
    command = frame[8:]
    try:
        if command_type(command) != COMMAND_TYPES["LOOKUP_RESPONSE"]:
            return None
        changed = False
        parts: list[bytes] = []
        for field_no, wire, raw, value in _fields(command):
            if field_no == 24 and wire == 2:
                inner: list[bytes] = []
                for f2, w2, raw2, _v2 in _fields(value):
                    if f2 == 1 and w2 == 2:
                        inner.append(_len_field(1, service_url.encode()))
                        changed = True
                    else:
                        inner.append(raw2)
                parts.append(_len_field(24, b"".join(inner)))
            else:
                parts.append(raw)
    except FrameError:
        return None
    return encode_simple(b"".join(parts)) if changed else None


def encode_command(type_name: str, field_no: int, body: bytes) -> bytes:
    """A simple frame for BaseCommand{type=<type_name>, <field_no>=body}."""
    base = b"\x08" + encode_varint(COMMAND_TYPES[type_name]) + _len_field(field_no, body)
    return encode_simple(base)


def encode_uint_fields(*pairs: tuple[int, int]) -> bytes:
    """Protobuf bytes for varint fields given as (field number, value) pairs."""
    return b"".join(encode_varint(f << 3) + encode_varint(v) for f, v in pairs)


def decode_uint_fields(msg: bytes) -> dict[int, int | bytes]:
    """Top-level fields of a protobuf message: varints as int, length-delimited as bytes."""
    out: dict[int, int | bytes] = {}
    for field_no, wire, _raw, value in _fields(msg):
        out[field_no] = read_varint(value, 0)[0] if wire == 0 else value
    return out


class RawConnection:
    """A raw, blocking Pulsar connection for probing brokers in tests (CONNECT on open)."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._buf = b""
        self.sock.sendall(encode_connect())
        frame = self.recv_frame()
        if frame.command_name != "CONNECTED":
            raise FrameError(f"expected CONNECTED, got {frame.command_name}")

    def send(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def recv_frame(self) -> Frame:
        while True:
            n = frame_length(self._buf)
            if n is not None and len(self._buf) >= n:
                raw, self._buf = self._buf[:n], self._buf[n:]
                frame = parse_frame(raw)
                if frame.command_name == "PING":
                    self.sock.sendall(encode_simple(b"\x08" + encode_varint(COMMAND_TYPES["PONG"])))
                    continue
                return frame
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            self._buf += chunk

    def request(self, type_name: str, field_no: int, body: bytes) -> tuple[Frame, bytes]:
        """Send a command and return (response frame, its inner command message bytes)."""
        self.send(encode_command(type_name, field_no, body))
        frame = self.recv_frame()
        fields = decode_uint_fields(frame.command)
        inner = next((v for k, v in fields.items() if k != 1 and isinstance(v, bytes)), b"")
        return frame, inner

    def close(self) -> None:
        self.sock.close()
