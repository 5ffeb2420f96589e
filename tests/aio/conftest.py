"""Every asyncio test here runs on both event loops: asyncio's own and uvloop."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import uvloop


@pytest.fixture(params=["asyncio", "uvloop"])
def event_loop_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    """Install the loop's policy (``asyncio.run`` and ``asyncio.Runner`` then use it)."""
    kind: str = request.param
    policy = uvloop.EventLoopPolicy() if kind == "uvloop" else asyncio.DefaultEventLoopPolicy()
    asyncio.set_event_loop_policy(policy)
    try:
        loop = asyncio.new_event_loop()
        try:
            assert isinstance(loop, uvloop.Loop) == (kind == "uvloop")
        finally:
            loop.close()
        yield kind
    finally:
        asyncio.set_event_loop_policy(None)
