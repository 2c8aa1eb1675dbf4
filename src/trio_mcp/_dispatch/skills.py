"""The methods of the skills extension (SEP-2640): skills/list, skills/get, directory reads.

The server adds these routes to its dispatcher with its first skill (`Server.add_skills`); a
server without skills answers them -32601, as any method it does not know, and declares
neither the extension nor `directoryRead`. They read the server's `SkillCatalog` and never
wait: every request is answered on the reader's own task, in both eras (a 2026-07-28 result
carries `resultType`, and the two cacheable ones their caching hints).

- `skills/list`: the entries, one page at a time with the server's cursors (`page_size`); an
  entry is never split across pages. Over HTTP with a verified token, the skills whose scopes
  it lacks are left out (and the page is marked `cacheScope: "private"`), as in the lists.
- `skills/get`: the entry of the skill whose SKILL.md URI is given; any other URI is -32602
  with `data.uri`. A token must grant the skill's scopes (403 over HTTP otherwise).
- `resources/directory/read`: the direct children of a folder of a skill (or of a prefix the
  skills were added under), files with their resource metadata and subfolders as
  `inode/directory`, paged like the lists; any other URI (a file, nothing) is -32602.

Their family (`ResolvedRequest.kind`) is "protocol": middleware see them in `on_request`.
"""

from __future__ import annotations

from typing import Any, Final

from .._core.auth import AuthInfo
from .._core.jsonrpc import INVALID_PARAMS, Request
from .._core.server_session import CACHE_HINTS, RequestScope, ServerSession
from .._exceptions import RemoteProtocolError
from .._features.registry import page_of
from .._features.skills import SkillCatalog
from .dispatcher import Dispatcher, Route, _cursor
from .resolve import ResolvedRequest

__all__ = ["SKILL_METHODS", "skill_routes"]

#: The methods the routes answer.
SKILL_METHODS: Final = ("skills/list", "skills/get", "resources/directory/read")


def skill_routes(dispatcher: Dispatcher, catalog: SkillCatalog) -> dict[str, Route]:
    """The routes of the extension's methods, over `catalog`, for `dispatcher`."""
    targets = dispatcher.targets

    def listing(request: Request, auth: AuthInfo | None, inline_ok: bool) -> ResolvedRequest:
        return ResolvedRequest(
            request, "protocol", scopes=targets.base_scopes, auth=auth, now=inline_ok
        )

    def named(request: Request, auth: AuthInfo | None, inline_ok: bool) -> ResolvedRequest:
        uri, error = _uri(request, dispatcher)
        skill = catalog.get(uri) if uri is not None and error is None else None
        if skill is None and error is None:
            error = RemoteProtocolError(
                f"Invalid params: no skill is served at {uri}", INVALID_PARAMS, {"uri": uri}
            )
        return ResolvedRequest(
            request, "protocol", skill, uri, error=error, auth=auth, now=inline_ok,
            scopes=targets.scopes(skill.scopes) if skill is not None else targets.base_scopes,
        )  # fmt: skip

    def folder(request: Request, auth: AuthInfo | None, inline_ok: bool) -> ResolvedRequest:
        uri, error = _uri(request, dispatcher)
        children = catalog.directory(uri) if uri is not None and error is None else None
        if children is None and error is None:
            error = RemoteProtocolError(
                f"Invalid params: {uri} is not a directory resource of this server",
                INVALID_PARAMS,
                {"uri": uri},
            )
        own = catalog.scopes_of_folder(uri) if children is not None and uri else frozenset()
        return ResolvedRequest(
            request, "protocol", children, uri, error=error, auth=auth, now=inline_ok,
            scopes=targets.scopes(own),
        )  # fmt: skip

    def list_now(
        session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        skills, next_cursor = page_of(
            "skills", list(catalog), _cursor(call.params), dispatcher.page_size
        )
        auth = call.auth
        hidden = auth is not None and dispatcher.hide_unauthorized
        if auth is not None and hidden:  # a page may come out short; cursors stay the same
            skills = [skill for skill in skills if auth.has_scopes(skill.scopes)]
        result: dict[str, Any] = {"skills": [catalog.entry(skill) for skill in skills]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        hint = dispatcher.cache_hints.get(call.method)
        hints = hint.to_wire() if hint else None
        if hidden:  # a list cut to this token's scopes is this user's
            hints = {**(hints or CACHE_HINTS), "cacheScope": "private"}
        return session.complete(scope, ServerSession.cacheable(scope, result, hints))

    def get_now(
        session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        hint = dispatcher.cache_hints.get(call.method)
        result = {"skill": catalog.entry(call.target)}
        return session.complete(
            scope, ServerSession.cacheable(scope, result, hint.to_wire() if hint else None)
        )

    def read_now(
        session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        children, next_cursor = page_of(
            "directory", call.target, _cursor(call.params), dispatcher.page_size
        )
        result: dict[str, Any] = {"resources": children}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return session.complete(scope, result)

    return {
        "skills/list": Route("protocol", listing, list_now),
        "skills/get": Route("protocol", named, get_now),
        "resources/directory/read": Route("protocol", folder, read_now),
    }


def _uri(request: Request, dispatcher: Dispatcher) -> tuple[str | None, RemoteProtocolError | None]:
    """The request's `uri`, or the -32602 for one that is missing or too long."""
    uri = (request.params or {}).get("uri")
    if not isinstance(uri, str):
        return None, RemoteProtocolError(
            f'Invalid params: {request.method} needs "uri" (a string)', INVALID_PARAMS
        )
    try:
        dispatcher.resources.check_length(uri)
    except RemoteProtocolError as exc:
        return None, exc
    return uri, None
