"""Time-ordered identifiers (UUIDv7), so ordering by `_id` is creation order."""

import os
import threading
import time
import uuid

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def new_id() -> uuid.UUID:
    """A UUIDv7 whose 12-bit counter keeps ids from one process strictly increasing."""
    global _last_ms, _counter
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            _counter += 1
            if _counter > 0xFFF:
                _last_ms += 1
                _counter = 0
            ms = _last_ms
        else:
            _last_ms, _counter = ms, 0
        counter = _counter
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms << 80) | (0x7 << 76) | (counter << 64) | (0b10 << 62) | rand
    return uuid.UUID(int=value)


def parse_id(text: str | None) -> uuid.UUID | None:
    """The id in a path or body, or None when it is not one of ours (which then reads as 404)."""
    if not text:
        return None
    try:
        value = uuid.UUID(text)
    except (ValueError, TypeError, AttributeError):
        return None
    # only the canonical form the API writes (and its document's `format: uuid` names), not braces, a URN or
    # bare hex: the same id has one spelling
    return value if str(value) == text.lower() else None
