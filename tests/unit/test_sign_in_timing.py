"""Sign-in timing tells nothing: an address no operator has is checked against a dummy Argon2 hash made
with the operators' parameters, so its answer costs what a known address's does (commands/admin.py)."""

from argon2 import PasswordHasher

from commands import admin


class RecordingHasher(PasswordHasher):
    """argon2's hasher, recording which hashes it verified (the verification itself runs unchanged)."""

    def __init__(self):
        super().__init__()
        self.verified: list[str] = []

    def verify(self, hash, password):  # noqa: A002 - argon2's parameter name
        self.verified.append(hash)
        return super().verify(hash, password)


def test_an_unknown_address_runs_the_same_verification_on_a_dummy_hash(monkeypatch):
    hasher = RecordingHasher()
    monkeypatch.setattr(admin, "_passwords", hasher)
    known = hasher.hash("correct horse")
    assert admin.password_matches(known, "correct horse")
    assert not admin.password_matches(known, "wrong")
    assert not admin.password_matches(None, "correct horse")
    assert hasher.verified == [known, known, admin.UNKNOWN_OPERATOR_HASH]


def test_the_dummy_hash_costs_what_an_operators_hash_costs():
    hasher = PasswordHasher()
    assert not hasher.check_needs_rehash(admin.UNKNOWN_OPERATOR_HASH)  # same algorithm, memory, time, lanes
    assert hasher.hash("x").split("$")[:4] == admin.UNKNOWN_OPERATOR_HASH.split("$")[:4]
