"""What the server as an OAuth 2.1 protected resource says and expects: no I/O here.

The `TokenVerifier` protocol the verifiers (`verifiers`) follow, the protected resource metadata
(`ProtectedResource`, RFC 9728) served at `RESOURCE_METADATA_PATH`, the `WWW-Authenticate`
challenges of a refusal (RFC 6750) and scope hierarchies. `HttpOptions` names these records,
and the HTTP transport's gate (`transports/http/gate`) answers with them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol
from urllib.parse import quote

from .._core.auth import AuthInfo
from .._wellknown import RESOURCE_METADATA_PATH

__all__ = [
    "RESOURCE_METADATA_PATH",
    "ProtectedResource",
    "TokenVerifier",
    "TokenVerifierError",
    "challenge",
    "scope_closure",
]


class TokenVerifier(Protocol):
    """Decides whether a bearer token is good for this server, and whose it is."""

    async def verify(self, token: str) -> AuthInfo | None:
        """The verified token's facts; None (or `InvalidTokenError`) when it is not valid.

        Raises:
            InvalidTokenError: the token is not valid; the message says why (sent to the
                client as `error_description`).
            InsufficientScopeError: the token is valid but lacks scopes every request needs.
            TokenVerifierError: the verifier could not decide (authorization server
                unreachable): answered 503.
        """
        ...


class TokenVerifierError(Exception):
    """A verifier could not reach what it needs to decide (JWKS, introspection endpoint)."""


@dataclass(frozen=True)
class ProtectedResource:
    """The RFC 9728 metadata of this server, served at `/.well-known/oauth-protected-resource`.

    Attributes:
        authorization_servers: Issuer URLs of the authorization servers whose tokens this
            server accepts (at least one).
        scopes_supported: Scopes a client may request for this server.
        resource: The server's canonical URI (RFC 8707), e.g. `https://mcp.example.com/mcp`;
            the audience its tokens must carry. None: the verifier's `audience` if it has
            one (`JwtVerifier`, `IntrospectionVerifier`), else derived from each request
            (scheme, Host and MCP path), which is right only when clients reach the server
            directly.
        resource_name: A human-readable name.
        resource_documentation: A URL of documentation for developers.
    """

    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] = ()
    resource: str | None = None
    resource_name: str | None = None
    resource_documentation: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.authorization_servers, str):
            object.__setattr__(self, "authorization_servers", (self.authorization_servers,))
        if not self.authorization_servers:
            raise ValueError("ProtectedResource needs at least one authorization server")

    def document(self, resource: str) -> dict[str, Any]:
        """The metadata document for the canonical URI `resource`."""
        doc: dict[str, Any] = {
            "resource": resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if self.scopes_supported:
            doc["scopes_supported"] = list(self.scopes_supported)
        if self.resource_name:
            doc["resource_name"] = self.resource_name
        if self.resource_documentation:
            doc["resource_documentation"] = self.resource_documentation
        return doc


# -- challenges ---------------------------------------------------------------------------------

# RFC 6750, 3: error_description and scope values exclude '"' and '\' (and control characters).
_UNQUOTABLE = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")
# Characters a URL may carry unencoded (RFC 3986, 2.2 and 2.3; '%' of those encoded already).
_URL_SAFE: Final = ":/?#[]@!$&'()*+,;=%-._~"


def challenge(
    *,
    resource_metadata: str | None,
    scopes: Iterable[str] = (),
    error: str | None = None,
    description: str | None = None,
) -> bytes:
    """A `WWW-Authenticate: Bearer ...` value (RFC 6750, 3; RFC 9728, 5.1)."""
    params: list[str] = []
    if error is not None:
        params.append(f'error="{error}"')
        if description:
            params.append(f'error_description="{_UNQUOTABLE.sub("?", description)}"')
    scope = " ".join(dict.fromkeys(scopes))
    if scope:
        params.append(f'scope="{_UNQUOTABLE.sub("?", scope)}"')
    if resource_metadata is not None:
        # A URL has no '"', '\\' or control characters; percent-encode any that got in, so
        # that the value cannot end the quoted-string and add parameters of its own.
        params.append(f'resource_metadata="{quote(resource_metadata, safe=_URL_SAFE)}"')
    return ("Bearer " + ", ".join(params)).rstrip().encode()


def scope_closure(hierarchy: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    """Each broader scope -> every scope it implies, directly or through others."""
    direct = {scope: set(narrower) for scope, narrower in hierarchy.items()}
    closed: dict[str, frozenset[str]] = {}
    for scope, narrowest in direct.items():
        seen: set[str] = set()
        todo = list(narrowest)
        while todo:
            narrower = todo.pop()
            if narrower not in seen:
                seen.add(narrower)
                todo.extend(direct.get(narrower, ()))
        closed[scope] = frozenset(seen - {scope})
    return closed
