"""OAuth 2.1 for MCP clients: the configuration, the records, and the rules that need no I/O.

The flows themselves (discovery, registration, the grants, the 401/403 handling on every
request) are in `flow`, which needs httpx; this module needs only the standard library,
so the rules below are tested without a network and `OAuth(...)` can be built before httpx is
imported.

Scopes (`select_scope`): the challenge's `scope`, else the protected resource's
`scopes_supported`, else none at all; on a step-up, the union with what was asked before
(SEP-2350); `offline_access` added to a non-empty choice when the authorization server lists
it and the grant can use a refresh token (SEP-2207).

Rule 1: discovery follows the MCP authorization spec's order. The protected resource metadata
        (RFC 9728) comes from the `resource_metadata` of the 401's WWW-Authenticate, else from
        the well-known URI with the MCP endpoint's path appended, else from the root one
        (`protected_resource_metadata_urls`). The authorization server's metadata comes from
        RFC 8414's path-inserted URI, then OpenID Connect's path-inserted and path-appended
        ones (`trio_mcp._wellknown.authorization_server_metadata_urls`, which the server's
        verifiers read too).
Rule 2: what discovery brings is checked before it is used. The metadata's `resource` must name
        this server (same origin, a path prefix of ours: `resource_matches`), or nothing is
        sent to its authorization server. The authorization server metadata's `issuer` must be
        exactly the issuer its URL was built from (RFC 8414 section 3.3). The authorization
        response's `state` must be ours and its `iss` (RFC 9207) exactly the recorded issuer:
        simple string comparison, no URL normalization; an `iss` missing where the server
        advertises `authorization_response_iss_parameter_supported` is refused
        (`check_authorization_response`). Both are checked before its `error` is read: an
        answer that is not ours is not acted on, nor its error shown (anyone can send one to
        a loopback redirect URI). While the flow waits for the redirect, `pending_state`
        holds the state it sent, so that a listener can ignore redirects that are not ours.
Rule 3: tokens and client secrets never appear in a repr, a log line or an exception message.
"""

from __future__ import annotations

import base64
import contextvars
import hashlib
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol
from urllib.parse import parse_qs, urlsplit

from .._exceptions import AuthorizationError
from .._wellknown import RESOURCE_METADATA_PATH, origin, same_origin

__all__ = [
    "AssertionRequest",
    "AuthorizationResponse",
    "ClientRegistration",
    "Grant",
    "MemoryTokenStorage",
    "OAuth",
    "OAuthTokens",
    "TokenStorage",
    "check_authorization_response",
    "parse_www_authenticate",
    "pending_state",
    "pkce_pair",
    "protected_resource_metadata_urls",
    "resource_matches",
    "s256",
    "select_scope",
    "step_up_scopes",
]

#: The grant an `OAuth` client uses to get its tokens.
Grant = Literal["authorization_code", "client_credentials", "jwt_bearer"]

#: Authorizations one request may start after the first (a 403 `insufficient_scope` asks for
#: more scopes): the spec says to retry "no more than a few times"; the conformance suite's
#: scope-retry-limit scenario allows three authorizations in all.
DEFAULT_MAX_STEP_UPS = 2


@dataclass(frozen=True, slots=True)
class OAuthTokens:
    """The tokens a token endpoint issued, and what they are for.

    Attributes:
        access_token: Sent as `Authorization: Bearer ...` (never shown in a repr).
        token_type: As the token endpoint said, usually "Bearer".
        refresh_token: Gets a new access token without the user (never shown in a repr).
        expires_at: When the access token expires, in seconds since the epoch; None when
            the token endpoint did not say.
        scope: The scopes granted (or asked for, when the endpoint did not say).
        issuer: The authorization server that issued them: tokens of another are never used.
    """

    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: float | None = None
    scope: str | None = None
    issuer: str | None = None


@dataclass(frozen=True, slots=True)
class ClientRegistration:
    """A client's identity at one authorization server.

    Attributes:
        client_id: As registered (or pre-registered, or a Client ID Metadata Document URL).
        client_secret: For confidential clients (never shown in a repr).
        token_endpoint_auth_method: "none", "client_secret_basic", "client_secret_post" or
            "private_key_jwt"; None to choose from the server's metadata.
        issuer: The authorization server that knows this client (SEP-2352: credentials are
            bound to it, never offered to another).
    """

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    issuer: str | None = None


