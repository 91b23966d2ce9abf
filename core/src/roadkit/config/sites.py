"""Host names, origins and proxy networks in configuration files: how they are written and checked."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from pathlib import Path

#: ``host[:port]`` as in a ``Host`` header: a name or IPv4 address, or an IPv6 address in brackets.
_AUTHORITY = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})?)(?::(?P<port>[0-9]{1,5}))?$")
#: An origin: ``scheme://host[:port]``, nothing after it.
_ORIGIN = re.compile(r"^(?P<scheme>https?)://(?P<authority>[^/?#]+)$", re.IGNORECASE)
DEFAULT_PORTS = {"http": 80, "https": 443}
_HEX = "[0-9A-Fa-f]{1,4}"
#: An IPv6 address in text form (RFC 4291 section 2.2, without an embedded IPv4 address or a zone), as alternatives.
IPV6_ALTERNATIVES = "|".join(
    [f"(?:{_HEX}:){{7}}{_HEX}", f"(?:{_HEX}:){{1,7}}:"]
    + [f"(?:{_HEX}:){{1,{6 - k}}}(?::{_HEX}){{1,{k + 1}}}" for k in range(6)]
    + [f":(?::{_HEX}){{1,7}}", "::"]
)
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
#: A ``trusted_proxies`` entry: an IPv4 or IPv6 address, or a network with its prefix length (also the admin OpenAPI ``pattern``).
NETWORK_REGEX = (
    f"^(?:(?:{_OCTET}\\.){{3}}{_OCTET}(?:/(?:3[0-2]|[12]?[0-9]))?|(?:{IPV6_ALTERNATIVES})(?:/(?:12[0-8]|1[01][0-9]|[1-9]?[0-9]))?)$"
)
_NETWORK = re.compile(NETWORK_REGEX)


def split_authority(value: str) -> tuple[str, int | None] | None:
    """``(host, port)`` of ``host[:port]``, the host lower-cased without brackets or a final dot; None when malformed.

    A bare IPv6 address (``::1``, as written in a configuration file) is accepted too, without a port.
    """
    value = value.strip()
    if value.count(":") > 1 and not value.startswith("["):
        value = f"[{value}]"
    match = _AUTHORITY.fullmatch(value)
    if match is None:
        return None
    port = int(match["port"]) if match["port"] is not None else None
    if port is not None and not 0 < port < 65536:
        return None
    host = match["host"].lower()
    if host.startswith("["):
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
    host = host.rstrip(".")
    return (host, port) if host else None


def split_origin(value: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an origin (the default port filled in); None when it is not one (e.g. ``null``)."""
    match = _ORIGIN.fullmatch(value.strip())
    if match is None:
        return None
    authority = split_authority(match["authority"])
    if authority is None:
        return None
    scheme = match["scheme"].lower()
    host, port = authority
    return scheme, host, port if port is not None else DEFAULT_PORTS[scheme]


def check_sites(path: Path, key: str, hosts: Iterable[str], origins: Iterable[str], proxies: Iterable[str], problems: list[str]) -> None:
    """Problems of ``allowed_hosts``, ``allowed_origins`` and ``trusted_proxies`` under ``key`` (each optional)."""
    for i, host in enumerate(hosts):
        if split_authority(host) is None:
            problems.append(f"{path}: {key}allowed_hosts[{i}]: expected a host name or address, optionally with ':port', got {host!r}")
    for i, origin in enumerate(origins):
        if split_origin(origin) is None:
            problems.append(f"{path}: {key}allowed_origins[{i}]: expected an origin such as 'https://console.example', got {origin!r}")
    check_proxies(path, f"{key}trusted_proxies", proxies, problems)


def check_proxies(path: Path, key: str, proxies: Iterable[str], problems: list[str]) -> None:
    """Problems of a ``trusted_proxies`` list: each entry an IP address or a network (``10.0.0.0/8``)."""
    for i, proxy in enumerate(proxies):
        try:
            valid = _NETWORK.fullmatch(proxy) is not None and ipaddress.ip_network(proxy, strict=False) is not None
        except ValueError:
            valid = False
        if not valid:
            problems.append(f"{path}: {key}[{i}]: expected an IP address or a network such as '10.0.0.0/8', got {proxy!r}")
