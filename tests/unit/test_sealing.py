"""Sealing secrets at rest (events/sealing.py): what is sealed opens only under its key, and a value
stored before sealing existed reads as it is."""

from __future__ import annotations

import secrets
import stat

import pytest

from events.sealing import PREFIX, Sealer, WrongKey
from parley.runtime import secrets_sealer
from parley.settings import Settings


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


def test_the_key_is_the_variable_else_a_private_file_made_once_in_the_data_directory(tmp_path):
    made = secrets_sealer(Settings(data_dir=tmp_path / "data"))
    key_file = tmp_path / "data" / "secrets.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    sealed = made.seal("agsec_canary")
    assert secrets_sealer(Settings(data_dir=tmp_path / "data")).open(sealed) == "agsec_canary"
    given = secrets.token_urlsafe(32)
    assert Sealer(given).open(secrets_sealer(Settings(data_dir=tmp_path / "data", secrets_key=given))
                              .seal("agsec_canary")) == "agsec_canary"
