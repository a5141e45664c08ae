"""Deterministic generator of a synthetic Parley help-center corpus.

Usage:
    python generate.py --n 10000 --out /tmp/parley-corpus

Stdlib only. The same (n, seed) always yields the same documents.
"""
from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

# Each category: (subjects, settings path, product terms, error codes)
DOMAIN: dict[str, dict[str, list[str]]] = {
    "widget": {
        "subjects": ["the chat widget", "the launcher", "the messenger", "proactive messages",
                     "the pre-chat form", "visibility rules", "allowed origins", "office hours"],
        "paths": ["Settings → Channels → Web widget", "Settings → Workspace → Office hours"],
        "terms": ["`parleySettings`", "`Parley(\"update\")`", "`hideDefaultLauncher`", "`deferUntil`"],
        "codes": ["E1101", "E1107", "E1200"],
    },
    "security": {
        "subjects": ["identity verification", "SAML single sign-on", "SCIM provisioning",
                     "two-factor authentication", "network access rules", "the audit log"],
        "paths": ["Settings → Security → Identity verification", "Settings → Security → Single sign-on"],
        "terms": ["`user_hash`", "`user_jwt`", "HMAC-SHA256", "the Verification health chart"],
        "codes": ["E1042", "E1043", "E3100", "E3101", "E3104"],
    },
    "api": {
        "subjects": ["API keys", "key scopes", "rate limits", "cursor pagination",
                     "idempotency keys", "the bulk contacts endpoint", "the search API"],
        "paths": ["Settings → Developers → API keys", "Settings → Developers → API usage"],
        "terms": ["`Parley-Version`", "`Idempotency-Key`", "`X-RateLimit-Remaining`", "`pk_live_` keys"],
        "codes": ["PARLEY-401", "PARLEY-403", "PARLEY-409", "PARLEY-422", "PARLEY-429"],
    },
    "webhooks": {
        "subjects": ["webhook endpoints", "signing secrets", "delivery retries", "webhook filters",
                     "the delivery log", "event topics"],
        "paths": ["Settings → Developers → Webhooks"],
        "terms": ["`Parley-Signature`", "`Parley-Event-Id`", "`whsec_` secrets", "`conversation.created`"],
        "codes": ["E2001", "E2002", "E2003", "E2004"],
    },
    "billing": {
        "subjects": ["your subscription", "seats", "invoices", "payment methods", "tax IDs",
                     "annual billing", "AI resolution usage"],
        "paths": ["Settings → Billing → Plan", "Settings → Billing → Invoices"],
        "terms": ["proration", "the grace period", "billing contacts", "a monthly usage cap"],
        "codes": ["E4010", "E4011", "E4012"],
    },
    "team": {
        "subjects": ["teammates", "roles", "teams", "notifications", "capacity limits",
                     "Collaborator seats", "Do Not Disturb"],
        "paths": ["Settings → Team → Teammates", "Settings → Team → Roles", "Preferences → Notifications"],
        "terms": ["the Agent role", "@mentions", "round-robin", "quiet hours"],
        "codes": [],
    },
    "inbox": {
        "subjects": ["saved views", "assignment rules", "macros", "tags", "SLA policies",
                     "snoozed conversations", "CSAT surveys", "bulk actions"],
        "paths": ["Settings → Inbox → Assignment rules", "Settings → Inbox → SLAs", "Settings → Inbox → Macros"],
        "terms": ["`is:open`", "`tag:refund`", "`{{contact.first_name}}`", "first response time"],
        "codes": ["E8010"],
    },
    "help-center": {
        "subjects": ["articles", "collections", "the custom domain", "translations",
                     "article feedback", "search analytics", "audience rules"],
        "paths": ["Help center → Articles", "Help center → Settings → Domain", "Help center → Settings → Languages"],
        "terms": ["a CNAME record", "`/sitemap.xml`", "version history", "the `articles:write` scope"],
        "codes": [],
    },
    "integrations": {
        "subjects": ["the Slack integration", "Salesforce sync", "the Jira app", "Zapier",
                     "the agent hook", "AI handoff", "sidebar apps", "WhatsApp"],
        "paths": ["Settings → Integrations", "Settings → AI agent → Agent hook"],
        "terms": ["`\"action\": \"handoff\"`", "`ahs_` hook secrets", "sidebar fields", "message templates"],
        "codes": ["E7001", "E7002", "E7003", "E7004"],
    },
    "mobile-sdk": {
        "subjects": ["the iOS SDK", "the Android SDK", "push notifications", "the React Native package",
                     "the Flutter plugin", "mobile identity verification"],
        "paths": ["Settings → Channels → Mobile apps", "Settings → Channels → Mobile apps → Push"],
        "terms": ["`Parley.login()`", "`Parley.setDeviceToken()`", "an APNs `.p8` key", "FCM service accounts"],
        "codes": ["E6001", "E6002", "E6003", "E6004"],
    },
    "privacy": {
        "subjects": ["data exports", "retention policies", "erasure requests", "redaction",
                     "EU data residency", "IP address collection"],
        "paths": ["Settings → Data → Export", "Settings → Data → Retention", "Settings → Data → Privacy"],
        "terms": ["NDJSON files", "the `legal-hold` tag", "`[REDACTED]` placeholders", "the DPA"],
        "codes": ["E5020", "E5021", "E5022"],
    },
}