class TokenStorage(Protocol):
    """Where an `OAuth` client keeps its tokens and registrations between requests and runs.

    Tokens are kept per MCP server (its URL), registrations per authorization server (its
    issuer). An implementation that writes them to disk or a keyring keeps them across runs;
    it must keep them as secret as passwords.
    """

    async def get_tokens(self, resource: str) -> OAuthTokens | None:
        """The tokens last stored for the MCP server at `resource`, or None."""
        ...

    async def set_tokens(self, resource: str, tokens: OAuthTokens | None) -> None:
        """Keep `tokens` for the MCP server at `resource` (None forgets them)."""
        ...

    async def get_client(self, issuer: str) -> ClientRegistration | None:
        """The registration last stored for the authorization server `issuer`, or None."""
        ...

    async def set_client(self, issuer: str, client: ClientRegistration | None) -> None:
        """Keep `client` for the authorization server `issuer` (None forgets it)."""
        ...


class MemoryTokenStorage:
    """`TokenStorage` in this process's memory: a new run authorizes again."""

    def __init__(self) -> None:
        self._tokens: dict[str, OAuthTokens] = {}
        self._clients: dict[str, ClientRegistration] = {}

    def __repr__(self) -> str:
        return f"<MemoryTokenStorage: {len(self._tokens)} token sets>"

    async def get_tokens(self, resource: str) -> OAuthTokens | None:
        """The tokens last stored for `resource`, or None."""
        return self._tokens.get(resource)

    async def set_tokens(self, resource: str, tokens: OAuthTokens | None) -> None:
        """Keep `tokens` for `resource` (None forgets them)."""
        if tokens is None:
            self._tokens.pop(resource, None)
        else:
            self._tokens[resource] = tokens

    async def get_client(self, issuer: str) -> ClientRegistration | None:
        """The registration last stored for `issuer`, or None."""
        return self._clients.get(issuer)

    async def set_client(self, issuer: str, client: ClientRegistration | None) -> None:
        """Keep `client` for `issuer` (None forgets it)."""
        if client is None:
            self._clients.pop(issuer, None)
        else:
            self._clients[issuer] = client


@dataclass(frozen=True, slots=True)
class AuthorizationResponse:
    """What the authorization server sent back to the redirect URI (its query parameters).

    Attributes:
        code: The authorization code (never shown in a repr).
        state: Must be the `state` the request carried.
        iss: The issuer (RFC 9207), when the server sent one.
        error: The error code when the user or the server refused.
        error_description: Its human-readable text.
    """

    code: str | None = field(default=None, repr=False)
    state: str | None = None
    iss: str | None = None
    error: str | None = None
    error_description: str | None = None

    @classmethod
    def from_url(cls, url: str) -> AuthorizationResponse:
        """Read the response from the redirect URL's query (as a browser would land on it)."""
        query = parse_qs(urlsplit(url).query, keep_blank_values=True)

        def one(name: str) -> str | None:
            values = query.get(name)
            return values[0] if values else None

        return cls(
            code=one("code"),
            state=one("state"),
            iss=one("iss"),
            error=one("error"),
            error_description=one("error_description"),
        )


@dataclass(frozen=True, slots=True)
class AssertionRequest:
    """What a JWT-bearer assertion is for (handed to `OAuth.assertion`).

    Attributes:
        issuer: The authorization server that will receive the assertion (its audience).
        token_endpoint: Where it will be sent.
        resource: The MCP server the access token is for (RFC 8707).
        scope: The scopes that will be asked for, or None.
    """

    issuer: str
    token_endpoint: str
    resource: str
    scope: str | None


#: `redirect_handler(authorization_url)`: send the user there (e.g. open a browser).
RedirectHandler = Callable[[str], Awaitable[None]]
#: `callback_handler()`: wait for the authorization server's redirect and return what it said.
CallbackHandler = Callable[[], Awaitable[AuthorizationResponse]]
#: `assertion(request)`: a JWT for the JWT-bearer grant (RFC 7523): an identity assertion
#: authorization grant (SEP-990) or a workload identity token (SEP-1933).
AssertionProvider = Callable[[AssertionRequest], Awaitable[str]]


