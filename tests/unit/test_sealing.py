"""Sealing secrets at rest (events/sealing.py): what is sealed opens only under its key, and a value
stored before sealing existed reads as it is."""

from __future__ import annotations

import secrets

import pytest

from events.sealing import PREFIX, Sealer, WrongKey


def test_a_sealed_secret_opens_under_its_key_only():
    sealer = Sealer(secrets.token_urlsafe(32))
    sealed = sealer.seal("whsec_canary")
    assert sealed.startswith(PREFIX) and "canary" not in sealed
    assert sealer.seal("whsec_canary") != sealed  # a fresh nonce each time
    assert sealer.open(sealed) == "whsec_canary"
    with pytest.raises(WrongKey):
        Sealer(secrets.token_urlsafe(32)).open(sealed)


def test_a_value_stored_in_the_clear_reads_as_it_is():
    assert Sealer(secrets.token_urlsafe(32)).open("agsec_from_before") == "agsec_from_before"


@pytest.mark.parametrize("key", ["", "short", secrets.token_urlsafe(16), "not base64 at all!" * 3])
def test_a_key_that_is_not_32_bytes_is_refused(key):
    with pytest.raises(ValueError, match="32 bytes"):
        Sealer(key)
