"""A protected MCP server for the OAuth client's tests: trio-mcp's HTTP app behind token checks.

`serve_protected(server, oauth, ...)` serves, on a free loopback port, the MCP endpoint `/mcp`
guarded the way an MCP resource server guards it (spec 2025-11-25, authorization), and its
RFC 9728 metadata at `/.well-known/oauth-protected-resource/mcp` naming the `OAuthServer` of
tests/oauth_server.py. Every request to `/mcp` needs an active access token of that server whose
`aud` names the resource (checked by the authorization server's own introspection); without one
the answer is 401 with `WWW-Authenticate: Bearer resource_metadata="...", scope="..."`. A
`tools/call` without `call_scope` among the token's scopes is 403 `insufficient_scope` naming
it (step-up), or naming `challenge_scope` when given (a challenge that never helps). `seen`
keeps the method, path and Authorization header of every request to `/mcp`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from tests.oauth_server import OAuthServer
from trio_mcp import Server, http_app

PRM_PATH = "/.well-known/oauth-protected-resource/mcp"


@dataclass
class Protected:
    """The guard in front of the MCP app (an ASGI app itself)."""

    app: Any
    oauth: OAuthServer
    scope: str | None = "mcp"
    call_scope: str | None = None
    challenge_scope: str | None = None
    resource_override: str | None = None
    base: str = "http://127.0.0.1"
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return self.base + "/mcp"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """ASGI 3 entry point."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == PRM_PATH:
            document: dict[str, Any] = {
                "resource": self.resource_override or self.url,
                "authorization_servers": [self.oauth.issuer],
            }
            if self.scope is not None:
                document["scopes_supported"] = self.scope.split()
            await _answer(send, 200, document)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        authorization = headers.get("authorization")
        self.seen.append((scope["method"], scope["path"], authorization))
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        token = (authorization or "").removeprefix("Bearer ")
        claims = self.oauth.introspect(token) if authorization else {"active": False}
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if not claims.get("active") or self.url not in audiences:
            challenge = f'Bearer resource_metadata="{self.base}{PRM_PATH}"'
            if self.scope is not None:
                challenge += f', scope="{self.scope}"'
            await _answer(send, 401, {"error": "invalid_token"}, challenge)
            return
        method = _method(body)
        granted = str(claims.get("scope", "")).split()
        if method == "tools/call" and self.call_scope and self.call_scope not in granted:
            wanted = self.challenge_scope or self.call_scope
            challenge = (
                f'Bearer error="insufficient_scope", scope="{wanted}", '
                f'resource_metadata="{self.base}{PRM_PATH}"'
            )
            await _answer(send, 403, {"error": "insufficient_scope"}, challenge)
            return
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return cast("dict[str, Any]", await receive())
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def _method(body: bytes) -> str | None:
    try:
        message = json.loads(body)
    except ValueError:
        return None
    return message.get("method") if isinstance(message, dict) else None


async def _answer(send: Any, status: int, document: Any, challenge: str | None = None) -> None:
    headers = [(b"content-type", b"application/json")]
    if challenge is not None:
        headers.append((b"www-authenticate", challenge.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(document).encode()})


@asynccontextmanager
async def serve_protected(
    server: Server, oauth: OAuthServer, **options: Any
) -> AsyncIterator[Protected]:
    """Serve `server` behind a `Protected(**options)` guard on a free loopback port."""
    app = http_app(server)
    guard = Protected(app, oauth, **options)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        binds = await nursery.start(
            functools.partial(serve, cast("Any", guard), config, shutdown_trigger=stop.wait)
        )
        guard.base = binds[0]
        try:
            yield guard
        finally:
            stop.set()
            nursery.cancel_scope.cancel()
