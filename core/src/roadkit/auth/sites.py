"""Which requests the admin listener answers at all: its own host names, and no page of another site.

A web page can make a browser send requests to the admin port: through a DNS name it rebinds to
127.0.0.1 (the ``Host`` header then names the attacker's domain), or cross-site (an ``<img>`` or a
form, which carry ``Sec-Fetch-Site: cross-site`` and, for a POST, an ``Origin``). The first is a
421 Misdirected Request, the second a 403, before authentication and whatever the path.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import attrs
from starlette.requests import Request

from roadkit.config.models import AdministratorConfig
from roadkit.config.sites import DEFAULT_PORTS, split_authority, split_origin
from roadkit.errors import Forbidden, RoadkitError
from roadkit.web.forwarded import Network, parse_networks, public_url

#: The names of this machine every admin listener answers to, on any port.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
#: Listening hosts that mean "every interface": not a name a client uses.
WILDCARDS = ("0.0.0.0", "::", "")


class MisdirectedRequest(RoadkitError):
    """The ``Host`` is not one of the listener's names (RFC 9110 §15.5.20)."""

    status = 421
    code = "misdirected_request"


@attrs.frozen
class SitePolicy:
    """The admin listener's names, the other origins allowed to call it, and the proxies it believes."""

    #: ``(host, port)``; port None: any port.
    hosts: frozenset[tuple[str, int | None]]
    #: ``(scheme, host, port)`` of the configured origins (the request's own origin is always allowed).
    origins: frozenset[tuple[str, str, int]]
    proxies: tuple[Network, ...] = ()

    @classmethod
    def for_admin(cls, config: AdministratorConfig) -> SitePolicy:
        """The policy of ``[administrator]``: loopback names, the listener's own host, ``allowed_hosts``..."""
        hosts: set[tuple[str, int | None]] = {(name, None) for name in LOOPBACK_NAMES}
        own = config.listener.host.strip().lower()
        if own not in WILDCARDS:
            split = split_authority(own)
            if split is not None:
                hosts.add((split[0], None))
        for entry in config.allowed_hosts:
            split = split_authority(entry)
            if split is not None:  # the loader refused any other
                hosts.add(split)
        origins = {origin for entry in config.allowed_origins if (origin := split_origin(entry)) is not None}
        return cls(frozenset(hosts), frozenset(origins), parse_networks(config.trusted_proxies))

    def host_allowed(self, authority: str, scheme: str) -> bool:
        """Whether ``host[:port]`` (a ``Host`` header) names this listener."""
        if authority.count(":") > 1 and not authority.startswith("["):
            return False  # an IPv6 address in a Host header is always in brackets
        split = split_authority(authority)
        if split is None:
            return False
        host, port = split
        port = port if port is not None else DEFAULT_PORTS[scheme]
        return (host, None) in self.hosts or (host, port) in self.hosts

    def check(self, request: Request, *, write: bool) -> None:
        """Raise :class:`MisdirectedRequest` (421) or :class:`~roadkit.errors.Forbidden` (403), or return."""
        url = public_url(request, self.proxies)
        headers = request.headers
        scheme = "https" if request.scope.get("scheme") == "https" else "http"
        names = [(headers["host"], scheme)] if "host" in headers else []  # HTTP/1.0 may omit it; no browser does
        if url.forwarded:
            names.append((url.authority, url.scheme))  # the name the client used, as the trusted proxy says
        for name, name_scheme in names:
            if not self.host_allowed(name, name_scheme):
                raise MisdirectedRequest(
                    f"This is the roadkit admin listener, which does not answer to the host {name[:100]!r}"
                    " (add it to [administrator] allowed_hosts if it is one of its names)"
                )
        own = split_authority(url.authority)
        own_origin = (url.scheme, own[0], own[1] if own[1] is not None else DEFAULT_PORTS[url.scheme]) if own else None
        origin = headers.get("origin")
        if origin is not None:
            parsed = split_origin(origin)
            if parsed is None or (parsed != own_origin and parsed not in self.origins):
                raise Forbidden(
                    f"Cross-site request refused: the origin {origin[:100]!r} may not call the admin API"
                    " (add it to [administrator] allowed_origins to allow it)",
                    code="cross_site_request",
                )
        site = headers.get("sec-fetch-site", "").strip().lower()
        if site in ("cross-site", "same-site") and (origin is None or split_origin(origin) not in self.origins):
            raise Forbidden(
                f"Cross-site request refused: the browser says it comes from another site (Sec-Fetch-Site: {site})",
                code="cross_site_request",
            )
        referer = headers.get("referer")
        if write and origin is None and not site and referer is not None:
            # Older browsers send neither Origin nor Sec-Fetch-Site with an <img>: the page's address tells.
            try:
                parts = urlsplit(referer)
                page = split_origin(f"{parts.scheme}://{parts.netloc}")
            except ValueError:
                page = None
            if page is None or (page != own_origin and page not in self.origins):
                raise Forbidden("Cross-site request refused: it was sent by a page of another site (Referer)", code="cross_site_request")
