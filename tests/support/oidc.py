"""A real OpenID Connect provider for the single sign-on tests (`oidc_provider.js`, the `oidc-provider`
package run by Node on a loopback port), and the steps of a sign-in through it."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin

import httpx

from tests.support.npm import node, npm_modules

PACKAGE = "oidc-provider@9.13.3"
SCRIPT = Path(__file__).with_name("oidc_provider.js")
CLIENT_ID, CLIENT_SECRET = "parley-test", "a client secret only the tests know"
# who the provider vouches for, by account name
ACCOUNTS = {
    "ada": {"email": "ada@acme.test", "email_verified": True, "name": "Ada"},
    "grace": {"email": "grace@acme.test", "email_verified": True, "name": "Grace"},
    "linus": {"email": "linus@acme.test", "email_verified": True, "name": "Linus"},
    "mallory": {"email": "mallory@elsewhere.test", "email_verified": True, "name": "Mallory"},
    "unverified": {"email": "eve@acme.test", "email_verified": False, "name": "Eve"},
}


@dataclass
class OidcProvider:
    redirect_uri: str
    issuer: str = ""
    proc: subprocess.Popen | None = None
    output: list[str] = field(default_factory=list)

    def start(self, timeout: float = 60) -> "OidcProvider":
        config = {"clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET, "redirectUris": [self.redirect_uri],
                  "accounts": ACCOUNTS}
        self.proc = subprocess.Popen([node(), str(SCRIPT), json.dumps(config)], text=True,
                                     env={**os.environ, "OIDC_PROVIDER_MODULES": str(npm_modules(PACKAGE))},
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        ready = threading.Event()

        def pump() -> None:
            for line in self.proc.stdout:
                self.output.append(line)
                if line.startswith("listening "):
                    self.issuer = line.split(" ", 1)[1].strip()
                    ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(timeout):
            self.stop()
            raise RuntimeError("the OpenID provider did not start:\n" + "".join(self.output))
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def settings(self, **changes) -> dict:
        """A body of `PUT /api/organization/sso` for this provider."""
        return {"issuer": self.issuer, "clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET,
                "allowedDomains": ["acme.test"], "defaultRole": "agent", "buttonLabel": "Acme ID",
                "enabled": True, **changes}


def follow(client: httpx.Client, url: str, until: str) -> httpx.Response:
    """Follows redirects from `url` (the service's and the provider's) up to the first answer that is not
    a redirect, or the first redirect to a URL starting with `until` (not followed)."""
    response = client.get(url)
    while response.is_redirect:
        location = urljoin(str(response.url), response.headers["location"])
        if location.startswith(until):
            return response
        response = client.get(location)
    return response


def sign_in(client: httpx.Client, service_url: str, org_id, account: str) -> str:
    """Runs a sign-in through the provider as `account` up to the service's callback, and answers the
    callback's URL (not yet visited)."""
    service = service_url.rstrip("/") + "/"
    login = follow(client, f"{service}api/sso/{org_id}/start", until=service)
    assert login.status_code == 200 and "/interaction/" in str(login.url), login.text
    done = client.post(str(login.url), data={"account": account})
    back = follow(client, urljoin(str(done.url), done.headers["location"]), until=service) \
        if done.is_redirect else done
    assert back.is_redirect, back.text
    return urljoin(str(back.url), back.headers["location"])
