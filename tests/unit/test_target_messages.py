"""A refused webhook or agent URL says how to allow one on localhost during development."""

from __future__ import annotations

import pytest

from commands.addresses import RefusedTarget, check_addresses, parse_target

HINT = "(set PARLEY_WEBHOOK_ALLOW_PRIVATE=1 for development on localhost)"


def test_an_http_url_is_refused_with_the_development_setting_named():
    with pytest.raises(RefusedTarget, match=r"must use https \(set PARLEY_WEBHOOK_ALLOW_PRIVATE=1"):
        parse_target("http://localhost:9000/hook", allow_private=False)


def test_a_local_address_is_refused_with_the_development_setting_named():
    target = parse_target("https://localhost:9000/hook", allow_private=False)
    with pytest.raises(RefusedTarget) as refused:
        check_addresses(target, ["127.0.0.1"], allow_private=False)
    assert str(refused.value).endswith(HINT)
