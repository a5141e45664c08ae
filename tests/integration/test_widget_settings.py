"""A website's widget settings over HTTP: an admin reads and changes them (bad input refused, nothing
stored), another organization and an agent cannot, and the widget reads them without a credential from
`GET /api/chat/config`, cacheable with an ETag."""

from __future__ import annotations

import pytest

from commands.admin import DEFAULT_BRAND_COLOR

PROBLEM = "application/problem+json"
DEFAULTS = {"title": None, "welcomeMessage": None, "awayMessage": None, "position": "right", "launcherLabel": None,
            "helpSearch": True, "ratings": True, "theme": "light", "language": "en"}


def widget(http, tenant, headers=None):
    response = http.get(f"/api/websites/{tenant.website_name}/widget", headers=headers or tenant.operator)
    assert response.status_code == 200, response.text
    return response.json()


def test_an_admin_changes_the_widget_and_the_widget_reads_it_cacheably(http, tenant):
    assert widget(http, tenant) == {"brandColor": "#123456", **DEFAULTS}
    changed = {"brandColor": "#0f766e", "title": "Acme support", "welcomeMessage": "Bonjour !", "position": "left",
               "launcherLabel": "Help", "helpSearch": False, "ratings": False, "theme": "dark", "language": "fr"}
    saved = http.put(f"/api/websites/{tenant.website_name}/widget", headers=tenant.operator, json=changed)
    assert saved.status_code == 200, saved.text
    assert saved.json() == {**DEFAULTS, **changed} == widget(http, tenant)
    # only the fields given change; a null text goes back to the widget's own words
    again = http.put(f"/api/websites/{tenant.website_name}/widget", headers=tenant.operator,
                     json={"title": None, "theme": "auto"}).json()
    assert again == {**DEFAULTS, **changed, "title": None, "theme": "auto"}
    # the brand color is the website's own
    [site] = [w for w in http.get("/api/websites", headers=tenant.operator).json() if w["websiteName"] == tenant.website_name]
    assert site["brandColor"] == "#0f766e"

    config = http.get("/api/chat/config", params={"websiteId": str(tenant.website_id)})
    assert config.status_code == 200, config.text
    body = config.json()
    assert {k: body[k] for k in again} == again
    assert body["open"] is True and body["nextOpenAt"] is None
    assert body["online"] is False  # nobody at the dashboard yet: the team reads as away
    assert http.post("/api/operators/me/activity", headers=tenant.operator).status_code in (200, 204)
    config = http.get("/api/chat/config", params={"websiteId": str(tenant.website_id)})
    assert config.json()["online"] is True
    assert config.headers["cache-control"] == "public, max-age=60"
    etag = config.headers["etag"]
    unchanged = http.get("/api/chat/config", params={"websiteId": str(tenant.website_id)},
                         headers={"If-None-Match": etag})
    assert unchanged.status_code == 304 and unchanged.content == b""
    http.put(f"/api/websites/{tenant.website_name}/widget", headers=tenant.operator, json={"title": "New title"})
    changed_config = http.get("/api/chat/config", params={"websiteId": str(tenant.website_id)},
                              headers={"If-None-Match": etag})
    assert changed_config.status_code == 200 and changed_config.json()["title"] == "New title"
    assert changed_config.headers["etag"] != etag


@pytest.mark.parametrize("body, field", [
    ({"brandColor": "red"}, "brandColor"),
    ({"brandColor": "#12345"}, "brandColor"),
    ({"brandColor": "url(javascript:alert(1))"}, "brandColor"),
    ({"position": "middle"}, "position"),
    ({"theme": "neon"}, "theme"),
    ({"language": "xx"}, "language"),
    ({"title": ""}, "title"),
    ({"offsetX": 12}, None),
    ({"title": "Fine", "unknown": True}, None),
])
def test_invalid_settings_are_refused_and_nothing_is_stored(http, tenant, body, field):
    before = widget(http, tenant)
    response = http.put(f"/api/websites/{tenant.website_name}/widget", headers=tenant.operator, json=body)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == PROBLEM
    if field:
        assert field in response.text
    assert widget(http, tenant) == before


def test_another_organization_an_agent_and_a_key_cannot_touch_the_widget(http, tenant, other_tenant):
    path = f"/api/websites/{tenant.website_name}/widget"
    assert http.get(path, headers=other_tenant.operator).status_code == 404
    assert http.put(path, headers=other_tenant.operator, json={"title": "Hijacked"}).status_code == 404
    agent = tenant.add_operator("agent")
    assert http.put(path, headers=agent.headers, json={"title": "Mine"}).status_code == 403
    assert http.put(path, headers=tenant.key(), json={"title": "Mine"}).status_code in (401, 403)
    assert widget(http, tenant)["title"] is None


def test_the_config_of_an_unknown_website_is_404_and_a_new_website_has_the_default_color(http, tenant):
    assert http.get("/api/chat/config", params={"websiteId": "not-an-id"}).status_code == 404
    assert http.get("/api/chat/config").status_code == 400
    created = http.post("/api/websites", headers=tenant.operator, json={"websiteName": f"plain-{tenant.website_name}"})
    assert created.status_code == 200, created.text
    assert created.json()["brandColor"] == DEFAULT_BRAND_COLOR
    config = http.get("/api/chat/config", params={"websiteId": created.json()["_id"]}).json()
    assert config["brandColor"] == DEFAULT_BRAND_COLOR


def test_a_restricted_website_answers_its_config_only_to_its_origins(http, tenant):
    http.put(f"/api/websites/{tenant.website_name}", headers=tenant.operator,
             json={"allowedOrigins": ["https://shop.example"]})
    params = {"websiteId": str(tenant.website_id)}
    assert http.get("/api/chat/config", params=params, headers={"Origin": "https://evil.example"}).status_code == 403
    allowed = http.get("/api/chat/config", params=params, headers={"Origin": "https://shop.example"})
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == "https://shop.example"

