"""Secrets kept sealed at rest: the identity, webhook, agent and single sign-on secrets Parley must read
back in the clear (to verify a visitor's signature, sign a delivery, call an agent, sign an operator in)
are stored sealed (AES-256-GCM) in the events that carry them and in the read models that copy them, under
a key kept outside the database. A dump of the database alone does not give them away.

A sealed value is `sealed:v1:` and the URL-safe base64 of a random 96-bit nonce and the ciphertext. Values
stored before sealing existed have no prefix and read as they are: events are never rewritten, and a
website rotating its secret (or a new subscription) replaces one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import zlib

import psycopg
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "sealed:v1:"
NONCE_BYTES = 12
_PROBE = "parley sealing probe"
_PROBE_LOCK = zlib.crc32(b"parley-sealing-probe")


class WrongKey(Exception):
    """A sealed value that this key did not seal."""


def _key_bytes(key: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(key.strip() + "=" * (-len(key.strip()) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise ValueError("the secrets key must be 32 bytes in URL-safe base64 "
                         "(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')")
    return raw


class Sealer:
    """Seals and opens secrets under one key: 32 bytes in URL-safe base64 (`secrets.token_urlsafe(32)`)."""

    def __init__(self, key: str):
        raw = _key_bytes(key)
        self._aead = AESGCM(raw)
        # a key of its own for signatures (the reply-to and unsubscribe tokens of e-mail), derived so that
        # a signature never reveals anything of the sealing key
        self._mac_key = hmac.new(raw, b"parley signatures v1", hashlib.sha256).digest()

    @classmethod
    def generate(cls) -> "Sealer":
        """A sealer under a new random key, for what no process will open (a benchmark's unused secrets)."""
        return cls(base64.urlsafe_b64encode(os.urandom(32)).decode())

    def seal(self, secret: str) -> str:
        nonce = os.urandom(NONCE_BYTES)
        sealed = nonce + self._aead.encrypt(nonce, secret.encode(), None)
        return PREFIX + base64.urlsafe_b64encode(sealed).decode()

    def mac(self, purpose: str, data: bytes) -> bytes:
        """An HMAC-SHA256 of `data` for `purpose` under this key: what the service signs and checks itself."""
        return hmac.new(self._mac_key, purpose.encode() + b"\0" + data, hashlib.sha256).digest()

    def open(self, stored: str) -> str:
        """The secret in the clear; a value stored before sealing (no prefix) is that already."""
        if not stored.startswith(PREFIX):
            return stored
        sealed = base64.urlsafe_b64decode(stored[len(PREFIX):])
        try:
            return self._aead.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], None).decode()
        except InvalidTag:
            raise WrongKey("a secret was sealed under another key than PARLEY_SECRETS_KEY (or the data "
                           "directory's secrets.key)") from None


def check_key(database_url: str, sealer: Sealer) -> None:
    """Raises `WrongKey` when this database's secrets are sealed under another key: each process of a
    deployment that does not share one data directory must be given the same PARLEY_SECRETS_KEY, or the
    secrets one seals would be lost to the others. The first process to start records a sealed probe."""
    with psycopg.connect(database_url, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_PROBE_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS parley_sealing_probe "
                     "(single boolean PRIMARY KEY DEFAULT true CHECK (single), probe text NOT NULL)")
        conn.execute("INSERT INTO parley_sealing_probe (probe) VALUES (%s) ON CONFLICT DO NOTHING",
                     (sealer.seal(_PROBE),))
        probe = conn.execute("SELECT probe FROM parley_sealing_probe").fetchone()[0]
    try:
        if sealer.open(probe) == _PROBE:
            return
    except WrongKey:
        pass
    raise WrongKey("this database's secrets are sealed under another key: give every process the same "
                   "PARLEY_SECRETS_KEY (or the data directory's secrets.key they were sealed with)")
