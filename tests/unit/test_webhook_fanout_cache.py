"""The webhook projection's cache of active subscriptions: a disabled or deleted one is taken out of it
without reading the table again, leaving exactly what a read would give."""

from __future__ import annotations

import uuid

from projections.webhooks import WebhookProjection


def test_a_forgotten_subscription_leaves_the_others_in_order_and_no_empty_website():
    projection = WebhookProjection()
    site, other = uuid.uuid4(), uuid.uuid4()
    first, second, third, alone = (uuid.uuid4() for _ in range(4))
    projection.subscribers = {site: [(first, [], None), (second, ["*"], None), (third, [], ["customer.created"])],
                              other: [(alone, [], None)]}
    projection._forget(second)
    projection._forget(alone)
    projection._forget(uuid.uuid4())  # not there (already disabled): nothing changes
    assert projection.subscribers == {site: [(first, [], None), (third, [], ["customer.created"])]}


def test_nothing_is_loaded_by_forgetting():
    projection = WebhookProjection()
    projection._forget(uuid.uuid4())
    assert projection.subscribers is None
