"""The AI agent's run queue as the agent worker works it: the runs the agent read model
(projections/agent.py) adds from the stream, claimed with a lease together with the website's agent, and
what a run sends (the transcript, the actions answered). The statements live here, with the tables'
owner; delivery/agent.py runs them."""

CLAIM = """
WITH candidates AS (
    SELECT r.id FROM agent_runs r JOIN rm_agents a ON a.website_id = r.website_id AND a.enabled
    WHERE r.status IN ('pending', 'running') AND r.next_attempt_at <= now()
      AND NOT EXISTS (SELECT 1 FROM agent_runs o WHERE o.conversation_id = r.conversation_id
                      AND o.status IN ('pending', 'running') AND o.id < r.id)
    ORDER BY r.next_attempt_at LIMIT %(limit)s
), locked AS (
    SELECT id FROM agent_runs WHERE id = ANY(ARRAY(SELECT id FROM candidates))
      AND status IN ('pending', 'running') AND next_attempt_at <= now()
    FOR UPDATE SKIP LOCKED
)
UPDATE agent_runs r SET status = 'running', attempts = r.attempts + 1, updated_at = now(),
    next_attempt_at = now() + %(lease)s * interval '1 second'
FROM locked, rm_agents a
WHERE r.id = locked.id AND a.website_id = r.website_id
RETURNING r.id, r.org_id, r.website_id, r.conversation_id, r.customer_id, r.kind, r.reply_to, r.acted, r.attempts,
          a.url, a.secret, a.fallback_message, a.greeting
"""
NEXT_DUE = """
SELECT EXTRACT(EPOCH FROM min(next_attempt_at) - now())::float8 FROM agent_runs
WHERE status IN ('pending', 'running') AND next_attempt_at > now()
"""
# The transcript in the order the agent lived it: what a run wrote (its replies, its actions) follows the
# visitor message it answered, before what the visitor wrote during that run. Each row: id, sender,
# content, and the sort key (the answered message's time, whether it is an answer, its own time).
TRANSCRIPT = """
SELECT id, sender, content, sort_at, answer, creation_time FROM (
    SELECT m.id, m.sender, m.content, m.creation_time, COALESCE(q.creation_time, m.creation_time) AS sort_at,
           q.id IS NOT NULL AS answer
    FROM rm_messages m LEFT JOIN rm_messages q ON m.author = 'agent' AND q.id = m.reply_to
    WHERE m.org_id = %(org)s AND m.conversation_id = %(conversation)s AND NOT m.internal AND NOT m.deleted
    ORDER BY m.creation_time DESC, m.id DESC LIMIT %(limit)s) recent
"""
ANSWERED_ACTIONS = """
SELECT a.tool_call_id, a.name, a.arguments, a.result, COALESCE(q.creation_time, a.offered_at), a.offered_at
FROM rm_agent_actions a LEFT JOIN agent_runs r ON r.id = a.agent_run_id LEFT JOIN rm_messages q ON q.id = r.reply_to
WHERE a.conversation_id = %s AND a.result IS NOT NULL
"""
