"""Who an internal note mentions (`projections.notifications.mentioned`): `@Display Name`, `@local-part`,
`@e-mail` (what the composer inserts), and what is not a mention."""

from __future__ import annotations

import uuid

from projections.notifications import Mentionable, mentioned, snippet

ADA = Mentionable(uuid.uuid4(), "Ada Lovelace", "ada@a.example")
ADA_B = Mentionable(uuid.uuid4(), None, "ada@b.example")
BO = Mentionable(uuid.uuid4(), "Bo", "bo.lee@a.example")
TEAM = [ADA, ADA_B, BO]


def test_names_local_parts_and_addresses_mention():
    assert mentioned("@Ada Lovelace can you look?", TEAM) == {ADA.operator_id}
    assert mentioned("ping @ada lovelace.", TEAM) == {ADA.operator_id}
    assert mentioned("@bo.lee and @Bo", TEAM) == {BO.operator_id}
    assert mentioned("cc @ada@b.example, thanks", TEAM) == {ADA_B.operator_id}
    assert mentioned("(@ada@a.example)", TEAM) == {ADA.operator_id}


def test_what_is_not_a_mention():
    assert mentioned("@Bob is not Bo; @Adam neither", TEAM) == set()
    assert mentioned("write to bo@a.example or x@Bo", TEAM) == set()
    assert mentioned("no at sign at all", TEAM) == set()


def test_a_snippet_is_one_line_and_short():
    assert snippet("a\n\n b") == "a b"
    long = snippet("x" * 500)
    assert len(long) == 120 and long.endswith("…")
