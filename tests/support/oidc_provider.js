// A real OpenID Connect provider for the single sign-on tests: the `oidc-provider` package on a loopback
// port, with one confidential client and a few static accounts. Its login page is a plain form naming the
// account to sign in as (no password: the tests decide who the provider vouches for); consent is given at
// once. Run by tests/support/oidc.py:
//   node oidc_provider.js '<json config>'   with OIDC_PROVIDER_MODULES=<node_modules holding oidc-provider>
// config: {clientId, clientSecret, redirectUris: [...], accounts: {id: {email, email_verified, name}}}
// Prints "listening <issuer>" once it answers.

import http from "node:http";
import path from "node:path";
import {pathToFileURL} from "node:url";

const config = JSON.parse(process.argv[2]);
const modules = process.env.OIDC_PROVIDER_MODULES;
const {default: Provider} = await import(pathToFileURL(path.join(modules, "oidc-provider", "lib", "index.js")).href);

const server = http.createServer();
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: config.clientId, client_secret: config.clientSecret, redirect_uris: config.redirectUris,
    grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "client_secret_basic",
  }],
  claims: {openid: ["sub"], email: ["email", "email_verified"], profile: ["name"]},
  findAccount: (ctx, id) => config.accounts[id] && {
    accountId: id,
    claims: () => ({sub: id, ...config.accounts[id]}),
  },
  interactions: {url: (ctx, interaction) => `/interaction/${interaction.uid}`},
  features: {devInteractions: {enabled: false}},
  cookies: {keys: ["oidc-provider test key"]},
  // the claims of the scopes asked for go in the ID token (not only the userinfo endpoint's answer)
  conformIdTokenClaims: false,
});

const escape = (text) => String(text).replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

async function form(req) {
  let body = "";
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

async function consent(details) {
  const grant = details.grantId ? await provider.Grant.find(details.grantId)
    : new provider.Grant({accountId: details.session?.accountId ?? details.result?.login?.accountId,
                          clientId: details.params.client_id});
  grant.addOIDCScope(details.params.scope);
  return grant.save();
}

const callback = provider.callback();
server.on("request", async (req, res) => {
  const match = new URL(req.url, issuer).pathname.match(/^\/interaction\/([^/]+)$/);
  if (!match) return callback(req, res);
  try {
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === "consent") {
      const grantId = await consent(details);
      return await provider.interactionFinished(req, res, {consent: {grantId}}, {mergeWithLastSubmission: true});
    }
    if (req.method === "POST") {
      const account = (await form(req)).get("account");
      if (!config.accounts[account]) {
        res.writeHead(400, {"content-type": "text/plain"});
        return res.end(`no account ${account}`);
      }
      return await provider.interactionFinished(req, res, {login: {accountId: account}},
                                                {mergeWithLastSubmission: false});
    }
    res.writeHead(200, {"content-type": "text/html; charset=utf-8"});
    res.end(`<!doctype html><html lang="en"><title>Test identity provider</title>
<h1>Test identity provider</h1>
<form method="post" action="/interaction/${escape(match[1])}">
<label>Account <input name="account" autocomplete="off"></label>
<button type="submit">Continue</button></form>
<p>Accounts: ${Object.keys(config.accounts).map(escape).join(", ")}</p></html>`);
  } catch (error) {
    res.writeHead(500, {"content-type": "text/plain"});
    res.end(String(error));
  }
});
console.log(`listening ${issuer}`);