@dataclass(frozen=True, kw_only=True)
class OAuth:
    """How a client authorizes itself to an MCP server over HTTP (`open_client(url, auth=...)`).

    With it, every request carries the access token; a 401 runs discovery and the grant, and
    the request is sent again once with the new token; a 403 `insufficient_scope` asks for the
    union of the scopes so far and the challenged ones (at most `max_step_ups` times for one
    request); an expired access token is refreshed first.

    ```python
    async with open_loopback_callback() as loopback:
        auth = OAuth(redirect_uri=loopback.redirect_uri, redirect_handler=open_browser,
                     callback_handler=loopback.callback)
        async with open_client("https://example.com/mcp", auth=auth) as client: ...
    ```

    Attributes:
        grant: "authorization_code" (a user approves in a browser: needs `redirect_handler`
            and `callback_handler`), "client_credentials" (a machine client: needs
            `client_id` and `client_secret` or `private_key`), or "jwt_bearer" (RFC 7523:
            needs `assertion`, e.g. enterprise-managed authorization's ID-JAG).
        redirect_uri: Where the authorization server sends the user back.
        redirect_handler: Sends the user to the authorization URL.
        callback_handler: Waits for the redirect back and returns its parameters.
        client_id: A pre-registered client id; without it the client uses a Client ID
            Metadata Document (`client_metadata_url`) where the server supports one, else
            registers itself (RFC 7591).
        client_secret: The pre-registered client's secret.
        issuer: The authorization server the configured client belongs to: when discovery
            finds another, authorization fails rather than offer it the credentials (SEP-2352).
            None with a `client_id`: the first authorization server discovered (or that
            issued the stored tokens) is the one.
        token_endpoint_auth_method: How the pre-registered client authenticates at the token
            endpoint ("client_secret_basic", "client_secret_post", "private_key_jwt",
            "none"); None chooses from the server's metadata.
        private_key: PEM private key for `private_key_jwt` (RFC 7523 client assertions;
            needs PyJWT: `pip install "trio-mcp[auth]"`).
        signing_algorithm: The JWS algorithm of `private_key` ("ES256", "RS256", ...).
        client_metadata_url: The https URL of this client's metadata document (SEP-991).
        client_name: The name a registration shows to the user.
        scope: Scopes to ask for instead of those the server suggests.
        assertion: The JWT-bearer grant's assertion provider.
        storage: Where tokens and registrations are kept (`MemoryTokenStorage` by default).
        max_step_ups: Re-authorizations one request may start after its first.
        dpop: Ask for DPoP-bound tokens (RFC 9449) where the authorization server takes ES256
            proofs; a resource that challenges with the DPoP scheme asks for them too. Needs
            PyJWT (`pip install "trio-mcp[auth]"`).
    """

    grant: Grant = "authorization_code"
    redirect_uri: str = "http://127.0.0.1/callback"
    redirect_handler: RedirectHandler | None = None
    callback_handler: CallbackHandler | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    issuer: str | None = None
    token_endpoint_auth_method: str | None = None
    private_key: str | None = field(default=None, repr=False)
    signing_algorithm: str = "ES256"
    client_metadata_url: str | None = None
    client_name: str = "trio-mcp"
    scope: str | None = None
    assertion: AssertionProvider | None = None
    storage: TokenStorage = field(default_factory=MemoryTokenStorage)
    max_step_ups: int = DEFAULT_MAX_STEP_UPS
    dpop: bool = False

    def __post_init__(self) -> None:
        if self.grant == "authorization_code":
            if self.redirect_handler is None or self.callback_handler is None:
                raise ValueError(
                    "OAuth(grant='authorization_code') needs redirect_handler and "
                    "callback_handler (how the user reaches the authorization server and back)"
                )
        elif self.grant == "client_credentials":
            if self.client_id is None or (self.client_secret is None and self.private_key is None):
                raise ValueError(
                    "OAuth(grant='client_credentials') needs client_id and client_secret "
                    "or private_key"
                )
        elif self.grant == "jwt_bearer":
            if self.assertion is None:
                raise ValueError("OAuth(grant='jwt_bearer') needs an assertion provider")
        else:
            raise ValueError(f"unknown OAuth grant {self.grant!r}")
        if self.max_step_ups < 0:
            raise ValueError("OAuth.max_step_ups must be 0 or more")


# -- the rules ----------------------------------------------------------------------------------

# auth-param = token BWS "=" BWS ( token / quoted-string ) (RFC 9110 section 11.2).
_AUTH_PARAM = re.compile(r'([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)')


def parse_www_authenticate(value: str) -> tuple[str, dict[str, str]]:
    """The scheme of a WWW-Authenticate challenge and its parameters (names lowercased).

    Only the first challenge is read: an MCP server sends one (Bearer, or DPoP). A quoted
    value is unquoted, its backslash escapes undone.
    """
    text = value.strip()
    scheme, _, rest = text.partition(" ")
    params: dict[str, str] = {}
    for name, raw in _AUTH_PARAM.findall(rest):
        key = name.lower()
        if key not in params:
            quoted = raw.startswith('"')
            params[key] = re.sub(r"\\(.)", r"\1", raw[1:-1]) if quoted else raw
    return scheme.lower(), params


