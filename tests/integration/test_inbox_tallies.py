"""The inbox's tallies (projections/inbox.py) against the conversations they count: after a random run of
workflow and message events (assignments, labels added and removed, a label and a team deleted, snoozes
that ran out or not, wakes, spam, resolutions, visitor messages, read receipts and read marks), the whole
website's tab counts and label and team counts read from the counters and tallies equal the same counts
scanned from the website's rows, for every reader, and the tallies equal a recount."""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import timedelta

import psycopg

from commands.streams import now
from events import types as ev
from events.ids import new_id
from events.store import Recorded
from projections.core import CoreProjection
from projections.inbox import InboxProjection
from projections.runner import apply_batch, current_position, ensure_tables
from projections.views.inbox import Scope, count_tabs, named_counts
from commands.principal import Principal


def random_events(rng: random.Random, org_id: uuid.UUID, website_id: uuid.UUID, operators: list[uuid.UUID]):
    start = now() - timedelta(days=2)
    teams, labels = [new_id() for _ in range(3)], [new_id() for _ in range(5)]
    events: list[ev.Event] = [ev.TeamCreated(org_id=org_id, at=start, team_id=t, name=f"team {i}", member_ids=[])
                              for i, t in enumerate(teams)]
    events += [ev.LabelCreated(org_id=org_id, at=start, label_id=label, name=f"label {i}", color="#123456")
               for i, label in enumerate(labels)]
    conversations = [new_id() for _ in range(80)]
    last_message: dict[uuid.UUID, uuid.UUID] = {}
    for c in conversations:
        events.append(ev.ConversationCreated(org_id=org_id, at=start, conversation_id=c, website_id=website_id,
                                             customer_id=new_id()))
    for step in range(600):
        c, at = rng.choice(conversations), start + timedelta(seconds=step * 60)
        kind = rng.randrange(9)
        if kind == 0:
            message = new_id()
            last_message[c] = message
            events.append(ev.MessageCreated(org_id=org_id, at=at, message_id=message, conversation_id=c,
                                            website_id=website_id, content="help", sender="customer"))
        elif kind == 1 and c in last_message:
            events.append(ev.MessageRead(org_id=org_id, at=at, message_id=last_message[c], conversation_id=c))
        elif kind == 2:
            events.append(ev.ConversationAssigned(org_id=org_id, at=at, conversation_id=c,
                                                  assignee_id=rng.choice([None, *operators]),
                                                  team_id=rng.choice([None, *teams])))
        elif kind == 3:
            events.append(ev.ConversationLabelsChanged(org_id=org_id, at=at, conversation_id=c,
                                                       added=rng.sample(labels, rng.randrange(3)),
                                                       removed=rng.sample(labels, rng.randrange(2))))
        elif kind == 4:
            events.append(ev.ConversationUpdated(org_id=org_id, at=at, conversation_id=c,
                                                 resolved=rng.random() < 0.5, spam=rng.random() < 0.15))
        elif kind == 5:  # a snooze that runs out before the counts are read, or after
            until = rng.choice([None, now() - timedelta(minutes=5), now() + timedelta(days=1)])
            events.append(ev.ConversationSnoozed(org_id=org_id, at=at, conversation_id=c, until=until))
        elif kind == 6:
            events.append(ev.ConversationWoken(org_id=org_id, at=at, conversation_id=c, reason="operator"))
        elif kind == 7:
            events.append(ev.ConversationReadByOperator(org_id=org_id, at=at, conversation_id=c,
                                                        operator_id=rng.choice(operators), message_id=new_id(),
                                                        up_to=at - timedelta(minutes=rng.randrange(120))))
        elif step == 500:
            events += [ev.LabelDeleted(org_id=org_id, at=at, label_id=labels[0]),
                       ev.TeamDeleted(org_id=org_id, at=at, team_id=teams[0])]
    return events


async def check(database_url: str) -> None:
    rng = random.Random(38)
    org_id, website_id, other_website = new_id(), new_id(), new_id()
    operators = [new_id(), new_id()]
    events = random_events(rng, org_id, website_id, operators)
    events += random_events(rng, org_id, other_website, operators)  # another website's rows count apart
    projections = [CoreProjection(), InboxProjection()]
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        positions = {}
        for projection in projections:
            await ensure_tables(conn, projection)
            positions[projection.name] = await current_position(conn, projection.name)
        batch = [Recorded(n + 1, new_id(), 1, e) for n, e in enumerate(events)]
        await apply_batch(conn, projections, batch, positions)

        recount = await (await conn.execute(
            "SELECT website_id, key, count(*) FROM rm_inbox, unnest(rm_inbox_tally_keys(spam, resolved, unread, "
            "assignee_id, team_id, labels, last_customer_message_at)) AS key GROUP BY website_id, key")).fetchall()
        tallies = await (await conn.execute("SELECT website_id, key, n FROM rm_inbox_tallies WHERE n <> 0")).fetchall()
        assert sorted(tallies) == sorted(recount)

        website = Scope(website_id, "website_id = %s", (website_id,), True, "website_id = %s", (website_id,), True)
        scanned = Scope(website_id, "website_id = %s", (website_id,), False, "website_id = %s", (website_id,), False)
        for reader in (*operators, None):
            principal = Principal("operator", org_id, new_id(), operator_id=reader)
            assert await count_tabs(conn, website, reader) == await count_tabs(conn, scanned, reader)
            assert await named_counts(conn, principal, website) == await named_counts(conn, principal, scanned)
        counts = await count_tabs(conn, website, operators[0])
        assert counts.unread and counts.mine and counts.snoozed and counts.unassigned  # the run reached them all


def test_the_whole_websites_counts_from_the_tallies_equal_a_scan_of_its_rows(infra):
    asyncio.run(check(infra.new_database()))
