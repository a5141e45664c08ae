"""Where a webhook may be sent: the SSRF guard, applied when a subscription is saved and again, after DNS
resolution, right before each delivery (the delivery then connects to the address that was checked, so
a name that re-resolves to an internal address in between cannot redirect it)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

MAX_URL_LENGTH = 2048


class RefusedTarget(Exception):
    """The URL is not an acceptable webhook endpoint; the message says why."""


@dataclass(frozen=True)
class Target:
    url: str
    scheme: str
    host: str  # as written in the URL, for the Host header and TLS name checks
    port: int
    path: str  # path and query


# A first-time user points a webhook or an agent at their own machine: say how.
DEVELOPMENT_HINT = " (set PARLEY_WEBHOOK_ALLOW_PRIVATE=1 for development on localhost)"


def parse_target(url: str, *, allow_private: bool) -> Target:
    """The URL's parts, or RefusedTarget when its form is not allowed (scheme, user-info, host)."""
    if len(url) > MAX_URL_LENGTH:
        raise RefusedTarget(f"the URL is longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise RefusedTarget(f"the URL is malformed: {exc}") from None
    allowed = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in allowed:
        raise RefusedTarget(f"the URL must use https{DEVELOPMENT_HINT}")
    if parts.username is not None or parts.password is not None:
        raise RefusedTarget("the URL must not carry user information")
    if not parts.hostname:
        raise RefusedTarget("the URL has no host")
    if parts.fragment:
        raise RefusedTarget("the URL must not have a fragment")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(url, parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path)


# IPv6 prefixes whose last 32 bits are an IPv4 address that a gateway or the host itself reaches (IPv4-
# compatible, IPv4-mapped, IPv4-translated, the NAT64 well-known prefix): judged by that IPv4 address.
IPV4_IN_LAST_32_BITS = tuple(ipaddress.IPv6Network(prefix) for prefix in (
    "::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96"))
# Prefixes that carry an IPv4 address where this check cannot tell (local-use NAT64 of any prefix length,
# Teredo): refused whole.
IPV4_SOMEWHERE = tuple(ipaddress.IPv6Network(prefix) for prefix in ("64:ff9b:1::/48", "2001::/32"))


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address leads to through NAT64, 6to4 or the host's own IPv4 stack."""
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in prefix for prefix in IPV4_IN_LAST_32_BITS):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in prefix for prefix in IPV4_SOMEWHERE):
            return False
        ip = embedded_ipv4(ip) or ip
    # is_global excludes loopback, private, link-local (cloud metadata at 169.254.169.254), CGNAT,
    # unique-local IPv6 (fd00:ec2::254), unspecified and reserved ranges.
    return ip.is_global and not ip.is_multicast


def check_addresses(target: Target, addresses: Sequence[str], *, allow_private: bool) -> str:
    """The address to connect to: the first one, once every resolved address has been found public."""
    if not addresses:
        raise RefusedTarget(f"{target.host} does not resolve")
    if not allow_private:
        for address in addresses:
            if not is_public(address):
                raise RefusedTarget(f"{target.host} resolves to a loopback, private, link-local or "
                                    f"metadata address{DEVELOPMENT_HINT}")
    return addresses[0]


def _addresses(infos: list) -> list[str]:
    return list(dict.fromkeys(info[4][0] for info in infos))


def resolve_sync(target: Target, *, allow_private: bool) -> str:
    try:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise RefusedTarget(f"{target.host} does not resolve") from None
    return check_addresses(target, _addresses(infos), allow_private=allow_private)


@lru_cache(maxsize=4096)
def literal_address(host: str) -> tuple[str] | None:
    """The host as an IP address, when it is one (the same answer every time: cached, since a webhook
    dispatcher asks for every delivery)."""
    try:
        return (str(ipaddress.ip_address(host)),)
    except ValueError:
        return None


async def resolve(target: Target, *, allow_private: bool) -> str:
    if (literal := literal_address(target.host)) is not None:  # no lookup to wait for on the resolver threads
        return check_addresses(target, literal, allow_private=allow_private)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise RefusedTarget(f"{target.host} does not resolve") from None
    return check_addresses(target, _addresses(infos), allow_private=allow_private)


def check_url(url: str, *, allow_private: bool) -> str:
    """Validates a subscription URL when it is saved; returns it unchanged."""
    resolve_sync(parse_target(url, allow_private=allow_private), allow_private=allow_private)
    return url