def protected_resource_metadata_urls(server_url: str) -> list[str]:
    """Where the protected resource metadata of the MCP server at `server_url` may be, in order.

    The path-suffixed well-known URI first (RFC 9728 section 3.1), then the root one.
    """
    path = urlsplit(server_url).path.rstrip("/")
    root = origin(server_url) + RESOURCE_METADATA_PATH
    return [f"{root}{path}", root] if path else [root]


def resource_matches(server_url: str, resource: str) -> bool:
    """Whether a protected resource metadata `resource` names the MCP server at `server_url`.

    Same scheme, host and port, and `resource`'s path a prefix of the server's, segment by
    segment (RFC 9728 section 3.3 asks for the identical URL; an MCP server's metadata may
    name a resource that covers several endpoints under one path).
    """
    if not same_origin(server_url, resource):
        return False
    theirs = urlsplit(resource)
    if theirs.fragment:
        return False
    mine = [part for part in urlsplit(server_url).path.split("/") if part]
    given = [part for part in theirs.path.split("/") if part]
    return mine[: len(given)] == given


def _scopes(text: str | None) -> list[str]:
    return text.split() if text else []


def select_scope(
    *,
    challenged: str | None,
    resource_scopes: Sequence[str] | None,
    server_scopes: Sequence[str] | None,
    previous: str | None = None,
    configured: str | None = None,
    refresh: bool = True,
) -> str | None:
    """The `scope` to ask for, or None to leave the parameter out.

    Args:
        challenged: The `scope` of the WWW-Authenticate challenge.
        resource_scopes: The protected resource metadata's `scopes_supported`.
        server_scopes: The authorization server metadata's `scopes_supported`.
        previous: What the last authorization asked for (a step-up keeps it).
        configured: `OAuth.scope`, which replaces what the server suggests.
        refresh: Whether `offline_access` may be added (the grant can use refresh tokens).
    """
    if configured is not None:
        chosen = _scopes(configured)
    elif challenged:
        chosen = _scopes(challenged)
    elif resource_scopes:
        chosen = [scope for scope in resource_scopes if isinstance(scope, str)]
    else:
        chosen = []
    chosen = _union(_scopes(previous), chosen)
    # Only beside other scopes: alone it would replace the server's default scopes.
    if refresh and chosen and server_scopes and "offline_access" in server_scopes:
        chosen = _union(chosen, ["offline_access"])
    return " ".join(chosen) or None


def _union(first: Iterable[str], second: Iterable[str]) -> list[str]:
    seen: dict[str, None] = dict.fromkeys(first)
    seen.update(dict.fromkeys(second))
    return list(seen)


def s256(text: str) -> str:
    """The SHA-256 of ASCII `text`, base64url-encoded without padding (RFC 7636's S256).

    A PKCE code challenge (RFC 7636 section 4.2), and a DPoP proof's `ath` (RFC 9449 section 4.2).
    """
    digest = hashlib.sha256(text.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def pkce_pair() -> tuple[str, str]:
    """A PKCE code verifier and its S256 challenge (RFC 7636)."""
    verifier = secrets.token_urlsafe(64)  # 86 characters of the unreserved set: 43..128 allowed
    return verifier, s256(verifier)


#: The `state` of the authorization whose redirect is awaited now (Rule 2), set around the
#: `callback_handler` call: a listener ignores redirects carrying another state.
pending_state: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "pending_state", default=None
)


#: The scopes a step-up authorization is for, set around it: what the request that met
#: the 403 `insufficient_scope` needs beyond the scopes granted so far, space-separated; None
#: for a first authorization. A redirect handler may tell the user why they sign in again.
step_up_scopes: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "step_up_scopes", default=None
)


def check_authorization_response(
    response: AuthorizationResponse, *, state: str, issuer: str, iss_supported: bool
) -> str:
    """The authorization code of `response`, once it passed Rule 2's checks.

    Raises:
        AuthorizationError: the state is not ours, the `iss` is wrong or missing where the
            server promised one, or (only then) the server refused.
    """
    if response.state != state:
        raise AuthorizationError("the authorization response's state is not the one sent")
    if response.iss is not None:
        if response.iss != issuer:
            raise AuthorizationError(
                f"the authorization response comes from issuer {response.iss!r}, not the "
                f"recorded {issuer!r} (RFC 9207)"
            )
    elif iss_supported:
        raise AuthorizationError(
            f"the authorization response lacks the iss parameter that {issuer!r} advertises "
            "(RFC 9207)"
        )
    # Only now: an error of an answer that is not ours is neither acted on nor shown (Rule 2).
    if response.error is not None:
        detail = f": {response.error_description}" if response.error_description else ""
        raise AuthorizationError(f"authorization refused ({response.error}){detail}")
    if not response.code:
        raise AuthorizationError("the authorization response carries no code")
    return response.code
