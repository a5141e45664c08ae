"""Who the client is, network-wise: the direct peer, unless that peer is a reverse proxy named in
`PARLEY_TRUSTED_PROXIES`; only then is `X-Forwarded-For` read, and only as far as trusted hops vouch
for it, so a client cannot pick its own address (and its own rate-limit bucket) by sending the header."""

from __future__ import annotations

import ipaddress

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
CLIENT_ADDRESS = "parley.client_address"  # scope key: the address the middleware found for an /api/ request


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def limit_key(address: str) -> str:
    """What the anonymous limit counts: the address, or for IPv6 its /64, which one client usually holds
    whole (counting single IPv6 addresses would let it rotate through them)."""
    parsed = _address(address)
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed) if parsed else address


class TrustedProxies:
    def __init__(self, spec: str):
        """`spec`: comma-separated addresses or CIDRs; a malformed entry refuses to start the service."""
        try:
            self.networks: tuple[Network, ...] = tuple(
                ipaddress.ip_network(part.strip(), strict=False) for part in spec.split(",") if part.strip())
        except ValueError as exc:
            raise ValueError(f"PARLEY_TRUSTED_PROXIES: {exc}") from None

    def trusts(self, address: str) -> bool:
        parsed = _address(address)
        return parsed is not None and any(parsed in network for network in self.networks)

    def client_address(self, peer: str | None, forwarded_for: str | None) -> str:
        """The peer; or, when the peer is trusted, the rightmost `X-Forwarded-For` hop that is not a trusted
        proxy (each trusted proxy appended the address it saw; anything left of that is the client's say)."""
        if not peer:
            return "unknown"
        if not forwarded_for or not self.trusts(peer):
            return peer
        client = peer
        for hop in reversed(forwarded_for.split(",")):
            address = _address(hop)
            if address is None:
                break  # a trusted proxy writes addresses; what is not one is not evidence
            client = str(address)
            if not self.trusts(client):
                break
        return client
