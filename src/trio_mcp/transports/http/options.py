"""Limits and security settings of the HTTP transport (`HttpOptions`).

The defaults are safe for a server on this machine: browser pages from elsewhere are refused
(the DNS-rebinding guard: Host and Origin, see `guard`), and every resource a client can make
the server hold (sessions, requests in flight, body bytes, idle time, time to send a request,
connections) is bounded, each default with a comment giving its precedent or its reason.
Nothing here performs I/O; `app` re-exports these names, where the facade and the CLI find
them. The options name the server's authorization records (`TokenVerifier`,
`ProtectedResource`), which live with the verifiers in `trio_mcp.auth`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from ...auth.resource import ProtectedResource, TokenVerifier
from .replay import EventStore, MemoryEventStore

__all__ = [
    "DEFAULT_ALLOWED_ORIGINS",
    "HttpOptions",
    "MetricsRenderer",
]

#: Browser origins accepted by default: pages served from this machine only (DNS-rebinding
#: guard). Requests without an Origin header (non-browser clients) are always accepted.
DEFAULT_ALLOWED_ORIGINS: Final = (
    "http://localhost",
    "http://127.0.0.1",
    "http://[::1]",
    "https://localhost",
    "https://127.0.0.1",
    "https://[::1]",
)


#: Renders what `HttpOptions.metrics_path` serves: called with the scrape's Accept header (None
#: without one), returns the body and its Content-Type (`PrometheusMiddleware.render`).
MetricsRenderer = Callable[[str | None], tuple[bytes, str]]


@dataclass(frozen=True)
class HttpOptions:
    """Limits and security settings of the HTTP transport.

    Attributes:
        path: The Streamable HTTP endpoint.
        allowed_origins: Browser origins accepted (scheme://host, any port); "*" allows all.
        allowed_hosts: Host header values accepted besides the server's own address (and,
            on loopback, localhost, 127.0.0.1 and [::1]) with its port: "name" with any port,
            "name:port" with that port; "*" accepts any Host. `serve_http` on a wildcard
            address (0.0.0.0, ::) requires it.
        bearer_token: When set, every request must carry `Authorization: Bearer <token>`
            (a shorthand for `auth=StaticTokenVerifier(token)`, for development).
        auth: Verifies the bearer token every request to the MCP endpoint (and the legacy
            SSE endpoints) must carry: a `JwtVerifier`, an `IntrospectionVerifier`, a
            `StaticTokenVerifier` or any `TokenVerifier`. Missing or invalid: 401; lacking
            a scope the request needs: 403 (see `transports/http/gate`).
        resource_metadata: This server as an OAuth protected resource (RFC 9728): its
            authorization servers, scopes and canonical URI, served at
            /.well-known/oauth-protected-resource (and that path followed by the MCP path),
            and named in every 401 and 403 challenge so that clients can find where to get a
            token.
        scope_hierarchy: Broader scopes and the narrower ones each implies, followed
            transitively (e.g. `{"notes:admin": ("notes:read", "notes:write")}`): a token
            granting a broader scope may do what the narrower ones allow (spec: servers must
            account for scope hierarchies). `Context.auth.scopes` holds the implied ones too.
            (A verifier's own `required_scopes` are checked against the token's scopes as
            granted; `Server(required_scopes=...)` sees the hierarchy.)
        stateless: No sessions: every request stands alone (for many workers behind a load
            balancer). Handshake-era clients are served under their MCP-Protocol-Version.
        legacy_sse: Serve the 2024-11-05 HTTP+SSE transport at /sse and /messages.
        max_body_bytes: Largest request body.
        max_sessions: Sessions open at once (Streamable HTTP and legacy SSE together).
        max_in_flight_per_session: Requests running at once in one session (Streamable HTTP
            or legacy SSE); past it, 429.
        max_in_flight_sessionless: Requests running at once, server-wide, outside sessions
            (every request in stateless mode, and 2026-07-28 requests); past it, 503. Listen
            streams are not counted here: they have bounds of their own.
        max_listens: 2026-07-28 `subscriptions/listen` streams open at once, server-wide;
            past it, 503.
        max_listens_per_client: Such streams open at once from one client (the principal of
            its verified token, else its network address); past it, 429.
        session_idle_timeout: Seconds after which a session with nothing running expires.
        legacy_max_unsent_bytes: Legacy SSE: bytes of answers a session may hold that its
            stream has not yet sent (a client that reads its stream slowly or not at all);
            while it holds more, POSTs carrying requests get 429 with Retry-After.
        body_timeout: Seconds a request body may take, from the request's head on; past it,
            408 and the connection is closed.
        body_idle_timeout: Seconds a request body may stall between two pieces; past it, 408
            and the connection is closed.
        max_connections: Connections served at once by `serve_http`; past it, a new
            connection is answered 503 and closed. None: the open-files limit
            (RLIMIT_NOFILE) less an eighth of it (at least 32), kept for everything else.
        max_connections_per_address: Connections one client address (an IPv6 client's /64)
            may hold at once under `serve_http`; past it, a new connection from that address
            is answered 429 and closed, so that one client cannot take every connection and
            lock the others out. None: no bound, for a server behind a reverse proxy, where
            every connection comes from the proxy's address (the proxy bounds each client).
        keep_alive_timeout: Seconds a connection may sit idle between requests before the
            server closes it; under `serve_http` (Hypercorn) also the time a new connection,
            or one between requests, has to send a whole request head.
        send_timeout: Seconds one write to a client may wait for it to read (under
            `serve_http`); past it, the connection is closed: a client that stops reading its
            stream no longer holds the connection, its call, or a shutdown.
        max_unsent_bytes: Streamable HTTP: bytes of messages not tied to a call (list
            changes, resource updates, log messages, requests to the client) a session holds
            for its GET stream while none is open or its client reads slowly; past it, the
            oldest notifications are dropped (and the client told so in a log message), and a
            request to the client that does not fit fails the task that asks.
        retry_interval: Seconds a client should wait before it reconnects a broken
            Streamable HTTP GET stream: the `retry:` field of the priming event that starts
            it in a session under 2025-11-25 or later.
        keep_alive_interval: Seconds an open Streamable HTTP SSE stream (GET or a POST's)
            may stay quiet before it carries an SSE comment, so that proxies and clients do
            not take a quiet stream for a dead one.
        event_store: Where the events of sessions' SSE streams (under 2025-11-25 or later)
            are kept, so that a client whose stream broke gets what it missed, a call's result
            included, by reconnecting with `Last-Event-ID`; a call whose stream broke then
            runs on. None keeps nothing: a broken call stream cancels its call. Default: a
            `MemoryEventStore` of this process (16 MiB, 5 minutes).
        metrics: Serve metrics at `metrics_path` (GET): a renderer such as
            `PrometheusMiddleware.render`. Off by default: the metrics name the server's tools
            and tell how it is used. The endpoint has the MCP endpoint's Host and Origin
            checks, but not its `auth` (a scraper holds no user's token): see `metrics_token`.
        metrics_path: Where `metrics` are served.
        metrics_token: When set, a scrape must carry `Authorization: Bearer <token>` (compared
            in constant time; Prometheus's `authorization` scrape setting sends it). Without
            it, whoever reaches the port may read the metrics.
    """

    path: str = "/mcp"
    allowed_origins: tuple[str, ...] = DEFAULT_ALLOWED_ORIGINS
    # None beyond the server's own address: the names clients use for a server reachable
    # from elsewhere are the deployer's to list, as for Django's ALLOWED_HOSTS.
    allowed_hosts: tuple[str, ...] = ()
    bearer_token: str | None = None
    auth: TokenVerifier | None = None
    resource_metadata: ProtectedResource | None = None
    scope_hierarchy: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    stateless: bool = False
    legacy_sse: bool = True
    # 16 MiB, as for a stdio line: room for base64 images and embedded resources.
    max_body_bytes: int = 16 * 1024 * 1024
    # 1,000 sessions: each costs a few KiB when idle; the bound keeps a flood of initialize
    # requests from growing memory without end.
    max_sessions: int = 1000
    # As the stdio transport's max_in_flight (see _runtime/options.py, DEFAULT_MAX_IN_FLIGHT).
    max_in_flight_per_session: int = 1024
    # The same bound as one session's: without sessions the whole server is, for bounding, one
    # session that many clients share. Under HTTP/1.1 each request in flight also holds a
    # connection, so with the common default of 1,024 open files per process (`ulimit -n`) a
    # server could not hold many more anyway; more load wants more workers behind the load
    # balancer, which the 503 sends on to another one (e.g. nginx's proxy_next_upstream).
    max_in_flight_sessionless: int = 1024
    # 1,000, as max_sessions: a listen stream is what a 2026-07-28 client holds where a
    # handshake-era one holds a session and its GET stream (a connection, a task, a queue of at
    # most 1 MiB), so the server holds as many of them, beside the requests in flight.
    max_listens: int = 1000
    # 16: a client needs one stream (two while it replaces one: the trio-mcp client opens the
    # new one before it closes the old), so 16 leave room for a few clients behind one address
    # (a desktop's agents, a small NAT), while one client cannot take the server's streams.
    # Behind a reverse proxy every client has the proxy's address: verify tokens (the bound is
    # then per user and client) or raise it.
    max_listens_per_client: int = 16
    # 30 minutes: the same order as common reverse proxies' idle session lifetimes; a client
    # that comes back later is told 404 and re-initializes (spec: session management).
    session_idle_timeout: float = 1800.0
    # 4 MiB: the largest send buffer Linux sizes a TCP socket to by itself (net.ipv4.tcp_wmem),
    # what a fast stream may have in flight anyway. A client that reads keeps this near zero.
    legacy_max_unsent_bytes: int = 4 * 1024 * 1024
    # 300 s for a whole body: Node.js's http.Server requestTimeout (the whole request). A body
    # of max_body_bytes still makes it at about 56 KB/s.
    body_timeout: float = 300.0
    # 60 s between two pieces of a body: nginx's client_body_timeout, also measured between
    # two successive reads rather than over the whole body.
    body_idle_timeout: float = 60.0
    # None: derived from the open-files limit, which every connection counts against (as
    # nginx's worker_connections must stay below it); see transports/http/serving.py.
    max_connections: int | None = None
    # 256 from one address: nginx limit_conn and HAProxy's src_conn_cur bound connections per
    # client address for this very attack, and Postfix by default gives one client at most half
    # its process limit (smtpd_client_connection_count_limit), so that one client cannot take
    # them all. 256 is under a third of the 896 connections a server with the common 1,024 open
    # files serves, and far above what one MCP client holds: its GET stream and one connection
    # per call in flight (browsers open at most 6 per host).
    max_connections_per_address: int | None = 256
    # 5 s: Hypercorn's own default, as Apache httpd's KeepAliveTimeout and Node.js's
    # keepAliveTimeout. An MCP client reuses its connection for its next request at once or
    # not for a while, and opening a new one costs a loopback or LAN round trip.
    keep_alive_timeout: float = 5.0
    # 60 s for one write to make progress: nginx's send_timeout, also measured per write
    # rather than over the whole response.
    send_timeout: float = 60.0
    # 1 MiB per session: hundreds of list changes or resource updates, far more than a client
    # that comes back to its stream needs to catch up; 1,000 sessions then hold at most 1 GiB,
    # and only sessions whose clients never listen fill theirs.
    max_unsent_bytes: int = 1024 * 1024
    # 15 s: sse-starlette's default ping interval (the official Python SDK's streams use it),
    # well under the 60 s idle timeouts of common proxies (nginx's proxy_read_timeout).
    keep_alive_interval: float = 15.0
    # 1 s: the initial reconnection delay of the official TypeScript client, which it uses
    # when the server names none.
    retry_interval: float = 1.0
    # In memory, bounded (`transports/http/replay` Rule 2): resuming must work out of the
    # box (SEP-1699 polling), and a fleet can hand in a shared store instead.
    event_store: EventStore | None = field(default_factory=MemoryEventStore)
    metrics: MetricsRenderer | None = None
    # Prometheus's default `metrics_path`, which its scrape configurations assume.
    metrics_path: str = "/metrics"
    metrics_token: str | None = None

    def __post_init__(self) -> None:
        if self.max_connections_per_address is not None and self.max_connections_per_address < 1:
            raise ValueError(
                "HttpOptions.max_connections_per_address must be 1 or more, or None for no bound"
            )
        taken = {self.path, "/sse", "/messages"} if self.legacy_sse else {self.path}
        if self.metrics is not None and (
            not self.metrics_path.startswith("/") or self.metrics_path in taken
        ):
            raise ValueError(
                f"metrics_path must be a path of its own starting with '/', not "
                f"{self.metrics_path!r} (the MCP endpoints use {', '.join(sorted(taken))})"
            )
        if self.auth is not None and self.bearer_token is not None:
            raise ValueError(
                "HttpOptions takes bearer_token or auth, not both: bearer_token is "
                "auth=StaticTokenVerifier(token)"
            )
