"""`SessionPair`: a client session and a server session back to back, with no event loop.

Like h11's `ConnectionPair`: each message the client session builds goes through the real JSON
codec and classifier into the server's session and dispatcher (`resolve`, then `answer_now`,
which answers everything that needs no waiting), and the answer goes back the same way.
Protocol rules (the handshake, version negotiation, per-request `_meta`) are then tested as
tables, fast and deterministic.
"""

from __future__ import annotations

import itertools
from typing import Any

from trio_mcp import RequestError
from trio_mcp._core.answering import Answerable
from trio_mcp._core.client_session import ClientSession, Next
from trio_mcp._core.jsonrpc import Request, dumps, loads, parse
from trio_mcp._core.server_session import ServerSession
from trio_mcp._core.versions import SUPPORTED_VERSIONS
from trio_mcp._dispatch import Callee, Dispatcher
from trio_mcp._features.tools import ToolRegistry


class _NoTools:
    """The dispatcher's invoker: the pair serves no tool calls (they need an event loop)."""

    async def invoke(self, tool: Callee, kwargs: dict[str, Any]) -> Any:
        raise AssertionError(f"SessionPair runs no tools (asked for {tool.name})")


class SessionPair:
    """A `ClientSession` wired to a `ServerSession` and its dispatcher."""

    def __init__(
        self,
        wanted: str,
        *,
        server_versions: tuple[str, ...] = SUPPORTED_VERSIONS,
        registry: ToolRegistry | None = None,
        capabilities: dict[str, Any] | None = None,
        answerable: Answerable | None = None,
    ) -> None:
        self.client = ClientSession(
            wanted, {"name": "pair", "version": "0"}, capabilities, answerable
        )
        self.server = ServerSession(
            server_info={"name": "pair-server", "version": "1"},
            capabilities={"tools": {"listChanged": False}},
            versions=server_versions,
        )
        self.dispatcher = Dispatcher(registry or ToolRegistry(), _NoTools())
        self.sent: list[str] = []  # the methods the client sent, in order
        self._ids = itertools.count(1)

    def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send one request through the codec; its result, or `RequestError` for an error."""
        body = dict(params or {})
        meta = self.client.request_meta(dict(body.get("_meta") or {}))
        if meta:
            body["_meta"] = meta
        wire = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": body}
        self.sent.append(method)
        (request,), _ = parse(dumps(wire))
        assert isinstance(request, Request)
        call = self.dispatcher.resolve(request)
        assert call.now, f"{method} needs an event loop; SessionPair cannot answer it"
        answer = self.dispatcher.answer_now(self.server, call)
        reply = loads(dumps(answer))
        if "error" in reply:
            error = reply["error"]
            raise RequestError(error["message"], error["code"], error.get("data"))
        return reply["result"]

    def start(self) -> None:
        """Run the client's start as its runtime does: discover, retry or initialize."""
        client = self.client
        if client.probes:
            while True:
                client.begin_discover()
                try:
                    if client.discovered(self.send("server/discover")):
                        return
                    break
                except RequestError as exc:
                    step = client.discover_failed(exc.code, exc.data)
                    if step is Next.RAISE:
                        raise
                    if step is Next.INITIALIZE:
                        break
        client.initialized(self.send("initialize", client.initialize_params()))
