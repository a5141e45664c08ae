"""The SSRF guard on IPv6 addresses that lead to an IPv4 address (commands/addresses.py `is_public`): each
is judged by the IPv4 address it reaches, or refused where that address cannot be told."""

import pytest

from commands.addresses import RefusedTarget, check_addresses, is_public, parse_target


@pytest.mark.parametrize("address", [
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254, the cloud metadata service
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "2002:a9fe:a9fe::",  # 6to4 of 169.254.169.254
    "2002:a00:1::1",  # 6to4 of 10.0.0.1
    "::127.0.0.1",  # IPv4-compatible loopback
    "::a9fe:a9fe",  # IPv4-compatible metadata address
    "::ffff:0:7f00:1",  # IPv4-translated (SIIT) loopback
    "::ffff:127.0.0.1",  # IPv4-mapped loopback
    "64:ff9b:1::a9fe:a9fe",  # local-use NAT64 (64:ff9b:1::/48), whatever it embeds
    "64:ff9b:1:ffff::808:808",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo (2001::/32)
    "2001::a9fe:a9fe",
    "::", "::1",
])
def test_an_ipv6_form_of_a_private_ipv4_address_is_not_public(address):
    assert not is_public(address)


@pytest.mark.parametrize("address", [
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8: a public host, reached from an IPv6-only network
    "2002:808:808::1",  # 6to4 of 8.8.8.8
    "::ffff:8.8.8.8",
    "2606:4700:4700::1111",  # a plain public IPv6 address
    "8.8.8.8",
])
def test_a_public_address_in_any_form_stays_public(address):
    assert is_public(address)


def test_a_webhook_resolving_to_nat64_metadata_is_refused():
    target = parse_target("https://hooks.example.com/in", allow_private=False)
    with pytest.raises(RefusedTarget, match="metadata"):
        check_addresses(target, ["2606:4700:4700::1111", "64:ff9b::a9fe:a9fe"], allow_private=False)
    assert check_addresses(target, ["64:ff9b::a9fe:a9fe"], allow_private=True) == "64:ff9b::a9fe:a9fe"
