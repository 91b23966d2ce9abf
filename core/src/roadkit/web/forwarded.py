"""The URL a client used: the ``Host`` header, or ``X-Forwarded-*`` / ``Forwarded`` from a trusted proxy only.

Anyone can send ``X-Forwarded-Host: evil.example``; a reverse proxy in front of roadkit writes them
for its clients. So they count only when the peer is one of the configured proxies
(``trusted_proxies``: addresses or networks), and a value that is not a host name or address is
ignored wherever it comes from.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

import attrs
from starlette.requests import Request

from roadkit.config.sites import split_authority

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_FORWARDED_PAIR = re.compile(r'(?P<name>[A-Za-z]+)=(?P<value>"[^"]*"|[^;,\s]*)')


def parse_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """The networks of ``trusted_proxies`` entries (an address is a network of one); the loader checked them."""
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def peer_is_trusted(host: str | None, networks: tuple[Network, ...]) -> bool:
    """Whether the peer address ``host`` is in one of ``networks``."""
    if not host or not networks:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in networks)


@attrs.frozen
class PublicUrl:
    """How the client reached this app: its scheme and ``host[:port]``, and whether a proxy said so."""

    scheme: str
    authority: str
    forwarded: bool


def _forwarded_header(value: str) -> dict[str, str]:
    """The first element of an RFC 7239 ``Forwarded`` header (the one the client-facing proxy wrote)."""
    first = value.split(",")[0]
    return {m["name"].lower(): m["value"].strip('"') for m in _FORWARDED_PAIR.finditer(first)}


def public_url(request: Request, networks: tuple[Network, ...] | None = None) -> PublicUrl:
    """The scheme and authority the client used (``networks``: the trusted proxies; default the app's)."""
    if networks is None:
        networks = getattr(request.app.state, "trusted_proxies", ()) if "app" in request.scope else ()
    scheme = "https" if request.scope.get("scheme") == "https" else "http"
    own = request.headers.get("host", "")
    authority = own if _well_formed(own) else _server_authority(request)
    headers = request.headers
    if networks and peer_is_trusted(request.client.host if request.client else None, networks):
        forwarded = _forwarded_header(headers["forwarded"]) if "forwarded" in headers else {}
        proto = (forwarded.get("proto") or headers.get("x-forwarded-proto", "")).split(",")[0].strip().lower()
        host = (forwarded.get("host") or headers.get("x-forwarded-host", "")).split(",")[0].strip()
        if proto in ("http", "https") or _well_formed(host):
            return PublicUrl(
                scheme=proto if proto in ("http", "https") else scheme,
                authority=host if _well_formed(host) else authority,
                forwarded=True,
            )
    return PublicUrl(scheme=scheme, authority=authority, forwarded=False)


def _well_formed(authority: str) -> bool:
    """Whether a header's ``host[:port]`` can go into a URL as it is (an IPv6 address in brackets)."""
    if not authority or (authority.count(":") > 1 and not authority.startswith("[")):
        return False
    return split_authority(authority) is not None


def _server_authority(request: Request) -> str:
    """The listener's own address, for a request without a usable ``Host`` header."""
    server = request.scope.get("server")
    if not server:
        return "localhost"
    host, port = server[0], server[1]
    host = f"[{host}]" if ":" in str(host) else str(host)
    return f"{host}:{port}" if port is not None else host
