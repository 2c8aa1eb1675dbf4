"""HTTP transports as one ASGI application, for any ASGI server that runs under trio.

Streamable HTTP is served at `/mcp` (`streamable`), the legacy HTTP+SSE transport at `/sse` +
`/messages` (`legacy_sse`); both keep their sessions in one table (`sessions`).

Rule 1: this package moves messages and knows HTTP; it never sees tools or schemas. It talks to
        the MCP side through `HttpBackend`: sessions that `handle` one decoded message, and a
        channel server for the legacy transport.
Rule 2: every check that can refuse a request runs before its body is handed on, in this order:
        framing (400, and the connection is closed: `asgi.check_framing`), path (404), method
        (405), Host (421) and Origin (403) (`guard`), bearer token (401, or 403 for scopes
        every request needs: `gate`) here, then the transport's own (Content-Type 415, Accept
        406, body size 413 or too slow 408, JSON-RPC shape 400, request metadata or version
        and session 400/404, limits 429/503: `transports/http/streamable` Rule 1; then the
        scopes of what the body asks for, 403). A refused
        request never reaches a session: every refusal is raised as `Refused` and answered
        here, in one shape. The protected resource metadata (RFC 9728) is public: it is
        answered before any of these but framing. The metrics endpoint, when
        `HttpOptions.metrics` is set, is checked for method, Host and Origin like the MCP
        endpoint, then for its own token (`metrics_token`), never for a user's.
Rule 3: shutting down (`begin_shutdown`) ends the legacy streams and the Streamable HTTP GET
        streams, which would never end by themselves; Streamable HTTP requests end with their
        answers, and those still running when the grace period is over are answered "server
        shutting down" (`cut_short`) before the ASGI server's own deadline drops their
        connections.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Iterable

import trio

from ..._core.auth import AuthInfo
from ..._core.jsonrpc import dumps
from ...auth.resource import TokenVerifier
from ...auth.verifiers import StaticTokenVerifier
from .asgi import (
    Receive,
    Refused,
    Scope,
    Send,
    check_framing,
    content_length,
    header_map,
    refuse,
    send_json,
)
from .gate import AuthGate
from .guard import source_refusal
from .legacy_sse import LegacySse
from .options import DEFAULT_ALLOWED_ORIGINS, HttpOptions
from .sessions import HttpBackend, HttpSession, SessionTable
from .streamable import StreamableHttp

# HttpOptions and DEFAULT_ALLOWED_ORIGINS live in `options` and are named here too, where the
# CLI imports them from (the public `trio_mcp.http` takes `HttpOptions` from `options`).
__all__ = [
    "DEFAULT_ALLOWED_ORIGINS",
    "HttpBackend",
    "HttpOptions",
    "HttpSession",
    "McpHttpApp",
]

logger = logging.getLogger("trio_mcp")


class McpHttpApp:
    """The ASGI application. Run `run()` beside it to expire idle sessions.

    Args:
        backend: The MCP side (sessions and the legacy channel server).
        options: Limits and security settings.
    """

    def __init__(self, backend: HttpBackend, options: HttpOptions | None = None) -> None:
        self.backend = backend
        self.options = options or HttpOptions()
        self._sessions = SessionTable(self.options)
        verifier: TokenVerifier | None = self.options.auth
        if verifier is None and self.options.bearer_token is not None:
            verifier = StaticTokenVerifier(self.options.bearer_token)
        self._gate = AuthGate(
            verifier,
            self.options.resource_metadata,
            self.options.path,
            backend.base_scopes(),
            scope_hierarchy=self.options.scope_hierarchy,
        )
        self._streamable = StreamableHttp(backend, self.options, self._sessions, self._gate)
        self._legacy = LegacySse(backend, self.options, self._sessions, self._gate)

    @property
    def session_count(self) -> int:
        """Sessions open now."""
        return len(self._sessions)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Expire idle sessions until cancelled."""
        await self._sessions.expire_idle(task_status=task_status)

    def begin_shutdown(self) -> None:
        """End the server-to-client streams, which would never end by themselves (Rule 3).

        Every Streamable HTTP GET stream ends (its session stays) and new ones are refused
        (503). Every legacy SSE session's input is closed and new ones are refused (503).

        A legacy stream never ends by itself, so an ASGI server's graceful shutdown would wait
        for it until its deadline. With its input closed, each session finishes the calls it
        is running (within the server's shutdown grace), sends their answers, and its stream
        ends. Streamable HTTP POSTs end with their answers and need nothing.
        """
        self._legacy.begin_shutdown()
        self._streamable.hang_up()

    def cut_short(self) -> None:
        """The grace period is over: answer every Streamable HTTP request still running.

        Each gets "server shutting down" now, before the ASGI server drops its connection.
        (Legacy SSE sessions need nothing here: each answers its own at the end of its grace.)
        """
        self._streamable.shut_down()

    # -- ASGI entry ---------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI 3 entry point."""
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            await check_framing(scope, receive, self.options)
            await self._route(scope, receive, send)
        except Refused as refused:
            await refuse(send, refused)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        method = scope["method"]
        opts = self.options
        allowed: tuple[str, ...]
        if path in self._gate.metadata_paths():  # from the canonical URI as it is now
            await self._metadata(scope, send)
            return
        if opts.metrics is not None and path == opts.metrics_path:
            await self._metrics(scope, send)
            return
        if path == opts.path:
            # No GET and no DELETE without sessions: a request that stands alone has no stream
            # for the server to speak on outside its answer (spec: 405 then). `Allow` lists
            # exactly what is served (RFC 9110, 15.5.6).
            allowed = ("POST",) if opts.stateless else ("GET", "POST", "DELETE")
        elif opts.legacy_sse and path == "/sse":
            allowed = ("GET",)
        elif opts.legacy_sse and path == "/messages":
            allowed = ("POST",)
        else:
            raise Refused(404, f"Not found: {path}")
        if method not in allowed:
            reason = f"Method {method} not allowed on {path}"
            if method == "GET" and path == opts.path:
                reason = "This server offers no server-to-client stream in stateless mode"
            raise Refused(405, reason, _allow(allowed))
        headers = header_map(scope)
        refusal = source_refusal(headers, scope.get("server"), scope.get("scheme", "http"), opts)
        if refusal is not None:
            raise Refused(*refusal)
        # The verified token goes down with the request, to the records its messages become.
        auth = await self._gate.authenticate(scope, headers)
        await self._serve(scope, headers, receive, send, auth)

    async def _serve(
        self,
        scope: Scope,
        headers: dict[bytes, bytes],
        receive: Receive,
        send: Send,
        auth: AuthInfo | None,
    ) -> None:
        path, method = scope["path"], scope["method"]
        if path == "/sse":
            await self._legacy.stream(headers, receive, send, auth)
        elif path == "/messages":
            await self._legacy.post(scope, headers, receive, send, auth)
        elif method == "POST":
            await self._streamable.post(scope, headers, receive, send, auth)
        elif method == "GET":
            await self._streamable.get(headers, receive, send, auth)
        else:  # DELETE
            await self._streamable.delete(headers, send, auth)

    async def _metadata(self, scope: Scope, send: Send) -> None:
        """Serve the protected resource metadata, to anyone (`transports/http/gate` Rule 2)."""
        method = scope["method"]
        if method == "OPTIONS":  # a CORS preflight
            headers = [*_CORS, (b"access-control-max-age", b"86400")]
            await send({"type": "http.response.start", "status": 204, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        if method != "GET":
            raise Refused(405, f"Method {method} not allowed", _allow(("GET", "OPTIONS")))
        body = dumps(self._gate.document(scope, header_map(scope)))
        await send_json(send, 200, body, _CORS)

    async def _metrics(self, scope: Scope, send: Send) -> None:
        """Serve the metrics (Rule 2): GET, Host and Origin as for MCP, then the metrics token."""
        opts = self.options
        assert opts.metrics is not None
        if scope["method"] != "GET":
            raise Refused(405, f"Method {scope['method']} not allowed", _allow(("GET",)))
        headers = header_map(scope)
        refusal = source_refusal(headers, scope.get("server"), scope.get("scheme", "http"), opts)
        if refusal is not None:
            raise Refused(*refusal)
        if opts.metrics_token is not None and not _bearer_is(headers, opts.metrics_token):
            raise Refused(401, "Missing or wrong metrics token", [_METRICS_CHALLENGE])
        accept = headers.get(b"accept")
        try:
            body, content_type = opts.metrics(None if accept is None else accept.decode("latin-1"))
        except Exception:
            logger.exception("rendering the metrics failed")
            raise Refused(500, "The metrics could not be rendered") from None
        start = [
            (b"content-type", content_type.encode("latin-1")),
            content_length(body),
            (b"cache-control", b"no-store"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": start})
        await send({"type": "http.response.body", "body": body})


_METRICS_CHALLENGE = (b"www-authenticate", b'Bearer realm="metrics"')


def _bearer_is(headers: dict[bytes, bytes], token: str) -> bool:
    """Whether the request's `Authorization` is `Bearer <token>` (constant time in the token)."""
    scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), token.encode())


_CORS = [
    (b"access-control-allow-origin", b"*"),
    (b"access-control-allow-methods", b"GET, OPTIONS"),
    (b"access-control-allow-headers", b"mcp-protocol-version"),
]


def _allow(methods: Iterable[str]) -> list[tuple[bytes, bytes]]:
    return [(b"allow", ", ".join(methods).encode())]


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
