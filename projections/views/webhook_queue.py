"""The webhook delivery queue as the dispatcher works it: the deliveries the webhooks read model
(projections/webhooks.py) adds from the stream, claimed with a lease, their attempts recorded in batches,
and the subscriptions' consecutive failures counted beside them. The statements live here, with the
tables' owner; delivery/webhooks.py runs them."""

# The claim reads a bounded window of the due deliveries, oldest first, leaving out the subscriptions that
# have all their slots of this process in flight (a slow endpoint's backlog can be long: it is walked in
# the index, never sorted or ranked), ranks the window per subscription against the free slots and takes
# at most `limit`.
CLAIM = """
WITH due AS (
    SELECT d.id, d.subscription_id, d.next_attempt_at, d.position FROM webhook_deliveries d
    WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND NOT d.subscription_id = ANY(%(capped)s::uuid[])
    ORDER BY d.next_attempt_at, d.position
    LIMIT %(scan)s
), candidates AS (
    SELECT id FROM (
        SELECT due.id, due.next_attempt_at, due.position,
               row_number() OVER (PARTITION BY due.subscription_id ORDER BY due.next_attempt_at, due.position) AS rank,
               %(per_endpoint)s - COALESCE((%(in_flight)s::jsonb ->> due.subscription_id::text)::int, 0) AS free
        FROM due JOIN rm_webhook_subscriptions s ON s.id = due.subscription_id
        WHERE s.active AND s.consecutive_failures < %(failure_limit)s
    ) ranked
    WHERE rank <= free
    ORDER BY next_attempt_at, position
    LIMIT %(limit)s
), locked AS (
    SELECT id FROM webhook_deliveries
    WHERE id = ANY(ARRAY(SELECT id FROM candidates)) AND status = 'pending' AND next_attempt_at <= now()
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE webhook_deliveries d SET next_attempt_at = now() + %(lease)s * interval '1 second'
    FROM locked, rm_webhook_subscriptions s
    WHERE d.id = locked.id AND s.id = d.subscription_id
    RETURNING d.id, d.subscription_id, d.org_id, d.position, d.event, d.body, s.url, s.secret, d.attempts
), next AS (  -- seen before the claim: what is due now is claimed or held back, not waited for
    SELECT EXTRACT(EPOCH FROM min(next_attempt_at) - now())::float8 AS wait,
           (SELECT count(*) FROM due) = %(scan)s AS window_full  -- more may be due beyond the window
    FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at > now()
)
SELECT next.wait, next.window_full, claimed.* FROM next LEFT JOIN claimed ON true
"""

# One statement records a whole batch of attempts: the deliveries' new state, the attempts in the log,
# and the subscriptions' consecutive failures (a success in the batch resets the count before the
# failures that followed it are added).
RECORD = """
WITH outcome AS (
    SELECT * FROM unnest(%(ids)s::uuid[], %(succeeded)s::bool[], %(retryable)s::bool[], %(delays)s::float8[],
                         %(at)s::timestamptz[], %(status)s::int[], %(latency)s::int[], %(error)s::text[],
                         %(body)s::text[]) WITH ORDINALITY
        AS o(id, succeeded, retryable, delay, at, response_status, latency_ms, error, response_body, n)
), decided AS (
    SELECT o.id, o.succeeded, NOT o.succeeded AND o.retryable
           AND now() + o.delay * interval '1 second' <= d.retry_since + %(window)s * interval '1 second' AS again,
           o.delay
    FROM outcome o JOIN webhook_deliveries d ON d.id = o.id
), updated AS (
    UPDATE webhook_deliveries d SET attempts = d.attempts + 1, updated_at = now(),
        status = CASE WHEN decided.succeeded THEN 'succeeded' WHEN decided.again THEN 'pending' ELSE 'failed' END,
        next_attempt_at = CASE WHEN decided.again THEN now() + decided.delay * interval '1 second' END
    FROM decided WHERE d.id = decided.id
    RETURNING d.id, d.next_attempt_at
), logged AS (
    INSERT INTO webhook_attempts (delivery_id, at, response_status, latency_ms, error, response_body, next_retry_at)
    SELECT o.id, o.at, o.response_status, o.latency_ms, o.error, o.response_body, u.next_attempt_at
    FROM outcome o LEFT JOIN updated u ON u.id = o.id ORDER BY o.n
)
UPDATE rm_webhook_subscriptions s
SET consecutive_failures = CASE WHEN f.reset THEN 0 ELSE s.consecutive_failures END + f.failed
FROM unnest(%(subscriptions)s::uuid[], %(reset)s::bool[], %(failed)s::int[]) AS f(id, reset, failed)
WHERE s.id = f.id
RETURNING s.id, s.org_id, s.consecutive_failures, s.active
"""

# Pending deliveries of a disabled or deleted subscription stop: the log shows them as stopped, and
# `recover` or a retry can deliver them again later.
STOP = """
UPDATE webhook_deliveries d SET status = 'stopped', next_attempt_at = NULL, updated_at = now()
WHERE d.status = 'pending' AND NOT EXISTS (
    SELECT 1 FROM rm_webhook_subscriptions s
    WHERE s.id = d.subscription_id AND s.active AND s.consecutive_failures < %s)
"""

FAILING = "SELECT org_id, id FROM rm_webhook_subscriptions WHERE active AND consecutive_failures >= %s"
