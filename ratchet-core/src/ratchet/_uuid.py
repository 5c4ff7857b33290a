"""UUIDv7 (RFC 9562): time-ordered ids, so newer jobs sort after older ones."""

from __future__ import annotations

import os
import threading
import time
import uuid

__all__ = ["new_job_id", "uuid7"]

_lock = threading.Lock()
_last = [0, 0]  # last millisecond, last 12-bit counter


def uuid7() -> uuid.UUID:
    """48-bit Unix milliseconds, a 12-bit counter that keeps ids monotonic within one
    millisecond of this process, then 62 random bits."""
    with _lock:
        millis = time.time_ns() // 1_000_000
        if millis <= _last[0]:
            millis = _last[0]
            counter = _last[1] + 1
            if counter > 0xFFF:  # counter exhausted: borrow the next millisecond
                millis += 1
                counter = 0
        else:
            counter = int.from_bytes(os.urandom(2)) & 0x3FF  # leave room to count up
        _last[0], _last[1] = millis, counter
    random_bits = int.from_bytes(os.urandom(8)) & ((1 << 62) - 1)
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= counter << 64
    value |= 0b10 << 62
    value |= random_bits
    return uuid.UUID(int=value)


def new_job_id() -> str:
    """A new job id: a UUIDv7 string, so ids sort by creation time. Public SPI, as
    :func:`ratchet.spi.new_job_id`: a store that assigns ids itself must use it."""
    return str(uuid7())
