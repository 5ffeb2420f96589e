"""The captured golden streams are well-formed and show the documented framing differences."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.peers.protocol import Frame, parse_frame, split_frames, verify_checksum

GOLDEN = Path(__file__).resolve().parents[2] / "rust" / "streamwire-pulsar" / "tests" / "golden"


def frames(name: str) -> list[Frame]:
    stream = (GOLDEN / name).read_bytes()
    raw, rest = split_frames(stream)
    assert rest == b"", f"{name}: trailing incomplete frame"
    return [parse_frame(f) for f in raw]


@pytest.mark.parametrize("kind", ["lite", "apache"])
def test_client_stream(kind: str) -> None:
    fs = frames(f"official_to_{kind}_client.bin")
    names = [f.command_name for f in fs]
    assert names[0] == "CONNECT"
    for needed in ("PARTITIONED_METADATA", "LOOKUP", "PRODUCER", "SEND", "SUBSCRIBE", "FLOW"):
        assert needed in names
    assert "ACK" in names
    sends = [f for f in fs if f.command_name == "SEND"]
    assert all(verify_checksum(f) is True for f in sends)  # the official client always adds CRC


def test_lite_messages_have_no_checksum() -> None:
    fs = frames("official_to_lite_broker.bin")
    assert fs[0].command_name == "CONNECTED"
    messages = [f for f in fs if f.command_name == "MESSAGE"]
    assert messages and all(f.checksum is None for f in messages)


def test_apache_messages_carry_valid_crc32c() -> None:
    fs = frames("official_to_apache_broker.bin")
    assert fs[0].command_name == "CONNECTED"
    messages = [f for f in fs if f.command_name == "MESSAGE"]
    assert messages and all(verify_checksum(f) is True for f in messages)
