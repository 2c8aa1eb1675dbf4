"""The bearer-token gate of the HTTP transport: who may reach a protected endpoint.

The HTTP side of the server's authorization: it reads the request's `Authorization` and `Host`
headers, asks the configured verifier (`trio_mcp.auth`), and answers a refusal as `Refused`
with the challenge `trio_mcp.auth.resource` writes; it also knows where the protected resource
metadata is served and what URL challenges point to.

Rule 1: a request to a protected endpoint (the MCP endpoint, the legacy /sse and /messages)
        carries `Authorization: Bearer <token>` (RFC 6750, 2.1; never a query parameter). The
        `TokenVerifier` decides: an `AuthInfo`, or None / `InvalidTokenError` (401). Missing
        token: 401 with `WWW-Authenticate: Bearer resource_metadata="...", scope="..."`; a bad
        one adds `error="invalid_token"`; a valid one lacking scopes is 403 with
        `error="insufficient_scope"` and the scopes (RFC 6750, 3; RFC 9728, 5.1; MCP
        authorization: scope challenges). A verifier that fails itself (JWKS unreachable) is
        503, not 401: the client's token may be fine.
Rule 2: the metadata documents (RFC 9728) are public: no token, no Host or Origin check, any
        origin may read them (CORS), so that browser-based clients can discover the
        authorization server.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from ..._core.auth import AuthInfo, missing_scopes
from ..._exceptions import InsufficientScopeError, InvalidTokenError
from ..._wellknown import origin
from ...auth.resource import (
    RESOURCE_METADATA_PATH,
    ProtectedResource,
    TokenVerifier,
    TokenVerifierError,
    challenge,
    scope_closure,
)
from .asgi import Refused, Scope

__all__ = ["AuthGate", "origin_of"]

logger = logging.getLogger("trio_mcp.http")

# host[:port]: a DNS name or IPv4 address, or a bracketed IPv6 literal (RFC 3986, 3.2.2).
_HOST = re.compile(r"(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")


def origin_of(scope: Scope, headers: Mapping[bytes, bytes]) -> str:
    """scheme://host[:port] as the client addressed this server (the Host header).

    A Host that is not a plain host[:port] (only an `allowed_hosts=("*",)` server lets one
    through) is not copied into URLs: the address the connection came in on is used instead.
    """
    host = headers.get(b"host", b"").decode("latin-1")
    if not _HOST.fullmatch(host):
        server = scope.get("server") or ("localhost", None)
        address = f"[{server[0]}]" if ":" in str(server[0]) else str(server[0])
        host = address if server[1] is None else f"{address}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"


class AuthGate:
    """Checks the bearer token of a request to a protected endpoint (Rule 1).

    Args:
        verifier: Decides on tokens; None: no token is asked for (only metadata is served).
        resource: The metadata to serve, and to point clients to in challenges; None: none.
        path: The MCP endpoint's path (for the canonical URI and the metadata URL).
        base_scopes: The scopes every request needs (`HttpBackend.base_scopes`), which 401
            challenges name.
        scope_hierarchy: Broader scopes and the narrower ones each implies.
    """

    def __init__(
        self,
        verifier: TokenVerifier | None,
        resource: ProtectedResource | None,
        path: str,
        base_scopes: Iterable[str] = (),
        *,
        scope_hierarchy: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        self.verifier = verifier
        self._implied = scope_closure(scope_hierarchy or {})
        self.resource = resource
        self.path = path
        bind = getattr(verifier, "bind_resource", None)
        if callable(bind):  # an audience-checking verifier learns the canonical URI
            bind(resource.resource if resource is not None else None)
        #: Scopes every request needs (a `Server`'s `required_scopes`): named in 401s.
        self.base_scopes = tuple(base_scopes)
        if verifier is not None and resource is not None and self._configured_uri() is None:
            logger.warning(
                "the protected resource metadata names no canonical URI "
                "(ProtectedResource.resource): it is taken from each request's Host header; "
                "configure it for a public server"
            )

    def resource_uri(self, scope: Scope, headers: Mapping[bytes, bytes]) -> str:
        """The canonical URI of this server (RFC 8707, 2).

        The metadata's `resource` if set, else the verifier's `audience` (what its tokens must
        name), else the URL the request was sent to.
        """
        configured = self._configured_uri()
        return configured if configured is not None else origin_of(scope, headers) + self.path

    def _configured_uri(self) -> str | None:
        if self.resource is not None and self.resource.resource:
            return self.resource.resource
        audience = getattr(self.verifier, "audience", None)
        if isinstance(audience, str) and audience.startswith(("https://", "http://")):
            return audience
        return None

    def _suffix(self) -> str:
        """The path of the canonical URI (a proxy may serve this server under another path)."""
        configured = self._configured_uri()
        path = urlsplit(configured).path if configured is not None else self.path
        return path.rstrip("/")

    def metadata_url(self, scope: Scope, headers: Mapping[bytes, bytes]) -> str | None:
        """The absolute URL of the metadata document for this server (RFC 9728, 3.1).

        Its path is one `metadata_paths` serves: both come from the same canonical URI.
        """
        if self.resource is None:
            return None
        return origin(self.resource_uri(scope, headers)) + RESOURCE_METADATA_PATH + self._suffix()

    def metadata_paths(self) -> tuple[str, ...]:
        """The paths the metadata is served at: the bare well-known one and the path-suffixed.

        The suffix is the path of the canonical URI (the metadata's `resource`, else the
        verifier's audience), which challenges point to; the MCP endpoint's path is served too,
        for clients that build the URL from the endpoint they were given.
        """
        if self.resource is None:
            return ()
        paths = (
            RESOURCE_METADATA_PATH,
            RESOURCE_METADATA_PATH + self._suffix(),
            RESOURCE_METADATA_PATH + self.path.rstrip("/"),
        )
        return tuple(dict.fromkeys(paths))

    def document(self, scope: Scope, headers: Mapping[bytes, bytes]) -> dict[str, Any]:
        """The metadata document (served only when `resource` is set)."""
        assert self.resource is not None
        return self.resource.document(self.resource_uri(scope, headers))

    async def authenticate(self, scope: Scope, headers: Mapping[bytes, bytes]) -> AuthInfo | None:
        """Verify the request's bearer token; raise `Refused` (401, 403 or 503) when it fails.

        Returns:
            The token's facts (None when no verifier is set).
        """
        if self.verifier is None:
            return None
        metadata = self.metadata_url(scope, headers)
        scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        token = token.strip()
        # The scheme name is case-insensitive (RFC 9110, 11.1).
        if scheme.lower() != "bearer" or not token:
            raise Refused(
                401,
                "Missing bearer token",
                [
                    (
                        b"www-authenticate",
                        challenge(resource_metadata=metadata, scopes=self._needed_scopes()),
                    )
                ],
            )
        try:
            info = await self.verifier.verify(token)
        except InvalidTokenError as exc:
            raise self._invalid(metadata, str(exc)) from None
        except InsufficientScopeError as exc:
            raise self.insufficient(scope, headers, exc.scopes, None) from None
        except TokenVerifierError as exc:
            logger.warning("token verification failed: %s", exc)
            raise Refused(503, "Cannot verify tokens right now", [(b"retry-after", b"5")]) from None
        if info is None:
            raise self._invalid(metadata, "The access token is not valid")
        if info.issuer is None and info.subject is None and info.client_id is None:
            # A token naming no one: sessions are bound to the token itself (`AuthInfo`).
            info = dataclasses.replace(info, token_id=hashlib.sha256(token.encode()).hexdigest())
        if self._implied:
            implied = {n for s in info.scopes for n in self._implied.get(s, ())} - info.scopes
            if implied:
                info = dataclasses.replace(info, scopes=info.scopes | implied)
        self.check(scope, headers, self.base_scopes, info)
        return info

    def check_scopes(
        self,
        scope: Scope,
        headers: Mapping[bytes, bytes],
        info: AuthInfo | None,
        needs: Iterable[Iterable[str]],
    ) -> None:
        """Refuse (403) a body whose requests need scopes the verified token lacks.

        Args:
            scope: The ASGI scope.
            headers: The request's headers.
            info: The verified token (`authenticate`).
            needs: The scopes of each request of the body (their resolved records').
        """
        if self.verifier is None:
            return
        needed: dict[str, None] = {}
        for scopes in needs:
            needed.update(dict.fromkeys(scopes))
        self.check(scope, headers, needed, info)

    def check(
        self,
        scope: Scope,
        headers: Mapping[bytes, bytes],
        needed: Iterable[str],
        info: AuthInfo | None,
    ) -> None:
        """Refuse (403) when the verified token lacks any of `needed` (no verifier: nothing)."""
        if self.verifier is None:
            return
        granted = info.scopes if info is not None else frozenset()
        missing = missing_scopes(needed, granted)
        if missing:
            raise self.insufficient(scope, headers, missing, info)

    def insufficient(
        self,
        scope: Scope,
        headers: Mapping[bytes, bytes],
        missing: Iterable[str],
        info: AuthInfo | None,
    ) -> Refused:
        """The 403 for a token that lacks `missing`."""
        # The spec's recommended approach: the scopes already granted and the new ones, so that
        # a client asking again for exactly these loses nothing it had.
        granted = sorted(info.scopes) if info is not None else []
        header = challenge(
            error="insufficient_scope",
            scopes=[*granted, *missing],
            resource_metadata=self.metadata_url(scope, headers),
            description=f"This request needs scope(s): {' '.join(missing)}",
        )
        return Refused(403, "Insufficient scope", [(b"www-authenticate", header)])

    def _needed_scopes(self) -> tuple[str, ...]:
        # Only what every request needs: without it a client asks for the metadata's
        # `scopes_supported` (spec: scope selection strategy).
        return self.base_scopes

    def _invalid(self, metadata: str | None, description: str) -> Refused:
        header = challenge(
            error="invalid_token",
            description=description,
            scopes=self._needed_scopes(),
            resource_metadata=metadata,
        )
        return Refused(401, "Invalid bearer token", [(b"www-authenticate", header)])
