"""`parley login`: the same authorization page and code flow as an MCP host, for the REST API.

A code asked for with `resource={base}/api` is exchanged for an ordinary operator access token (an
`OperatorTokenIssued` event, used as `Authorization: Token …`) bound to the organization chosen on the
page, rather than for an MCP JWT: so every REST rule applies to it (revocation with
`DELETE /api/operators/sessions/current`, rate limits, organization isolation). It ends by itself after
`API_TOKEN_SECONDS` (30 days): a token minted by a consent page is worth phishing for, so it does not live
forever; no refresh token, `parley login` again. The answer names `token_type` Bearer because the SDK's
model allows nothing else; the client presents it with the `Token` scheme, as any operator token.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta, timezone

from mcp.server.auth.provider import TokenError
from mcp.shared.auth import OAuthToken

from commands import admin
from mcp_server.oauth import digest
from events.ids import new_id

API_TOKEN_SECONDS = 30 * 24 * 3600


class OperatorTokens:
    def __init__(self, services):
        self.services = services

    async def exchange(self, code) -> OAuthToken:
        """The first exchange claims the code, recording the token's id on it; a replayed code finds it
        claimed and revokes the token the first exchange issued (RFC 6749 section 4.1.2)."""
        services, token_id = self.services, new_id()
        async with services.pool.connection() as conn:
            claimed = await (await conn.execute(
                "UPDATE parley_oauth_codes SET grant_id = %s WHERE code_hash = %s AND grant_id IS NULL "
                "AND expires_at > now() RETURNING 1", (token_id, digest(code.code)))).fetchone()
            issued = None if claimed else await (await conn.execute(
                "SELECT grant_id FROM parley_oauth_codes WHERE code_hash = %s", (digest(code.code),))).fetchone()
        org_id, operator_id = uuid.UUID(code.org_id), uuid.UUID(code.subject)
        if not claimed:
            if issued and issued[0]:
                await asyncio.to_thread(admin.revoke_token, services.store, org_id, issued[0])
            raise TokenError("invalid_grant", "the authorization code was already used or has expired")
        expires_at = datetime.now(timezone.utc) + timedelta(seconds=API_TOKEN_SECONDS)
        token, position = await asyncio.to_thread(admin.issue_token, services.store, org_id, operator_id, token_id,
                                                  expires_at)
        # the client uses the token at once: answer once the read models know it
        await services.watch.wait_for(position, ("core",))
        return OAuthToken(access_token=token, scope=" ".join(code.scopes), expires_in=API_TOKEN_SECONDS)
