"""The OAuth flows of an MCP client, as an `httpx.Auth` on the link's HTTP client.

Rule 1: every request the link sends (POST, the GET stream, DELETE) goes through
        `OAuthFlow.async_auth_flow`: it carries the current access token (refreshed first when
        it has expired and a refresh token is at hand). A 401 runs discovery and a grant and
        the request is sent again, once; a 403 `insufficient_scope` re-authorizes with the
        union of the scopes so far and the challenged ones, at most `OAuth.max_step_ups`
        times for one request; a step-up whose grant leaves out challenged scopes it asked
        for ends there, an `AuthorizationError` naming them (asking again would get the same
        answer). Whatever still fails reaches the link as the HTTP error it is.
Rule 2: one authorization at a time (a `trio.Lock`): requests that meet the same 401 (or 403
        `insufficient_scope`) together wait for the first one's authorization and use its
        token instead of starting their own (after a 403, when it grants the challenged scopes).
Rule 3: the authorization's own requests (metadata, registration, token) go through an HTTP
        client of their own, opened for the authorization and closed after it, never through
        the link's (whose auth is this flow).
Rule 4: discovery, registration and tokens are bound to the authorization server that the
        protected resource metadata names now: when it names another (SEP-2352), the old
        tokens are dropped and the client registers anew; a registration is only ever sent to
        the issuer it was made with. A pre-registered client (`OAuth.client_id`) is bound to
        `OAuth.issuer`, else to the first authorization server discovered (or that issued the
        stored tokens): another one is an `AuthorizationError`, its credentials never sent.

The flows are written here rather than taken from an OAuth library: what MCP adds (discovery
from a 401, the resource and issuer checks, scope selection and step-up, the issuer-bound
registrations) is most of the code, and the protocol steps left (PKCE, form posts, client
authentication) are short. JWTs (client assertions) are made with PyJWT, imported only when one
is needed.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final
from urllib.parse import quote, urlencode, urljoin, urlsplit

import httpx
import trio

from .._exceptions import AuthorizationError
from .._wellknown import authorization_server_metadata_urls, get_json, origin, same_origin
from .rules import (
    AssertionProvider,
    AssertionRequest,
    AuthorizationResponse,
    ClientRegistration,
    OAuth,
    OAuthTokens,
    check_authorization_response,
    parse_www_authenticate,
    pending_state,
    pkce_pair,
    protected_resource_metadata_urls,
    resource_matches,
    s256,
    select_scope,
    step_up_scopes,
)

__all__ = ["AutoRedirect", "OAuthFlow", "id_jag_assertion"]

logger = logging.getLogger("trio_mcp.client.oauth")

# Seconds an authorization's own HTTP requests may take (metadata, registration, tokens): these
# are quick exchanges with a server, unlike MCP calls, whose length is the caller's business.
OAUTH_TIMEOUT: Final = 30.0
# An access token this close to its expiry (seconds) is refreshed before it is sent: it could
# expire on its way.
EXPIRY_MARGIN: Final = 30.0
# A JWT client assertion's lifetime (seconds): RFC 7523 asks for a short one.
ASSERTION_LIFETIME: Final = 300

JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
CLIENT_ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ID_JAG: Final = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN: Final = "urn:ietf:params:oauth:token-type:id_token"
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True, slots=True)
class _Discovery:
    """What discovery learnt: the resource to ask tokens for and its authorization server."""

    resource: str
    issuer: str
    metadata: Mapping[str, Any]
    resource_scopes: list[str] | None


def _oauth_http() -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=httpx.Timeout(OAUTH_TIMEOUT), headers={"accept": "application/json"}
    )


class OAuthFlow(httpx.Auth):
    """`OAuth` at work for the MCP server at one URL (module Rules 1-4).

    Args:
        config: The client's OAuth configuration.
        server_url: The MCP server's URL (the endpoint the link connects to).
        legacy_sse: The link is the legacy HTTP+SSE transport: its /sse URL is not the
            resource a server names in its metadata (that is its MCP endpoint). A resource of
            the same origin is accepted then, only from the metadata the server's own challenge
            pointed to (`resource_metadata`), also on that origin.
    """

    def __init__(self, config: OAuth, server_url: str, *, legacy_sse: bool = False) -> None:
        self._config = config
        self._url = server_url
        self._legacy_sse = legacy_sse
        self._lock = trio.Lock()
        self._tokens: OAuthTokens | None = None
        self._loaded = False
        self._discovery: _Discovery | None = None
        self._client: ClientRegistration | None = None
        self._scope: str | None = None
        # DPoP (RFC 9449): the key that tokens get bound to, once an authorization server
        # that supports it is asked for one (`OAuth.dpop`, or a resource's DPoP challenge).
        self._dpop: _DpopKey | None = None
        self._dpop_wanted = config.dpop
        # The authorization server a configured client belongs to (Rule 4): `OAuth.issuer`, or
        # the first one discovered (or that issued the stored tokens).
        self._pinned: str | None = config.issuer

    def __repr__(self) -> str:
        return f"<OAuthFlow for {self._url} ({self._config.grant})>"

    # -- httpx ------------------------------------------------------------------------------

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """Send `request` with a token, authorizing on 401 and stepping up on 403 (Rule 1)."""
        async with self._lock, _reaching():
            tokens = await self._usable_tokens()
        self._present(request, tokens)
        response = yield request
        retried = nonce_retried = False
        step_ups = 0
        while True:
            scheme, challenge = parse_www_authenticate(response.headers.get("www-authenticate", ""))
            if scheme == "dpop":
                self._dpop_wanted = True
            nonce = response.headers.get("dpop-nonce")
            if nonce and self._dpop is not None:
                self._dpop.resource_nonce = nonce
            if (
                response.status_code == 401
                and challenge.get("error") == "use_dpop_nonce"
                and nonce
                and not nonce_retried
            ):
                nonce_retried = True  # RFC 9449 section 9: the same token, a proof with the nonce
            elif response.status_code == 401 and not retried:
                retried = True
                async with self._lock, _reaching():
                    if self._tokens is not None and self._tokens is not tokens:
                        tokens = self._tokens  # Rule 2: another request authorized meanwhile
                    else:
                        tokens = await self._authorize(challenge, step_up=False)
            elif (
                response.status_code == 403
                and challenge.get("error") == "insufficient_scope"
                and step_ups < self._config.max_step_ups
            ):
                step_ups += 1
                async with self._lock, _reaching():
                    if self._covers(self._tokens, tokens, challenge.get("scope")):
                        tokens = self._tokens  # Rule 2: another request stepped up meanwhile
                    else:
                        needed = _needed(challenge, tokens)
                        asking = step_up_scopes.set(" ".join(needed) or None)
                        try:
                            tokens = await self._authorize(challenge, step_up=True)
                        finally:
                            step_up_scopes.reset(asking)
                        _check_granted(tokens, needed, challenge)
            else:
                return
            self._present(request, tokens)
            response = yield request

    @staticmethod
    def _covers(
        current: OAuthTokens | None, sent: OAuthTokens | None, challenged: str | None
    ) -> bool:
        """Whether tokens got since `sent` grant the challenged scopes (or may: not told)."""
        if current is None or current is sent:
            return False
        if current.scope is None or challenged is None:
            return True
        return set(challenged.split()) <= set(current.scope.split())

    def _present(self, request: httpx.Request, tokens: OAuthTokens | None) -> None:
        if tokens is None:
            return
        if tokens.token_type.lower() == "dpop" and self._dpop is not None:
            request.headers["authorization"] = f"DPoP {tokens.access_token}"
            request.headers["dpop"] = self._dpop.proof(
                request.method,
                str(request.url),
                access_token=tokens.access_token,
                nonce=self._dpop.resource_nonce,
            )
        else:
            request.headers["authorization"] = f"Bearer {tokens.access_token}"

    def _dpop_key(self, discovery: _Discovery) -> _DpopKey | None:
        # Only with an authorization server that takes ES256 proofs: others would refuse them.
        algorithms = _strings(discovery.metadata.get("dpop_signing_alg_values_supported"))
        if not self._dpop_wanted or "ES256" not in (algorithms or []):
            return None
        if self._dpop is None:
            try:
                self._dpop = _DpopKey()
            except ImportError as exc:
                raise AuthorizationError('DPoP needs PyJWT: pip install "trio-mcp[auth]"') from exc
        return self._dpop

    # -- tokens -----------------------------------------------------------------------------

    async def _usable_tokens(self) -> OAuthTokens | None:
        if not self._loaded:
            self._tokens = await self._config.storage.get_tokens(self._url)
            self._loaded = True
            if self._config.client_id is not None and self._pinned is None and self._tokens:
                self._pinned = self._tokens.issuer
        tokens = self._tokens
        if (
            tokens is not None
            and tokens.expires_at is not None
            and time.time() >= tokens.expires_at - EXPIRY_MARGIN
        ):
            refreshed = await self._try_refresh(tokens) if self._discovery is not None else None
            if refreshed is None and self._discovery is not None:
                # Expired and not refreshable: a new grant now rather than a certain 401.
                refreshed = await self._grant(self._discovery, self._scope)
            tokens = refreshed or tokens
        return tokens

    async def _store(self, tokens: OAuthTokens | None) -> OAuthTokens | None:
        self._tokens = tokens
        await self._config.storage.set_tokens(self._url, tokens)
        return tokens

    async def _authorize(self, challenge: Mapping[str, str], *, step_up: bool) -> OAuthTokens:
        async with _oauth_http() as http:
            discovery = await self._discover(http, challenge)
        self._pin(discovery.issuer)
        previous = self._discovery
        self._discovery = discovery
        if previous is not None and previous.issuer != discovery.issuer:
            logger.info(
                "the authorization server changed to %s: registering anew", discovery.issuer
            )
            self._client = None
        tokens = self._tokens
        if tokens is not None and tokens.issuer not in (None, discovery.issuer):
            tokens = await self._store(None)  # Rule 4: never offered to another server
        if tokens is not None and not step_up and tokens.refresh_token is not None:
            refreshed = await self._try_refresh(tokens)
            if refreshed is not None:
                return refreshed
        scope = select_scope(
            challenged=challenge.get("scope"),
            resource_scopes=discovery.resource_scopes,
            server_scopes=_strings(discovery.metadata.get("scopes_supported")),
            previous=self._scope if step_up else None,
            configured=self._config.scope,
            refresh=self._config.grant == "authorization_code",
        )
        return await self._grant(discovery, scope)

    async def _grant(self, discovery: _Discovery, scope: str | None) -> OAuthTokens:
        self._scope = scope
        async with _oauth_http() as http:
            client = await self._registration(http, discovery)
            grant = self._config.grant
            if grant == "authorization_code":
                tokens = await self._authorization_code(http, discovery, client, scope)
            elif grant == "client_credentials":
                data = {"grant_type": "client_credentials", "resource": discovery.resource}
                tokens = await self._token_request(http, discovery, client, data, scope)
            else:
                tokens = await self._jwt_bearer(http, discovery, client, scope)
        stored = await self._store(tokens)
        assert stored is not None
        return stored

    async def _try_refresh(self, tokens: OAuthTokens) -> OAuthTokens | None:
        discovery = self._discovery
        if tokens.refresh_token is None or discovery is None:
            return None
        data = {
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "resource": discovery.resource,
        }
        try:
            async with _oauth_http() as http:
                client = await self._registration(http, discovery)
                fresh = await self._token_request(http, discovery, client, data, None)
        except (AuthorizationError, httpx.HTTPError) as exc:
            logger.info("refreshing the access token failed (%s): authorizing anew", exc)
            return None
        if fresh.refresh_token is None:
            fresh = replace(fresh, refresh_token=tokens.refresh_token)
        if fresh.scope is None:
            fresh = replace(fresh, scope=tokens.scope)
        return await self._store(fresh)

    # -- discovery (`oauth/rules` Rules 1, 2) -----------------------------------------------

    async def _discover(self, http: httpx.AsyncClient, challenge: Mapping[str, str]) -> _Discovery:
        urls = protected_resource_metadata_urls(self._url)
        named = challenge.get("resource_metadata")
        if named:
            urls = [named, *(url for url in urls if url != named)]
        resource_metadata = None
        for url in urls:
            resource_metadata = await _metadata(http, url)
            if resource_metadata is not None:
                break
        pointed = named is not None and url == named and same_origin(named, self._url)
        if resource_metadata is None:
            # 2025-03-26: no protected resource metadata; the MCP server's origin is the
            # authorization server, with default endpoints when it serves no metadata either.
            issuer = origin(self._url)
            metadata = await self._server_metadata(http, issuer)
            if metadata is None:
                metadata = {
                    "issuer": issuer,
                    "authorization_endpoint": f"{issuer}/authorize",
                    "token_endpoint": f"{issuer}/token",
                    "registration_endpoint": f"{issuer}/register",
                    "code_challenge_methods_supported": ["S256"],
                }
            return _Discovery(self._url, issuer, metadata, None)
        resource = resource_metadata.get("resource")
        legacy = self._legacy_sse and pointed and isinstance(resource, str)
        if not isinstance(resource, str) or not (
            resource_matches(self._url, resource) or (legacy and same_origin(resource, self._url))
        ):
            raise AuthorizationError(
                f"the protected resource metadata of {self._url} names the resource "
                f"{resource!r}, not this server: refusing to authorize for it"
            )
        servers = _strings(resource_metadata.get("authorization_servers"))
        if not servers:
            raise AuthorizationError(
                f"the protected resource metadata of {self._url} names no authorization server"
            )
        issuer = servers[0]
        metadata = await self._server_metadata(http, issuer)
        if metadata is None:
            raise AuthorizationError(f"no authorization server metadata found for {issuer}")
        return _Discovery(
            resource, issuer, metadata, _strings(resource_metadata.get("scopes_supported"))
        )

    async def _server_metadata(
        self, http: httpx.AsyncClient, issuer: str
    ) -> Mapping[str, Any] | None:
        for url in authorization_server_metadata_urls(issuer):
            metadata = await _metadata(http, url)
            if metadata is None:
                continue
            if metadata.get("issuer") != issuer:
                raise AuthorizationError(
                    f"the authorization server metadata at {url} names the issuer "
                    f"{metadata.get('issuer')!r}, not {issuer!r}: refusing to use it"
                )
            return metadata
        return None

    # -- registration -----------------------------------------------------------------------

    async def _registration(
        self, http: httpx.AsyncClient, discovery: _Discovery
    ) -> ClientRegistration | None:
        config = self._config
        issuer = discovery.issuer
        if self._client is not None and self._client.issuer == issuer:
            return self._client
        self._pin(issuer)
        if config.client_id is not None:
            client: ClientRegistration | None = ClientRegistration(
                config.client_id, config.client_secret, config.token_endpoint_auth_method, issuer
            )
        elif config.grant != "authorization_code":
            client = None  # a JWT-bearer grant whose assertion names the client
        elif (
            discovery.metadata.get("client_id_metadata_document_supported") is True
            and config.client_metadata_url is not None
        ):
            client = ClientRegistration(config.client_metadata_url, None, "none", issuer)
        else:
            stored = await config.storage.get_client(issuer)
            if stored is not None and stored.issuer == issuer:
                client = stored
            else:
                client = await self._register(http, discovery)
                await config.storage.set_client(issuer, client)
        self._client = client
        return client

    def _pin(self, issuer: str) -> None:
        """Refuse an authorization server other than the configured client's (Rule 4).

        A pre-registered client (`OAuth.client_id`) belongs to one authorization server: the
        configured `OAuth.issuer`, else the first one discovered. Its id and secret are never
        offered to another, even when the protected resource metadata names one now (MCP
        client registration: authorization server binding).
        """
        if self._pinned is not None and self._pinned != issuer:
            raise AuthorizationError(
                f"the server's authorization server is now {issuer!r}, not {self._pinned!r} "
                "that the configured client belongs to: its credentials are not offered there"
            )
        if self._config.client_id is not None:
            self._pinned = issuer

    async def _register(self, http: httpx.AsyncClient, discovery: _Discovery) -> ClientRegistration:
        endpoint = discovery.metadata.get("registration_endpoint")
        if not isinstance(endpoint, str):
            raise AuthorizationError(
                f"{discovery.issuer} offers no client registration: give OAuth(client_id=...) "
                "of a pre-registered client (or client_metadata_url, where it takes one)"
            )
        supported = _strings(discovery.metadata.get("token_endpoint_auth_methods_supported"))
        method = next(
            (
                m
                for m in ("none", "client_secret_basic", "client_secret_post")
                if m in (supported or ["client_secret_basic"])
            ),
            "client_secret_basic",
        )
        host = urlsplit(self._config.redirect_uri).hostname or ""
        body = {
            "client_name": self._config.client_name,
            "redirect_uris": [self._config.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            # OpenID Connect registration: a loopback redirect is a native application's.
            "application_type": "native"
            if host in ("127.0.0.1", "localhost", "::1")
            or not self._config.redirect_uri.startswith(("http:", "https:"))
            else "web",
        }
        response = await http.post(endpoint, json=body)
        data = _json(response)
        if response.status_code not in (200, 201) or not isinstance(data.get("client_id"), str):
            raise AuthorizationError(
                f"client registration at {endpoint} failed: {_oauth_error(response, data)}"
            )
        secret = data.get("client_secret")
        chosen = data.get("token_endpoint_auth_method")
        return ClientRegistration(
            data["client_id"],
            secret if isinstance(secret, str) else None,
            chosen if isinstance(chosen, str) else method,
            discovery.issuer,
        )

    # -- grants -----------------------------------------------------------------------------

    async def _authorization_code(
        self,
        http: httpx.AsyncClient,
        discovery: _Discovery,
        client: ClientRegistration | None,
        scope: str | None,
    ) -> OAuthTokens:
        config = self._config
        assert client is not None, "an authorization code grant always has a client"
        assert config.redirect_handler is not None, "checked by OAuth"
        assert config.callback_handler is not None, "checked by OAuth"
        metadata = discovery.metadata
        endpoint = metadata.get("authorization_endpoint")
        if not isinstance(endpoint, str):
            raise AuthorizationError(f"{discovery.issuer} names no authorization endpoint")
        if "S256" not in (_strings(metadata.get("code_challenge_methods_supported")) or []):
            raise AuthorizationError(
                f"{discovery.issuer} does not support PKCE with S256: refusing to authorize"
            )
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(32)
        params = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": config.redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "resource": discovery.resource,
        }
        if scope is not None:
            params["scope"] = scope
        separator = "&" if urlsplit(endpoint).query else "?"
        await config.redirect_handler(f"{endpoint}{separator}{urlencode(params)}")
        waiting = pending_state.set(state)
        try:
            answer = await config.callback_handler()
        finally:
            pending_state.reset(waiting)
        code = check_authorization_response(
            answer,
            state=state,
            issuer=discovery.issuer,
            iss_supported=metadata.get("authorization_response_iss_parameter_supported") is True,
        )
        data = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": config.redirect_uri,
            "code_verifier": verifier,
            "resource": discovery.resource,
        }
        return await self._token_request(http, discovery, client, data, scope, send_scope=False)

    async def _jwt_bearer(
        self,
        http: httpx.AsyncClient,
        discovery: _Discovery,
        client: ClientRegistration | None,
        scope: str | None,
    ) -> OAuthTokens:
        assert self._config.assertion is not None
        endpoint = _token_endpoint(discovery)
        assertion = await self._config.assertion(
            AssertionRequest(discovery.issuer, endpoint, discovery.resource, scope)
        )
        data = {"grant_type": JWT_BEARER, "assertion": assertion, "resource": discovery.resource}
        return await self._token_request(http, discovery, client, data, scope)

    async def _token_request(
        self,
        http: httpx.AsyncClient,
        discovery: _Discovery,
        client: ClientRegistration | None,
        data: dict[str, str],
        scope: str | None,
        *,
        send_scope: bool = True,
    ) -> OAuthTokens:
        endpoint = _token_endpoint(discovery)
        if scope is not None and send_scope:
            data["scope"] = scope
        headers: dict[str, str] = {}
        if client is not None:
            method = client.token_endpoint_auth_method or self._auth_method(discovery, client)
            if method == "client_secret_basic" and client.client_secret is not None:
                headers["authorization"] = _basic(client.client_id, client.client_secret)
            elif method == "client_secret_post" and client.client_secret is not None:
                data["client_id"] = client.client_id
                data["client_secret"] = client.client_secret
            elif method == "private_key_jwt" and self._config.private_key is not None:
                data["client_id"] = client.client_id
                data["client_assertion_type"] = CLIENT_ASSERTION_TYPE
                data["client_assertion"] = self._client_assertion(client, discovery)
            else:
                data["client_id"] = client.client_id
        dpop = self._dpop_key(discovery)
        for _ in range(2):
            if dpop is not None:
                headers["dpop"] = dpop.proof("POST", endpoint, nonce=dpop.server_nonce)
            response = await http.post(endpoint, data=data, headers=headers)
            nonce = response.headers.get("dpop-nonce")
            if dpop is None or not nonce:
                break
            dpop.server_nonce = nonce
            # RFC 9449 section 8: a use_dpop_nonce error asks for the request again, with it.
            if response.status_code != 400 or _json(response).get("error") != "use_dpop_nonce":
                break
        body, token = _token_answer(response, f"the token endpoint {endpoint} refused")
        expires_in = body.get("expires_in")
        refresh = body.get("refresh_token")
        granted = body.get("scope")
        token_type = body.get("token_type")
        return OAuthTokens(
            access_token=token,
            token_type=token_type if isinstance(token_type, str) else "Bearer",
            refresh_token=refresh if isinstance(refresh, str) else None,
            expires_at=time.time() + expires_in
            if isinstance(expires_in, int | float) and not isinstance(expires_in, bool)
            else None,
            scope=granted if isinstance(granted, str) else scope,
            issuer=discovery.issuer,
        )

    def _auth_method(self, discovery: _Discovery, client: ClientRegistration) -> str:
        supported = _strings(discovery.metadata.get("token_endpoint_auth_methods_supported"))
        if self._config.private_key is not None:
            return "private_key_jwt"
        if client.client_secret is None:
            return "none"
        # RFC 8414: client_secret_basic is the default when the server names none.
        for method in ("client_secret_basic", "client_secret_post"):
            if method in (supported or ["client_secret_basic"]):
                return method
        return "client_secret_basic"

    def _client_assertion(self, client: ClientRegistration, discovery: _Discovery) -> str:
        try:
            import jwt  # noqa: PLC0415 - PyJWT loads only for private_key_jwt
        except ImportError as exc:
            raise AuthorizationError(
                'private_key_jwt needs PyJWT: pip install "trio-mcp[auth]"'
            ) from exc
        key = self._config.private_key
        assert key is not None, "private_key_jwt is chosen only with a private key"
        now = int(time.time())
        claims = {
            "iss": client.client_id,
            "sub": client.client_id,
            "aud": discovery.issuer,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME,
            "jti": secrets.token_urlsafe(16),
        }
        return jwt.encode(claims, key, algorithm=self._config.signing_algorithm)


# -- helpers ------------------------------------------------------------------------------------


def _needed(challenge: Mapping[str, str], tokens: OAuthTokens | None) -> list[str]:
    """The challenged scopes that `tokens` (the ones refused) were not granted."""
    granted = set((tokens.scope or "").split()) if tokens is not None else set()
    return [scope for scope in (challenge.get("scope") or "").split() if scope not in granted]


def _check_granted(tokens: OAuthTokens, needed: list[str], challenge: Mapping[str, str]) -> None:
    """Stop a step-up whose grant left out scopes it asked for (Rule 1).

    Asking again would only open the browser once more for the same answer: the authorization
    server chose not to grant them (RFC 6749 section 3.3). Tokens that name no scope were
    granted what was asked.
    """
    if tokens.scope is None:
        return
    granted = set(tokens.scope.split())
    missing = [scope for scope in needed if scope not in granted]
    if not missing:
        return
    message = (
        f"the authorization server did not grant scope(s) {' '.join(missing)}, which this "
        "request needs"
    )
    description = challenge.get("error_description")
    if description:
        message += f" (the server said: {description})"
    raise AuthorizationError(message)


@contextlib.asynccontextmanager
async def _reaching() -> AsyncIterator[None]:
    # An authorization server out of reach is an authorization failure, not a network error of
    # the MCP request: the link would otherwise send the request again (`transports/http/client`
    # Rule 1) and report the MCP server unreachable.
    try:
        yield
    except httpx.HTTPError as exc:
        raise AuthorizationError(f"the authorization could not reach a server: {exc!r}") from exc


class _DpopKey:
    """A DPoP key pair and the nonces servers gave for it (RFC 9449)."""

    def __init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415
        from jwt.algorithms import ECAlgorithm  # noqa: PLC0415

        self._private = ec.generate_private_key(ec.SECP256R1())
        self._jwk = ECAlgorithm.to_jwk(self._private.public_key(), as_dict=True)
        #: The last `DPoP-Nonce` of the authorization server and of the resource server.
        self.server_nonce: str | None = None
        self.resource_nonce: str | None = None

    def __repr__(self) -> str:
        return "<DPoP key>"

    def proof(
        self, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None
    ) -> str:
        """A fresh proof JWT for one request (RFC 9449 section 4.2)."""
        import jwt  # noqa: PLC0415

        parts = urlsplit(url)
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method,
            "htu": f"{parts.scheme}://{parts.netloc}{parts.path}",
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = s256(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        return jwt.encode(
            claims, self._private, algorithm="ES256", headers={"typ": "dpop+jwt", "jwk": self._jwk}
        )


def _basic(client_id: str, secret: str) -> str:
    # RFC 6749 section 2.3.1: each part form-encoded before they are joined.
    pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


def _strings(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [item for item in value if isinstance(item, str)]


def _token_endpoint(discovery: _Discovery) -> str:
    endpoint = discovery.metadata.get("token_endpoint")
    if not isinstance(endpoint, str):
        raise AuthorizationError(f"{discovery.issuer} names no token endpoint")
    return endpoint


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _token_answer(response: httpx.Response, failure: str) -> tuple[dict[str, Any], str]:
    """A token endpoint's answer and the access token in it.

    Raises:
        AuthorizationError: the answer is not a 200 carrying an access token; the message is
            `failure` followed by the endpoint's error.
    """
    body = _json(response)
    token = body.get("access_token")
    if response.status_code != 200 or not isinstance(token, str):
        raise AuthorizationError(f"{failure}: {_oauth_error(response, body)}")
    return body, token


def _oauth_error(response: httpx.Response, body: Mapping[str, Any]) -> str:
    error = body.get("error")
    description = body.get("error_description")
    text = f"HTTP {response.status_code}"
    if isinstance(error, str):
        text += f" ({error})"
    if isinstance(description, str):
        text += f": {description}"
    return text


async def _metadata(http: httpx.AsyncClient, url: str) -> Mapping[str, Any] | None:
    """The metadata document at `url`, or None.

    None when it is not there (not a 200, not a JSON object with something in it) or out of
    reach (logged).
    """
    try:
        data = await get_json(http, url)
    except httpx.HTTPError as exc:
        logger.info("metadata at %s unreachable: %s", url, exc)
        return None
    except ValueError:
        return None
    return data if isinstance(data, dict) and data else None


class AutoRedirect:
    """`redirect_handler` and `callback_handler` for an authorization server that approves alone.

    `redirect` GETs the authorization URL without following its redirect and keeps where it
    points; `callback` returns what that redirect carries. For tests and unattended clients
    whose authorization server needs no user (a real user needs a browser and a listener on
    the redirect URI instead).

    ```python
    redirect = AutoRedirect()
    auth = OAuth(redirect_handler=redirect.redirect, callback_handler=redirect.callback)
    ```
    """

    def __init__(self) -> None:
        self._location: str | None = None

    async def redirect(self, authorization_url: str) -> None:
        """Ask the authorization server for `authorization_url` and keep its redirect."""
        async with _oauth_http() as http:
            response = await http.get(authorization_url)
        location = response.headers.get("location")
        if response.status_code not in _REDIRECTS or not location:
            raise AuthorizationError(
                f"the authorization endpoint answered HTTP {response.status_code} without a "
                "redirect: it needs a user"
            )
        self._location = urljoin(authorization_url, location)

    async def callback(self) -> AuthorizationResponse:
        """The parameters of the redirect `redirect` kept."""
        location, self._location = self._location, None
        if location is None:
            raise AuthorizationError("no authorization redirect to read")
        return AuthorizationResponse.from_url(location)


def id_jag_assertion(
    *,
    token_endpoint: str,
    id_token: str,
    client_id: str,
    client_secret: str | None = None,
) -> AssertionProvider:
    """An `OAuth.assertion` for enterprise-managed authorization (SEP-990).

    Each call exchanges the user's ID token at the enterprise identity provider's token
    endpoint (RFC 8693 token exchange) for an identity assertion authorization grant (ID-JAG)
    whose audience is the MCP server's authorization server; `OAuth(grant="jwt_bearer")`
    then sends it there (RFC 7523).

    Args:
        token_endpoint: The identity provider's token endpoint.
        id_token: The user's OpenID Connect ID token from the identity provider.
        client_id: This client's id at the identity provider.
        client_secret: Its secret there, when it has one (sent with client_secret_basic).
    """

    async def exchange(request: AssertionRequest) -> str:
        data = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "audience": request.issuer,
            "resource": request.resource,
            "subject_token": id_token,
            "subject_token_type": ID_TOKEN,
        }
        if request.scope is not None:
            data["scope"] = request.scope
        headers: dict[str, str] = {}
        if client_secret is None:
            data["client_id"] = client_id
        else:
            headers["authorization"] = _basic(client_id, client_secret)
        async with _oauth_http() as http:
            response = await http.post(token_endpoint, data=data, headers=headers)
        return _token_answer(response, f"the token exchange at {token_endpoint} failed")[1]

    return exchange
