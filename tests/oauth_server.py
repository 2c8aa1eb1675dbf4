"""A real OAuth 2.1 authorization server for the tests, served on loopback under trio.

`serve_oauth(**knobs)` starts an `OAuthServer` (an ASGI app) on a free 127.0.0.1 port with
Hypercorn's trio worker and yields it; `server.issuer` is then its URL (plus `issuer_path`).
It signs JWT access tokens (RS256 or ES256) with PyJWT + cryptography, and serves:

    /.well-known/oauth-authorization-server[<issuer_path>]   RFC 8414 metadata  ("metadata")
    <issuer_path>/.well-known/openid-configuration           OpenID Connect Discovery ("openid")
    /.well-known/openid-configuration<issuer_path>           the same, path-inserted ("openid")
    <issuer_path>/jwks             JSON Web Key Set                              ("jwks")
    <issuer_path>/authorize        authorization endpoint, auto-approves         ("authorize")
    <issuer_path>/token            token endpoint                                ("token")
    <issuer_path>/register         RFC 7591 dynamic client registration          ("register")
    <issuer_path>/introspect       RFC 7662 introspection (client auth required) ("introspect")
    <issuer_path>/revoke           RFC 7009 revocation                           ("revoke")

The names in parentheses are the keys of `server.requests` (a `Counter` of requests served per
endpoint); `server.log` keeps every request (`Seen`: endpoint, method, form or query
parameters, headers) so a test can check what a client sent (a `resource` parameter, say).

Rules it enforces, as a strict authorization server would:
- Authorization: `response_type=code`, a known `client_id` and one of its `redirect_uris` (else
  400, no redirect; a loopback IP literal `http://127.0.0.1:PORT/...` or `[::1]` matches a
  registered one whatever its port, as RFC 8252 section 7.3 requires), PKCE with
  `code_challenge_method=S256` (required), `scope` within `scopes_supported`, and `resource`
  (RFC 8707) when `require_resource` (and within `allowed_resources` when given). It approves at
  once: 302 to the redirect URI with `code`, `state` and `iss` (RFC 9207).
  `deny_next_authorization(error)` makes the next one fail.
- Token: `authorization_code` (single-use code, same client and redirect URI, PKCE verifier,
  `resource` equal to the authorized one when given), `refresh_token` (rotation: the old
  refresh token is spent; presenting it again is `invalid_grant`; scope may only narrow), and
  `client_credentials` (confidential clients). Client authentication is the client's
  registered `token_endpoint_auth_method`: `none` (`client_id` in the form),
  `client_secret_basic` or `client_secret_post`; a mismatch is 401 `invalid_client`.
- Access tokens are JWTs with `iss`, `sub`, `aud` (the `resource` values, else
  `default_audience`), `exp`, `iat`, `nbf`, `jti`, `client_id` and `scope` (space-separated),
  signed with the current key, whose `kid` is in the JWS header. `token_format="opaque"` issues
  random strings instead (for introspection-only resource servers).

Knobs (keyword arguments of `OAuthServer` and `serve_oauth`):
    algorithm: "RS256" (default) or "ES256", for the signing key (and `rotate_key`'s default).
    access_token_lifetime: Seconds an access token lives (default 3600; short for refresh
        tests). refresh_token_lifetime: seconds a refresh token lives (default 86400).
    scopes_supported: Scopes the server knows (advertised; requests beyond them are
        `invalid_scope`). default_scopes: granted when a request names none.
    withheld_scopes: Scopes it knows and accepts in a request but never grants: the token
        and the token response's `scope` leave them out (RFC 6749, 3.3: an authorization
        server may issue a narrower scope than requested), so no step-up ever gets them.
    default_audience: `aud` of tokens issued without a `resource` (default: none, so no `aud`).
    require_resource / allowed_resources: RFC 8707 rules described above.
    issuer_path: A path for the issuer (e.g. "/tenant"), to exercise RFC 8414 path insertion.
    serve_oauth_metadata / serve_openid_metadata: Serve either discovery document (both by
        default), to exercise a client's fallbacks.
    dynamic_registration: Offer the registration endpoint (default True).
    client_id_metadata_documents: Advertise `client_id_metadata_document_supported` and accept
        an http(s) URL as `client_id` at the authorization and token endpoints: the document is
        fetched (httpx) and must name that URL as its `client_id`; its `redirect_uris` apply.
    refresh_tokens: Issue refresh tokens with `authorization_code` grants (default True).
    token_format: "jwt" (default) or "opaque".

Run as a program (`python tests/oauth_server.py [--port N] [--scopes ...]`), it serves on
127.0.0.1 until Ctrl-C, for trying `trio-mcp run --auth-issuer` and the sign-in by hand: it
prints `issuer: URL` first, then a `trio-mcp run ...` command to put the demo tools behind it.

Test controls (plain methods): `register_client(...)` (a pre-registered client), `rotate_key`,
`mint(...)` (a token with arbitrary claims: expired, wrong `aud` or `iss`, chosen scopes, signed
with an unpublished key), `revoke(token)`, `deny_next_authorization`, `requests` /
`reset_counts()`, `jwks_down` (set True: the JWKS endpoint answers 503), `authorize_url(...)`
and `authorize(...)` (run the authorization step over HTTP as a browser would, returning the
redirect's query), and `pkce_pair()`.
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import json
import secrets
import shlex
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import parse_qsl, unquote_plus, urlencode, urlsplit

import httpx
import jwt
import trio
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from hypercorn.config import Config
from hypercorn.trio import serve
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

if __package__ in (None, ""):  # run by path (`python tests/oauth_server.py`): `tests` is above
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.timing import scaled

__all__ = ["OAuthClient", "OAuthError", "OAuthServer", "Seen", "SigningKey", "serve_oauth"]

Algorithm = Literal["RS256", "ES256"]
Scope = dict[str, Any]


class OAuthError(Exception):
    """An OAuth error response (RFC 6749, 5.2): status, `error` code and description."""

    def __init__(self, error: str, description: str = "", status: int = 400) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description
        self.status = status


@dataclass(frozen=True)
class SigningKey:
    """A private signing key with its `kid` and JWS algorithm."""

    kid: str
    algorithm: Algorithm
    private: Any

    @classmethod
    def generate(cls, algorithm: Algorithm) -> SigningKey:
        private: Any
        if algorithm == "RS256":
            private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        else:
            private = ec.generate_private_key(ec.SECP256R1())
        return cls(secrets.token_hex(8), algorithm, private)

    def jwk(self) -> dict[str, Any]:
        """The public JWK, with `kid`, `alg` and `use`."""
        public = self.private.public_key()
        codec = RSAAlgorithm if self.algorithm == "RS256" else ECAlgorithm
        key: dict[str, Any] = codec.to_jwk(public, as_dict=True)
        return {**key, "kid": self.kid, "alg": self.algorithm, "use": "sig"}


@dataclass
class OAuthClient:
    """A registered client."""

    client_id: str
    client_secret: str | None = None
    redirect_uris: tuple[str, ...] = ()
    token_endpoint_auth_method: str = "none"
    grant_types: tuple[str, ...] = ("authorization_code", "refresh_token")
    scope: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Seen:
    """One request the server served."""

    endpoint: str
    method: str
    params: dict[str, str]
    headers: dict[str, str]


@dataclass
class _Grant:
    client_id: str
    scopes: tuple[str, ...]
    resources: tuple[str, ...]
    subject: str
    redirect_uri: str = ""
    challenge: str = ""
    expires_at: float = 0.0


@dataclass(frozen=True)
class _Request:
    headers: dict[str, str]
    query: dict[str, str]
    form: dict[str, str]
    body: bytes


class OAuthServer:
    """The authorization server as an ASGI app; see the module docstring for its knobs."""

    def __init__(
        self,
        *,
        algorithm: Algorithm = "RS256",
        access_token_lifetime: float = 3600,
        refresh_token_lifetime: float = 86400,
        scopes_supported: Iterable[str] = ("mcp", "notes:read", "notes:write", "admin"),
        default_scopes: Iterable[str] = ("mcp",),
        withheld_scopes: Iterable[str] = (),
        default_audience: str | None = None,
        require_resource: bool = False,
        allowed_resources: Iterable[str] | None = None,
        issuer_path: str = "",
        serve_oauth_metadata: bool = True,
        serve_openid_metadata: bool = True,
        dynamic_registration: bool = True,
        client_id_metadata_documents: bool = False,
        refresh_tokens: bool = True,
        token_format: Literal["jwt", "opaque"] = "jwt",
        subject: str = "user-1",
    ) -> None:
        self.algorithm: Algorithm = algorithm
        self.access_token_lifetime = access_token_lifetime
        self.refresh_token_lifetime = refresh_token_lifetime
        self.scopes_supported = tuple(scopes_supported)
        self.default_scopes = tuple(default_scopes)
        self.withheld_scopes = frozenset(withheld_scopes)
        self.default_audience = default_audience
        self.require_resource = require_resource
        self.allowed_resources = None if allowed_resources is None else tuple(allowed_resources)
        self.issuer_path = issuer_path.rstrip("/")
        self.serve_oauth_metadata = serve_oauth_metadata
        self.serve_openid_metadata = serve_openid_metadata
        self.dynamic_registration = dynamic_registration
        self.client_id_metadata_documents = client_id_metadata_documents
        self.refresh_tokens = refresh_tokens
        self.token_format = token_format
        self.subject = subject
        #: The server's URL (scheme://host:port); set by `serve_oauth`.
        self.base = "http://127.0.0.1"
        self.keys: list[SigningKey] = [SigningKey.generate(algorithm)]
        self.clients: dict[str, OAuthClient] = {}
        self.requests: Counter[str] = Counter()
        #: Set True to make the JWKS endpoint answer 503 (an authorization server in trouble).
        self.jwks_down = False
        self.log: list[Seen] = []
        self._codes: dict[str, _Grant] = {}
        self._refresh: dict[str, _Grant] = {}
        self._opaque: dict[str, dict[str, Any]] = {}
        self._revoked: set[str] = set()
        self._deny_next: str | None = None

    # -- addresses ----------------------------------------------------------------------------

    @property
    def issuer(self) -> str:
        """The issuer identifier (`iss` of its tokens)."""
        return self.base + self.issuer_path

    def endpoint(self, name: str) -> str:
        """The URL of an endpoint: "authorize", "token", "jwks", "register", ..."""
        return f"{self.issuer}/{name}"

    @property
    def metadata_url(self) -> str:
        """Where RFC 8414 metadata is served (path-inserted for an issuer with a path)."""
        return f"{self.base}/.well-known/oauth-authorization-server{self.issuer_path}"

    def metadata(self) -> dict[str, Any]:
        """The RFC 8414 metadata document."""
        doc: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": self.endpoint("authorize"),
            "token_endpoint": self.endpoint("token"),
            "jwks_uri": self.endpoint("jwks"),
            "introspection_endpoint": self.endpoint("introspect"),
            "revocation_endpoint": self.endpoint("revoke"),
            "scopes_supported": list(self.scopes_supported),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_basic",
                "client_secret_post",
            ],
            "introspection_endpoint_auth_methods_supported": [
                "client_secret_basic",
                "client_secret_post",
            ],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
        }
        if self.dynamic_registration:
            doc["registration_endpoint"] = self.endpoint("register")
        if self.client_id_metadata_documents:
            doc["client_id_metadata_document_supported"] = True
        return doc

    # -- test controls ------------------------------------------------------------------------

    def register_client(
        self,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        redirect_uris: Iterable[str] = (),
        token_endpoint_auth_method: str = "none",
        grant_types: Iterable[str] = ("authorization_code", "refresh_token"),
        scope: str | None = None,
    ) -> OAuthClient:
        """Register a client directly; a secret is made for a confidential one if not given."""
        if token_endpoint_auth_method != "none" and client_secret is None:
            client_secret = secrets.token_urlsafe(24)
        client = OAuthClient(
            client_id=client_id or "client-" + secrets.token_hex(6),
            client_secret=client_secret,
            redirect_uris=tuple(redirect_uris),
            token_endpoint_auth_method=token_endpoint_auth_method,
            grant_types=tuple(grant_types),
            scope=scope,
        )
        self.clients[client.client_id] = client
        return client

    def rotate_key(self, algorithm: Algorithm | None = None, *, keep_old: bool = True) -> str:
        """Sign with a new key from now on; publish the old ones too unless `keep_old` is False.

        Returns:
            The new key's `kid`.
        """
        key = SigningKey.generate(algorithm or self.algorithm)
        self.keys = [key, *self.keys] if keep_old else [key]
        return key.kid

    def jwks(self) -> dict[str, Any]:
        """The published key set."""
        return {"keys": [key.jwk() for key in self.keys]}

    def mint(
        self,
        *,
        scopes: Iterable[str] | None = None,
        audience: str | list[str] | None = None,
        issuer: str | None = None,
        subject: str | None = None,
        client_id: str = "test-client",
        expires_in: float | None = None,
        not_before: float | None = None,
        unpublished_key: bool = False,
        kid: str | None = None,
        typ: str | None = None,
        claims: Mapping[str, Any] | None = None,
        omit: Iterable[str] = (),
    ) -> str:
        """A signed access token with chosen claims, as the token endpoint would issue.

        Args:
            scopes: Granted scopes (`scope` claim); default `default_scopes`.
            audience: `aud`; default `default_audience` (omitted when that is None too).
            issuer: `iss`; default this server's issuer.
            subject: `sub`; default the server's `subject`.
            client_id: The `client_id` claim.
            expires_in: Seconds until `exp` (negative: already expired); default the access
                token lifetime.
            not_before: `nbf` as seconds from now (positive: not yet valid); default now.
            unpublished_key: Sign with a fresh key that the JWKS does not hold, under the
                current key's `kid` (a bad signature) unless `kid` is given.
            kid: The JWS header's `kid` (default the signing key's).
            typ: The JWS header's `typ` (default PyJWT's, "JWT").
            claims: More claims, overriding the ones above.
            omit: Claims to leave out (e.g. "exp").
        """
        now = time.time()
        lifetime = self.access_token_lifetime if expires_in is None else expires_in
        body: dict[str, Any] = {
            "iss": issuer or self.issuer,
            "sub": subject or self.subject,
            "client_id": client_id,
            "scope": " ".join(self.default_scopes if scopes is None else scopes),
            "iat": int(now),
            "nbf": int(now + (not_before or 0)),
            "exp": int(now + lifetime),
            "jti": secrets.token_hex(12),
        }
        aud = audience if audience is not None else self.default_audience
        if aud is not None:
            body["aud"] = aud
        body.update(claims or {})
        for name in omit:
            body.pop(name, None)
        key = self.keys[0]
        if unpublished_key:
            key = SigningKey(key.kid, key.algorithm, SigningKey.generate(key.algorithm).private)
        if self.token_format == "opaque" and not unpublished_key:
            token = secrets.token_urlsafe(32)
            self._opaque[token] = body
            return token
        return jwt.encode(
            body,
            key.private,
            algorithm=key.algorithm,
            headers={"kid": kid or key.kid, **({"typ": typ} if typ else {})},
        )

    def revoke(self, token: str) -> None:
        """Revoke an access or refresh token: introspection reports it inactive from now on."""
        self._revoked.add(token)
        self._refresh.pop(token, None)

    def deny_next_authorization(self, error: str = "access_denied") -> None:
        """Make the next authorization request redirect back with `error`."""
        self._deny_next = error

    def reset_counts(self) -> None:
        """Forget the request counts and log."""
        self.requests.clear()
        self.log.clear()

    def introspect(self, token: str) -> dict[str, Any]:
        """What the introspection endpoint answers for `token` (RFC 7662, 2.2)."""
        if token in self._revoked:
            return {"active": False}
        claims = self._opaque.get(token)
        if claims is None:
            claims = self._decode(token)
        if claims is None or claims.get("exp", 0) < time.time():
            return {"active": False}
        return {"active": True, "token_type": "Bearer", **claims}

    @staticmethod
    def pkce_pair() -> tuple[str, str]:
        """A PKCE `(code_verifier, code_challenge)` pair (S256)."""
        verifier = secrets.token_urlsafe(48)
        return verifier, _s256(verifier)

    def authorize_url(self, **params: str) -> str:
        """The authorization endpoint's URL with `params` as its query."""
        return self.endpoint("authorize") + "?" + urlencode(params)

    async def authorize(self, http: httpx.AsyncClient, **params: str) -> dict[str, str]:
        """Run the authorization step as a browser would; the redirect's query parameters.

        Raises:
            AssertionError: The server did not redirect (an error page).
        """
        response = await http.get(self.authorize_url(**params), follow_redirects=False)
        assert response.status_code == 302, (response.status_code, response.text)
        return dict(parse_qsl(urlsplit(response.headers["location"]).query))

    # -- ASGI ---------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """ASGI 3 entry point."""
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        status, out_headers, out = await self._dispatch(scope, headers, body)
        await send({"type": "http.response.start", "status": status, "headers": out_headers})
        await send({"type": "http.response.body", "body": out})

    async def _dispatch(
        self, scope: Scope, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        path, method = scope["path"], scope["method"]
        query = dict(parse_qsl(scope.get("query_string", b"").decode()))
        form = dict(parse_qsl(body.decode())) if method == "POST" else {}
        endpoint = self._route(path)
        if endpoint is None:
            return _json(404, {"error": "not_found"})
        params = {**query, **form}
        if endpoint == "register":
            params = {"json": body.decode()}
        self.requests[endpoint] += 1
        self.log.append(Seen(endpoint, method, params, headers))
        if method == "OPTIONS":
            return 204, _CORS, b""
        try:
            return await self._serve(endpoint, method, _Request(headers, query, form, body))
        except OAuthError as error:
            extra = [(b"www-authenticate", b'Basic realm="oauth"')] if error.status == 401 else []
            answer = {"error": error.error, "error_description": error.description}
            status, out_headers, out = _json(error.status, answer)
            return status, out_headers + extra, out

    def _route(self, path: str) -> str | None:
        ip = self.issuer_path
        if self.serve_oauth_metadata and path == f"/.well-known/oauth-authorization-server{ip}":
            return "metadata"
        if self.serve_openid_metadata and path in (
            f"{ip}/.well-known/openid-configuration",
            f"/.well-known/openid-configuration{ip}",
        ):
            return "openid"
        names = ("jwks", "authorize", "token", "register", "introspect", "revoke")
        for name in names:
            if path == f"{ip}/{name}":
                if name == "register" and not self.dynamic_registration:
                    return None
                return name
        return None

    async def _serve(
        self, endpoint: str, method: str, request: _Request
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        expected = "GET" if endpoint in ("metadata", "openid", "jwks", "authorize") else "POST"
        if method != expected:
            return _json(405, {"error": "method_not_allowed"})
        if endpoint == "jwks" and self.jwks_down:
            return _json(503, {"error": "temporarily_unavailable"})
        if endpoint == "authorize":
            return await self._authorize(request.query)
        if endpoint == "revoke":
            # RFC 7009, 2.2: 200 whether or not the token was known.
            await self._client(request.headers, request.form)
            self.revoke(request.form.get("token", ""))
            return 200, [(b"cache-control", b"no-store")], b""
        status = 201 if endpoint == "register" else 200
        return _json(status, await self._document(endpoint, request))

    async def _document(self, endpoint: str, request: _Request) -> dict[str, Any]:
        if endpoint == "metadata":
            return self.metadata()
        if endpoint == "openid":
            doc = self.metadata()
            doc.update(subject_types_supported=["public"])
            doc.update(id_token_signing_alg_values_supported=[self.algorithm])
            return doc
        if endpoint == "jwks":
            return self.jwks()
        if endpoint == "register":
            return self._register(request.body)
        if endpoint == "token":
            return await self._token(request.headers, request.form)
        # introspect
        self._authenticate(request.headers, request.form, confidential=True)
        return self.introspect(request.form.get("token", ""))

    # -- authorization endpoint ---------------------------------------------------------------

    async def _authorize(
        self, query: dict[str, str]
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        client = await self._find_client(query.get("client_id", ""))
        redirect_uri = query.get("redirect_uri", "")
        if client is None:
            return _page(400, "unknown client_id")
        if not _registered(redirect_uri, client.redirect_uris):
            return _page(400, "redirect_uri is not registered for this client")
        answer: dict[str, str]
        try:
            grant = self._check_authorization(query)
        except OAuthError as error:
            answer = {"error": error.error, "error_description": error.description}
        else:
            code = secrets.token_urlsafe(24)
            grant.client_id, grant.redirect_uri = client.client_id, redirect_uri
            self._codes[code] = grant
            answer = {"code": code}
        if "state" in query:
            answer["state"] = query["state"]
        answer["iss"] = self.issuer
        separator = "&" if urlsplit(redirect_uri).query else "?"
        location = redirect_uri + separator + urlencode(answer)
        return 302, [(b"location", location.encode())], b""

    def _check_authorization(self, query: dict[str, str]) -> _Grant:
        if self._deny_next is not None:
            error, self._deny_next = self._deny_next, None
            raise OAuthError(error, "denied by the test")
        if query.get("response_type") != "code":
            raise OAuthError("unsupported_response_type", "only code")
        challenge = query.get("code_challenge", "")
        if not challenge or query.get("code_challenge_method") != "S256":
            raise OAuthError("invalid_request", "PKCE with S256 is required")
        scopes = self._scopes(query.get("scope"))
        resources = self._resources(query)
        return _Grant("", scopes, resources, self.subject, "", challenge, time.time() + 600)

    # -- token endpoint -----------------------------------------------------------------------

    async def _token(self, headers: dict[str, str], form: dict[str, str]) -> dict[str, Any]:
        client = await self._client(headers, form)
        grant_type = form.get("grant_type")
        if grant_type not in client.grant_types and not (
            grant_type == "client_credentials" and client.client_secret is not None
        ):
            raise OAuthError("unauthorized_client", f"{grant_type} is not allowed for this client")
        if grant_type == "authorization_code":
            return self._code_grant(client, form)
        if grant_type == "refresh_token":
            return self._refresh_grant(client, form)
        if grant_type == "client_credentials":
            if client.client_secret is None:
                raise OAuthError("unauthorized_client", "client_credentials needs a secret")
            grant = _Grant(
                client.client_id,
                self._scopes(form.get("scope")),
                self._resources(form),
                client.client_id,
            )
            return self._issue(grant, refresh=False)
        raise OAuthError("unsupported_grant_type", f"{grant_type!r}")

    def _code_grant(self, client: OAuthClient, form: dict[str, str]) -> dict[str, Any]:
        grant = self._codes.pop(form.get("code", ""), None)
        if grant is None or grant.client_id != client.client_id:
            raise OAuthError("invalid_grant", "unknown or spent code")
        if grant.expires_at < time.time():
            raise OAuthError("invalid_grant", "expired code")
        if form.get("redirect_uri") != grant.redirect_uri:
            raise OAuthError("invalid_grant", "redirect_uri does not match")
        if _s256(form.get("code_verifier", "")) != grant.challenge:
            raise OAuthError("invalid_grant", "PKCE verification failed")
        given = self._resources(form, required=False)
        if given and not set(given) <= set(grant.resources or given):
            raise OAuthError("invalid_target", "resource differs from the authorized one")
        return self._issue(grant, refresh=self.refresh_tokens)

    def _refresh_grant(self, client: OAuthClient, form: dict[str, str]) -> dict[str, Any]:
        old = form.get("refresh_token", "")
        grant = self._refresh.pop(old, None)
        if grant is None or grant.client_id != client.client_id or old in self._revoked:
            raise OAuthError("invalid_grant", "unknown, spent or revoked refresh token")
        if grant.expires_at < time.time():
            raise OAuthError("invalid_grant", "expired refresh token")
        self._revoked.add(old)
        if "scope" in form:
            narrowed = self._scopes(form["scope"])
            if not set(narrowed) <= set(grant.scopes):
                raise OAuthError("invalid_scope", "a refresh may only narrow the scope")
            grant = _Grant(grant.client_id, narrowed, grant.resources, grant.subject)
        given = self._resources(form, required=False)
        if given:
            if grant.resources and not set(given) <= set(grant.resources):
                raise OAuthError("invalid_target", "resource differs from the authorized one")
            grant = _Grant(grant.client_id, grant.scopes, given, grant.subject)
        return self._issue(grant, refresh=True)

    def _issue(self, grant: _Grant, *, refresh: bool) -> dict[str, Any]:
        audience: str | list[str] | None = None
        if len(grant.resources) == 1:
            audience = grant.resources[0]
        elif grant.resources:
            audience = list(grant.resources)
        token = self.mint(
            scopes=grant.scopes,
            audience=audience,
            subject=grant.subject,
            client_id=grant.client_id,
        )
        answer: dict[str, Any] = {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": int(self.access_token_lifetime),
            "scope": " ".join(grant.scopes),
        }
        if refresh:
            refresh_token = secrets.token_urlsafe(32)
            self._refresh[refresh_token] = _Grant(
                grant.client_id,
                grant.scopes,
                grant.resources,
                grant.subject,
                expires_at=time.time() + self.refresh_token_lifetime,
            )
            answer["refresh_token"] = refresh_token
        return answer

    # -- registration -------------------------------------------------------------------------

    def _register(self, body: bytes) -> dict[str, Any]:
        try:
            doc = json.loads(body)
        except ValueError:
            raise OAuthError("invalid_client_metadata", "the body is not JSON") from None
        if not isinstance(doc, dict):
            raise OAuthError("invalid_client_metadata", "the body is not a JSON object")
        grant_types = tuple(doc.get("grant_types") or ("authorization_code", "refresh_token"))
        redirect_uris = tuple(doc.get("redirect_uris") or ())
        if "authorization_code" in grant_types and not redirect_uris:
            raise OAuthError("invalid_redirect_uri", "redirect_uris is required")
        method = doc.get("token_endpoint_auth_method", "client_secret_basic")
        if method not in ("none", "client_secret_basic", "client_secret_post"):
            raise OAuthError("invalid_client_metadata", f"unsupported auth method {method!r}")
        client = self.register_client(
            redirect_uris=redirect_uris,
            token_endpoint_auth_method=method,
            grant_types=grant_types,
            scope=doc.get("scope"),
        )
        client.metadata = doc
        answer = {
            **doc,
            "client_id": client.client_id,
            "client_id_issued_at": int(time.time()),
            "redirect_uris": list(redirect_uris),
            "grant_types": list(grant_types),
            "token_endpoint_auth_method": method,
        }
        if client.client_secret is not None:
            answer.update(client_secret=client.client_secret, client_secret_expires_at=0)
        return answer

    # -- clients ------------------------------------------------------------------------------

    async def _find_client(self, client_id: str) -> OAuthClient | None:
        client = self.clients.get(client_id)
        if client is not None or not self.client_id_metadata_documents:
            return client
        if not client_id.startswith(("http://", "https://")):
            return None
        try:
            async with httpx.AsyncClient(timeout=scaled(30)) as http:
                doc = (await http.get(client_id)).raise_for_status().json()
        except (httpx.HTTPError, ValueError):
            return None
        if not isinstance(doc, dict) or doc.get("client_id") != client_id:
            return None
        return OAuthClient(
            client_id,
            redirect_uris=tuple(doc.get("redirect_uris") or ()),
            token_endpoint_auth_method="none",
            grant_types=tuple(doc.get("grant_types") or ("authorization_code", "refresh_token")),
            metadata=doc,
        )

    async def _client(self, headers: dict[str, str], form: dict[str, str]) -> OAuthClient:
        client_id = self._authenticate(headers, form, confidential=False)
        client = await self._find_client(client_id)
        if client is None:
            raise OAuthError("invalid_client", "unknown client", 401)
        return client

    def _authenticate(
        self, headers: dict[str, str], form: dict[str, str], *, confidential: bool
    ) -> str:
        """Check the client's credentials; return its id (RFC 6749, 2.3)."""
        basic = headers.get("authorization", "")
        if basic.lower().startswith("basic "):
            try:
                decoded = base64.b64decode(basic[6:].strip(), validate=True).decode()
            except ValueError:
                raise OAuthError("invalid_client", "malformed Basic credentials", 401) from None
            client_id, _, secret = decoded.partition(":")
            method, client_id = "client_secret_basic", _unquote(client_id)
            secret = _unquote(secret)
        elif "client_secret" in form:
            method, client_id, secret = (
                "client_secret_post",
                form.get("client_id", ""),
                form["client_secret"],
            )
        else:
            method, client_id, secret = "none", form.get("client_id", ""), ""
        client = self.clients.get(client_id)
        if client is None:
            if method == "none" and not confidential and self.client_id_metadata_documents:
                return client_id
            raise OAuthError("invalid_client", "unknown client", 401)
        if confidential and client.client_secret is None:
            raise OAuthError("invalid_client", "client authentication required", 401)
        if method != client.token_endpoint_auth_method:
            raise OAuthError(
                "invalid_client",
                f"this client authenticates with {client.token_endpoint_auth_method}",
                401,
            )
        if client.client_secret is not None and not secrets.compare_digest(
            secret, client.client_secret
        ):
            raise OAuthError("invalid_client", "wrong client secret", 401)
        return client_id

    # -- checks -------------------------------------------------------------------------------

    def _scopes(self, requested: str | None) -> tuple[str, ...]:
        if not requested:
            return self.default_scopes
        scopes = tuple(requested.split())
        unknown = [s for s in scopes if s not in self.scopes_supported]
        if unknown:
            raise OAuthError("invalid_scope", f"unknown scope(s): {' '.join(unknown)}")
        return tuple(s for s in scopes if s not in self.withheld_scopes)

    def _resources(self, params: Mapping[str, str], *, required: bool = True) -> tuple[str, ...]:
        # parse_qsl into a dict keeps the last of repeated `resource` parameters: one is what
        # MCP clients send (the canonical server URI).
        resource = params.get("resource")
        if resource is None:
            if required and self.require_resource:
                raise OAuthError("invalid_target", "resource is required")
            return ()
        if urlsplit(resource).fragment or not urlsplit(resource).scheme:
            raise OAuthError("invalid_target", "resource must be an absolute URI, no fragment")
        if self.allowed_resources is not None and resource not in self.allowed_resources:
            raise OAuthError("invalid_target", f"unknown resource {resource}")
        return (resource,)

    def _decode(self, token: str) -> dict[str, Any] | None:
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError:
            return None
        for key in self.keys:
            if key.kid == kid:
                try:
                    claims: dict[str, Any] = jwt.decode(
                        token,
                        key.private.public_key(),
                        algorithms=[key.algorithm],
                        options={"verify_aud": False, "verify_exp": False},
                    )
                except jwt.PyJWTError:
                    return None
                return claims
        return None


_CORS = [
    (b"access-control-allow-origin", b"*"),
    (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
    (b"access-control-allow-headers", b"authorization, content-type"),
]


def _registered(redirect_uri: str, registered: Iterable[str]) -> bool:
    """Whether `redirect_uri` is one of `registered`, any port for a loopback IP (RFC 8252)."""
    if redirect_uri in registered:
        return True
    asked = urlsplit(redirect_uri)
    if asked.scheme != "http" or asked.hostname not in ("127.0.0.1", "::1"):
        return False
    for uri in registered:
        known = urlsplit(uri)
        if (known.scheme, known.hostname, known.path, known.query) == (
            asked.scheme,
            asked.hostname,
            asked.path,
            asked.query,
        ):
            return True
    return False


def _json(status: int, doc: Any) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    headers = [
        (b"content-type", b"application/json"),
        (b"cache-control", b"no-store"),
        *_CORS,
    ]
    return status, headers, json.dumps(doc).encode()


def _page(status: int, text: str) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    return status, [(b"content-type", b"text/plain; charset=utf-8")], text.encode()


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _unquote(text: str) -> str:
    # client_secret_basic form-encodes the id and secret before base64 (RFC 6749, 2.3.1).
    return unquote_plus(text)


@asynccontextmanager
async def serve_oauth(*, port: int = 0, **knobs: Any) -> AsyncIterator[OAuthServer]:
    """Serve an `OAuthServer(**knobs)` on a loopback port (a free one by default) until the
    block ends."""
    server = OAuthServer(**knobs)
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        # Hypercorn's types name its own ASGI TypedDicts; this app reads plain dicts.
        app = cast("Any", server)
        binds = await nursery.start(
            functools.partial(serve, app, config, shutdown_trigger=stop.wait)
        )
        server.base = binds[0]
        try:
            yield server
        finally:
            stop.set()


# -- a development authorization server ---------------------------------------------------------


async def _serve_forever(port: int, scopes: list[str], mcp_port: int) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as stops:
        async with serve_oauth(
            port=port, scopes_supported=scopes, default_scopes=scopes[:1]
        ) as server:
            _announce(server, scopes, mcp_port)
            async for _ in stops:  # Ctrl-C: the server stops, and the program ends well
                break


def _announce(server: OAuthServer, scopes: list[str], mcp_port: int) -> None:
    """Say the issuer, first, and how to put the demo tools behind it."""
    audience = f"http://127.0.0.1:{mcp_port}/mcp"
    command = [
        "trio-mcp", "run", "demo_tools", "--transport", "http", "--port", str(mcp_port),
        "--auth-issuer", server.issuer, "--auth-audience", audience,
        "--auth-scopes", scopes[0],
    ]  # fmt: skip
    print(f"issuer: {server.issuer}", flush=True)
    print(
        "a test authorization server: it approves every sign-in at once, as user "
        f"{server.subject!r}; serve the demo tools behind it with\n  {shlex.join(command)}\n"
        f"and sign in with\n  trio-mcp login {audience}\n(Ctrl-C stops it)",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    """`python tests/oauth_server.py [--port N] [--scopes S ...] [--mcp-port N]`."""
    parser = argparse.ArgumentParser(
        prog="python tests/oauth_server.py",
        description="Serve the test authorization server on 127.0.0.1 until Ctrl-C, for trying "
        "`trio-mcp run --auth-issuer` and the command line's sign-in by hand. It approves "
        "every authorization at once: never use it for anything but development.",
    )
    parser.add_argument("--port", type=int, default=9000, help="port to serve on (9000; 0: any)")
    parser.add_argument(
        "--scopes",
        nargs="+",
        default=["mcp", "notes:read", "notes:write", "admin"],
        metavar="SCOPE",
        help="the scopes it knows (the first is granted when a client names none)",
    )
    parser.add_argument(
        "--mcp-port", type=int, default=8000, help="the MCP server's port, for the printed command"
    )
    args = parser.parse_args(argv)
    trio.run(_serve_forever, args.port, args.scopes, args.mcp_port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