TITLE_TEMPLATES = [
    "How to {verb} {subject}", "{Verb} {subject} for your team", "Troubleshooting {subject}",
    "{Subject}: frequently asked questions", "Best practices for {subject}",
    "What to check when {subject} stops working", "Understanding {subject}",
    "{Verb} {subject} on the {plan} plan", "A quick guide to {subject}",
    "Why {subject} behaves differently in {context}",
]
VERBS = ["set up", "configure", "manage", "audit", "test", "migrate", "review", "automate", "secure", "monitor"]
PLANS = ["Starter", "Pro", "Enterprise"]
CONTEXTS = ["a sandbox workspace", "EU-hosted workspaces", "single-page apps", "mobile apps",
            "large workspaces", "shared inboxes", "multilingual setups"]
AUDIENCES = ["Owners", "Admins", "teammates with the right permission", "developers", "team leads"]
INTRO = [
    "This guide explains how {subject} works in Parley and what {audience} should check first.",
    "Most teams touch {subject} in their first week. Here is what you need to know.",
    "If {subject} is not doing what you expect, work through the points below before contacting support.",
    "{Subject} can save your team hours each week when it is configured carefully.",
]
STEP = [
    "Open **{path}**.", "Select the item you want to change and click **Edit**.",
    "Review the preview on the right before saving.", "Click **Save**; changes apply within a minute.",
    "Check the audit log to confirm who made the change.", "Test the change in a sandbox workspace first.",
    "Use {term} to confirm the new behaviour.", "Ask a teammate to repeat the test from another browser.",
]
FACTS = [
    "Only {audience} can change these settings.",
    "Changes are recorded in the audit log with the actor and timestamp.",
    "The limit is {num} per workspace on the {plan} plan.",
    "{Term} is available on every plan.",
    "Settings made here override the workspace defaults for that team.",
    "Data is kept for {num} days unless a retention policy removes it sooner.",
    "Reports update every {num} minutes.",
]
TIPS = [
    "Document the change in your internal runbook so the next on-call person knows about it.",
    "Start small: enable {subject} for one team, measure for a week, then roll it out.",
    "Review these settings each quarter, because teams and traffic change over time.",
    "If customers are affected, post a short note in your help center while you investigate.",
]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _fill(template: str, ctx: dict[str, str]) -> str:
    keys = dict(ctx)
    keys.update({_cap(k): _cap(v) for k, v in ctx.items()})
    return template.format(**keys)


def _context(rng: random.Random, spec: dict[str, list[str]]) -> dict[str, str]:
    return {
        "subject": rng.choice(spec["subjects"]), "verb": rng.choice(VERBS), "plan": rng.choice(PLANS),
        "context": rng.choice(CONTEXTS), "audience": rng.choice(AUDIENCES), "path": rng.choice(spec["paths"]),
        "term": rng.choice(spec["terms"]), "num": str(rng.choice([5, 10, 15, 20, 30, 50, 90, 100, 250])),
    }


def _body(rng: random.Random, spec: dict[str, list[str]], ctx: dict[str, str]) -> str:
    parts = [_fill(rng.choice(INTRO), ctx), "", "## Steps", ""]
    picked = sorted(rng.sample(range(len(STEP)), rng.randint(3, 6)))  # keep steps in logical order
    for i, step in enumerate((STEP[j] for j in picked), 1):
        parts.append(f"{i}. " + _fill(step, {**ctx, "term": rng.choice(spec["terms"])}))
    parts += ["", "## Things to know", ""]
    for fact in rng.sample(FACTS, rng.randint(2, 4)):
        parts.append("- " + _fill(fact, {**ctx, "num": str(rng.choice([3, 7, 10, 25, 60, 500]))}))
    if spec["codes"] and rng.random() < 0.45:
        code = rng.choice(spec["codes"])
        parts += ["", "## Error messages", "",
                  f"If you see `{code}`, the request was rejected. Check the settings under **{ctx['path']}** "
                  f"and retry. The error details in the log explain which value was not accepted."]
    if rng.random() < 0.3:
        parts += ["", "```json", '{ "workspace_id": "wk_%06x", "enabled": %s }'
                  % (rng.randrange(16 ** 6), rng.choice(["true", "false"])), "```"]
    parts += ["", "## Tip", "", _fill(rng.choice(TIPS), ctx)]
    return "\n".join(parts)


def generate(n: int = 10_000, seed: int = 7) -> list[dict]:
    """Return n help documents as dicts with title, category, locale and content."""
    rng = random.Random(seed)
    categories = sorted(DOMAIN)
    seen: dict[str, int] = {}
    docs = []
    for _ in range(n):
        category = rng.choice(categories)
        spec = DOMAIN[category]
        ctx = _context(rng, spec)
        title = _fill(rng.choice(TITLE_TEMPLATES), ctx)
        seen[title] = seen.get(title, 0) + 1
        if seen[title] > 1:  # keep titles unique without losing determinism
            title = f"{title} ({seen[title]})"
        body = _body(rng, spec, ctx)
        words = len(body.split())
        while words < 80:
            extra = _fill(rng.choice(FACTS), {**ctx, "num": str(rng.randint(2, 99))})
            body += "\n- " + extra
            words += len(extra.split())
        docs.append({"title": title, "category": category, "locale": "en",
                     "content": f"# {title}\n\n{body}\n"})
    return docs


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80]


def main() -> None:
    parser = argparse.ArgumentParser(description="Generate a synthetic Parley help-center corpus.")
    parser.add_argument("--n", type=int, default=10_000, help="number of documents")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    for i, doc in enumerate(generate(args.n, args.seed)):
        folder = args.out / doc["category"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:05d}-{slugify(doc['title'])}.md").write_text(doc["content"], encoding="utf-8")
    print(f"wrote {args.n} documents to {args.out}")


if __name__ == "__main__":
    main()
