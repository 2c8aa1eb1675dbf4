"""The OAuth client (`open_client(url, auth=OAuth(...))`): its rules, then whole flows.

The rules (discovery URL order, challenge parsing, resource and `iss` checks, scope selection,
PKCE) are tested as plain functions. The flows run against real servers on loopback: the
authorization server of tests/oauth_server.py and a trio-mcp server protected by trio-mcp
itself (`HttpOptions(auth=..., resource_metadata=ProtectedResource(...))`), which checks each
token by introspection at that authorization server (asking every time, so a revoked token is
refused at once, and `oauth.requests["introspect"]` counts the requests that carried a token)
or as a JWT. Its tools need scopes for step-up; `whoami` reports what `ctx.auth` says.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import httpx
import jwt
import pytest
import trio

from tests.auth.verifiers import verifier_for
from tests.http_helpers import Served, serve
from tests.oauth_server import OAuthServer, serve_oauth
from tests.timing import scaled
from trio_mcp import (
    AuthorizationError,
    AuthorizationResponse,
    AutoRedirect,
    ClientRegistration,
    Context,
    MemoryTokenStorage,
    OAuth,
    OAuthTokens,
    ProtectedResource,
    Server,
    TransportError,
    open_client,
    open_loopback_callback,
)
from trio_mcp._wellknown import authorization_server_metadata_urls
from trio_mcp.oauth.flow import _DpopKey
from trio_mcp.oauth.rules import (
    check_authorization_response,
    parse_www_authenticate,
    pkce_pair,
    protected_resource_metadata_urls,
    resource_matches,
    select_scope,
)

REDIRECT = "http://127.0.0.1:8765/callback"
# Bounds one test's flows and calls: loopback exchanges that take milliseconds.
TEST_TIMEOUT = scaled(60)

# -- the rules -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "scheme", "params"),
    [
        (
            'Bearer resource_metadata="https://x/.well-known/oauth-protected-resource", '
            'scope="a b"',
            "bearer",
            {"resource_metadata": "https://x/.well-known/oauth-protected-resource", "scope": "a b"},
        ),
        (
            'Bearer error="insufficient_scope", scope="w", error_description="say \\"no\\""',
            "bearer",
            {"error": "insufficient_scope", "scope": "w", "error_description": 'say "no"'},
        ),
        ("Bearer realm=mcp,scope=read", "bearer", {"realm": "mcp", "scope": "read"}),
        ('DPoP Scope="x", scope="y"', "dpop", {"scope": "x"}),
        ("", "", {}),
    ],
)
def test_parse_www_authenticate(header: str, scheme: str, params: dict[str, str]) -> None:
    assert parse_www_authenticate(header) == (scheme, params)


def test_protected_resource_metadata_order() -> None:
    assert protected_resource_metadata_urls("https://example.com/public/mcp") == [
        "https://example.com/.well-known/oauth-protected-resource/public/mcp",
        "https://example.com/.well-known/oauth-protected-resource",
    ]
    assert protected_resource_metadata_urls("https://example.com/") == [
        "https://example.com/.well-known/oauth-protected-resource"
    ]


def test_authorization_server_metadata_order() -> None:
    assert authorization_server_metadata_urls("https://auth.example.com/tenant1") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert authorization_server_metadata_urls("https://auth.example.com") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    ("resource", "matches"),
    [
        ("https://example.com/mcp", True),
        ("https://EXAMPLE.com/mcp", True),
        ("https://example.com", True),
        ("https://example.com/mcp/", True),
        ("https://evil.example.com/mcp", False),
        ("http://example.com/mcp", False),
        ("https://example.com:8443/mcp", False),
        ("https://example.com/mc", False),
        ("https://example.com/mcp/deeper", False),
        ("https://example.com/mcp#x", False),
    ],
)
def test_resource_matches(resource: str, matches: bool) -> None:
    assert resource_matches("https://example.com/mcp", resource) is matches


@pytest.mark.parametrize(
    ("options", "scope"),
    [
        ({"challenged": "a", "resource_scopes": ["b", "c"]}, "a"),
        ({"challenged": None, "resource_scopes": ["b", "c"]}, "b c"),
        ({"challenged": None, "resource_scopes": None}, None),
        ({"challenged": "w", "resource_scopes": None, "previous": "r w0"}, "r w0 w"),
        ({"challenged": "a", "resource_scopes": None, "configured": "mine"}, "mine"),
        (
            {"challenged": "a", "resource_scopes": None, "server_scopes": ["a", "offline_access"]},
            "a offline_access",
        ),
        ({"challenged": None, "resource_scopes": None, "server_scopes": ["offline_access"]}, None),
        (
            {
                "challenged": "a",
                "resource_scopes": None,
                "server_scopes": ["offline_access"],
                "refresh": False,
            },
            "a",
        ),
    ],
)
def test_select_scope(options: dict[str, Any], scope: str | None) -> None:
    options.setdefault("server_scopes", None)
    assert select_scope(**options) == scope


@pytest.mark.parametrize(
    ("iss", "supported", "accepted"),
    [
        ("https://as.example", True, True),
        (None, False, True),
        (None, True, False),  # promised, missing
        ("https://evil.example", True, False),
        ("https://evil.example", False, False),  # unadvertised, yet compared
        ("https://as.example/", True, False),  # no normalization
        ("HTTPS://as.example", True, False),
    ],
)
def test_iss_checks(iss: str | None, supported: bool, accepted: bool) -> None:
    response = AuthorizationResponse(code="c", state="s", iss=iss)
    check: dict[str, Any] = {
        "state": "s",
        "issuer": "https://as.example",
        "iss_supported": supported,
    }
    if accepted:
        assert check_authorization_response(response, **check) == "c"
    else:
        with pytest.raises(AuthorizationError, match="RFC 9207"):
            check_authorization_response(response, **check)


def test_authorization_response_state_and_errors() -> None:
    check: dict[str, Any] = {"state": "s", "issuer": "https://as", "iss_supported": False}
    with pytest.raises(AuthorizationError, match="state"):
        check_authorization_response(AuthorizationResponse(code="c", state="t"), **check)
    refused = AuthorizationResponse.from_url(
        "http://127.0.0.1/cb?error=access_denied&error_description=no+way&state=s"
    )
    with pytest.raises(AuthorizationError, match=r"access_denied.*no way"):
        check_authorization_response(refused, **check)
    back = AuthorizationResponse.from_url(
        "http://127.0.0.1/cb?code=abc&state=s&iss=https%3A%2F%2Fas"
    )
    assert (back.code, back.state, back.iss) == ("abc", "s", "https://as")


def test_pkce_pair_is_s256() -> None:
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128
    digest = hashlib.sha256(verifier.encode()).digest()
    assert challenge == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert pkce_pair()[0] != verifier


def test_secrets_stay_out_of_reprs() -> None:
    tokens = OAuthTokens(access_token="AT-secret", refresh_token="RT-secret", scope="mcp")
    client = ClientRegistration("id", "CS-secret")
    auth = OAuth(grant="client_credentials", client_id="id", client_secret="CS-secret")
    text = repr(tokens) + repr(client) + repr(auth) + repr(AuthorizationResponse(code="CODE"))
    for secret in ("AT-secret", "RT-secret", "CS-secret", "CODE"):
        assert secret not in text
    assert "mcp" in text


def test_oauth_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="redirect_handler"):
        OAuth()
    with pytest.raises(ValueError, match="client_secret or private_key"):
        OAuth(grant="client_credentials", client_id="id")
    with pytest.raises(ValueError, match="assertion"):
        OAuth(grant="jwt_bearer")


# -- the flows -----------------------------------------------------------------------------------


def notes_server() -> Server:
    """The protected server's tools: one for any token, two needing more scopes, and whoami."""
    server = Server("notes")

    @server.tool(inline=True)
    def add(a: int, b: int) -> int:
        """Needs no scope of its own."""
        return a + b

    @server.tool(scopes=["notes:write"])
    def write_note(text: str) -> str:
        """Needs notes:write (step-up)."""
        return "saved " + text

    @server.tool(scopes=["admin"])
    def administer() -> str:
        """Needs admin, which the authorization server may withhold."""
        return "done"

    @server.tool
    async def whoami(ctx: Context) -> dict[str, Any]:
        """Who the verified token of this call says the caller is."""
        assert ctx.auth is not None
        return {"subject": ctx.auth.subject, "client_id": ctx.auth.client_id}

    return server


@asynccontextmanager
async def serve_protected(
    oauth: OAuthServer,
    *,
    verifier: Literal["introspection", "jwt"] = "introspection",
    resource: str | None = None,
) -> AsyncIterator[Served]:
    """`notes_server()` protected by trio-mcp, trusting `oauth`; its metadata offers `mcp`.

    `resource` puts another canonical URI in the RFC 9728 metadata than the one served.
    """
    # The audience is the served URL, known once the port is bound: set just below.
    options = {} if verifier == "jwt" else {"cache_seconds": 0}
    made = verifier_for(oauth, verifier, **options)
    metadata = ProtectedResource(
        authorization_servers=(oauth.issuer,), scopes_supported=("mcp",), resource=resource
    )
    async with serve(notes_server(), auth=made, resource_metadata=metadata) as served:
        made.audience = served.url
        yield served


def _introspected(oauth: OAuthServer) -> list[str]:
    """The tokens the protected server asked about, one per request that carried one."""
    return [seen.params["token"] for seen in oauth.log if seen.endpoint == "introspect"]


def _asked_scopes(oauth: OAuthServer) -> list[str | None]:
    """The scope each authorization request asked for, in order."""
    return [seen.params.get("scope") for seen in oauth.log if seen.endpoint == "authorize"]


def _user(**options: Any) -> OAuth:
    """An unattended user who approves: the authorization server redirects at once."""
    redirect = AutoRedirect()
    return OAuth(
        redirect_uri=REDIRECT,
        redirect_handler=redirect.redirect,
        callback_handler=redirect.callback,
        **options,
    )


def _grants(oauth: OAuthServer, kind: str) -> list[dict[str, str]]:
    return [
        seen.params
        for seen in oauth.log
        if seen.endpoint == "token" and seen.params.get("grant_type") == kind
    ]


@pytest.mark.parametrize("verifier", ["introspection", "jwt"])
async def test_registration_authorization_code_and_every_request_carries_the_token(
    verifier: Literal["introspection", "jwt"],
) -> None:
    storage = MemoryTokenStorage()
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth(require_resource=True) as oauth,
            serve_protected(oauth, verifier=verifier) as mcp,
        ):
            async with open_client(mcp.url, auth=_user(storage=storage)) as client:
                result = await client.call_tool("add", {"a": 5, "b": 3})
                assert result.structured == {"result": 8}
                me = await client.call_tool("whoami")
                before_close = len(_introspected(oauth))
            tokens = await storage.get_tokens(mcp.url)
            assert tokens is not None
            (registered,) = [c for c in oauth.clients.values() if REDIRECT in c.redirect_uris]
            assert me.structured == {"subject": "user-1", "client_id": registered.client_id}
            assert oauth.requests["register"] == 1
            assert oauth.requests["authorize"] == 1
            (authorize,) = [seen.params for seen in oauth.log if seen.endpoint == "authorize"]
            assert authorize["resource"] == mcp.url
            assert authorize["code_challenge_method"] == "S256"
            assert authorize["scope"] == "mcp"
            (code,) = _grants(oauth, "authorization_code")
            assert code["resource"] == mcp.url
            # Only the first request met a 401: one authorization, no refresh since. With
            # introspection, every later request (the closing DELETE too) carried the token.
            assert _grants(oauth, "refresh_token") == []
            if verifier == "introspection":
                seen = _introspected(oauth)
                assert len(seen) == before_close + 1
                assert set(seen) == {tokens.access_token}


async def test_pre_registered_client_with_client_secret_basic() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth(dynamic_registration=False) as oauth,
            serve_protected(oauth) as mcp,
        ):
            registered = oauth.register_client(
                redirect_uris=[REDIRECT], token_endpoint_auth_method="client_secret_basic"
            )
            auth = _user(client_id=registered.client_id, client_secret=registered.client_secret)
            async with open_client(mcp.url, auth=auth) as client:
                assert await client.list_tools()
            (token,) = [seen for seen in oauth.log if seen.endpoint == "token"]
            assert token.headers["authorization"].startswith("Basic ")
            assert "client_secret" not in token.params
            assert oauth.requests["register"] == 0


async def test_without_registration_or_client_id_the_error_says_what_to_give() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth(dynamic_registration=False) as oauth,
            serve_protected(oauth) as mcp,
        ):
            with pytest.raises(AuthorizationError, match=r"client_id"):
                async with open_client(mcp.url, auth=_user()):
                    pass


async def test_expired_token_is_refreshed_before_it_is_sent() -> None:
    # A token that lives less than the refresh margin counts as expired at once: each request
    # after the first authorization refreshes it first, with the rotated refresh token.
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth(access_token_lifetime=5) as oauth,
            serve_protected(oauth, verifier="jwt") as mcp,
        ):
            async with open_client(mcp.url, auth=_user()) as client:
                await client.list_tools()
                await client.call_tool("add", {"a": 1, "b": 2})
            assert oauth.requests["authorize"] == 1
            refreshes = _grants(oauth, "refresh_token")
            assert len(refreshes) >= 2
            assert len({grant["refresh_token"] for grant in refreshes}) == len(refreshes)
            assert all(grant["resource"] == mcp.url for grant in refreshes)


async def test_insufficient_scope_steps_up_with_the_union_of_scopes() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth() as oauth,
            serve_protected(oauth) as mcp,
        ):
            async with open_client(mcp.url, auth=_user()) as client:
                await client.list_tools()
                result = await client.call_tool("write_note", {"text": "x"})
                assert [item.text for item in result.content] == ["saved x"]  # type: ignore[union-attr]
            assert _asked_scopes(oauth) == ["mcp", "mcp notes:write"]


async def test_a_scope_the_server_never_grants_ends_the_step_up() -> None:
    # The tool needs a scope the authorization server never grants: the step-up's grant comes
    # back without it, and asking again would only get the same answer. The call fails at
    # once with an AuthorizationError naming the scope and the server's reason, after one
    # step-up although max_step_ups allows two.
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth(withheld_scopes=["admin"]) as oauth,
            serve_protected(oauth) as mcp,
        ):
            async with open_client(mcp.url, auth=_user(max_step_ups=2)) as client:
                with pytest.raises(AuthorizationError) as caught:
                    await client.call_tool("administer")
                assert str(caught.value) == (
                    "the authorization server did not grant scope(s) admin, which this request "
                    "needs (the server said: This request needs scope(s): admin)"
                )
                assert await client.list_tools()  # the session itself still works
            # One authorization for the session, one step-up for the call.
            assert oauth.requests["authorize"] == 2
            assert _asked_scopes(oauth) == ["mcp", "mcp admin"]


async def test_a_refused_token_error_quotes_the_servers_description() -> None:
    # No OAuth: a token of the caller's own choosing that the server refuses. The error says
    # what the challenge's error_description says was wrong with it.
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth() as oauth,
            serve_protected(oauth, verifier="jwt") as mcp,
        ):
            with pytest.raises(TransportError) as caught:
                async with open_client(mcp.url, headers={"Authorization": "Bearer bad"}):
                    pass
            assert str(caught.value) == (
                f"HTTP 401 from {mcp.url}: Invalid bearer token (The access token is not a "
                "well-formed JWT)"
            )


async def test_client_credentials_grant() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth() as oauth,
            serve_protected(oauth) as mcp,
        ):
            machine = oauth.register_client(
                token_endpoint_auth_method="client_secret_post", grant_types=["client_credentials"]
            )
            auth = OAuth(
                grant="client_credentials",
                client_id=machine.client_id,
                client_secret=machine.client_secret,
                token_endpoint_auth_method="client_secret_post",
            )
            async with open_client(mcp.url, auth=auth) as client:
                assert await client.list_tools()
            (grant,) = _grants(oauth, "client_credentials")
            assert grant["client_id"] == machine.client_id
            assert grant["resource"] == mcp.url
            assert oauth.requests["authorize"] == 0


async def test_stored_tokens_serve_a_second_connection() -> None:
    storage = MemoryTokenStorage()
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth() as oauth,
            serve_protected(oauth) as mcp,
        ):
            for _ in range(2):
                async with open_client(mcp.url, auth=_user(storage=storage)) as client:
                    await client.list_tools()
            assert oauth.requests["authorize"] == 1
            assert oauth.requests["register"] == 1
            tokens = await storage.get_tokens(mcp.url)
            assert tokens is not None
            assert tokens.issuer == oauth.issuer


async def test_refused_authorization_raises() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth() as oauth,
            serve_protected(oauth) as mcp,
        ):
            oauth.deny_next_authorization()
            with pytest.raises(AuthorizationError, match="access_denied"):
                async with open_client(mcp.url, auth=_user()):
                    pass
            assert oauth.requests["token"] == 0


async def test_metadata_naming_another_resource_is_refused() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth() as oauth,
            serve_protected(oauth, resource="https://evil.example/mcp") as mcp,
        ):
            with pytest.raises(AuthorizationError, match=r"evil\.example"):
                async with open_client(mcp.url, auth=_user()):
                    pass
            assert oauth.requests["authorize"] == 0
            assert oauth.requests["register"] == 0


async def test_issuer_with_a_path_is_discovered_by_path_insertion() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth(issuer_path="/tenant1", serve_oauth_metadata=False) as oauth,
            serve_protected(oauth) as mcp,
        ):
            async with open_client(mcp.url, auth=_user()) as client:
                assert await client.list_tools()
            assert oauth.requests["openid"] >= 1
            assert oauth.requests["authorize"] == 1


# -- the loopback listener -----------------------------------------------------------------------


async def test_loopback_callback_answers_the_redirect_and_ignores_other_paths() -> None:
    results: list[AuthorizationResponse] = []
    with trio.fail_after(TEST_TIMEOUT):
        async with open_loopback_callback() as loopback, httpx.AsyncClient() as browser:
            assert loopback.redirect_uri.startswith("http://127.0.0.1:")
            async with trio.open_nursery() as nursery:

                async def wait() -> None:
                    results.append(await loopback.callback())

                nursery.start_soon(wait)
                origin = loopback.redirect_uri.removesuffix("/callback")
                stray = await browser.get(origin + "/favicon.ico")
                assert stray.status_code == 404
                back = await browser.get(
                    loopback.redirect_uri, params={"code": "c1", "state": "s1", "iss": "https://as"}
                )
                assert back.status_code == 200
                assert "close this window" in back.text
    assert [(r.code, r.state, r.iss) for r in results] == [("c1", "s1", "https://as")]


async def test_loopback_callback_in_a_whole_flow() -> None:
    # A "browser" that follows the authorization server's redirect to the loopback listener,
    # started the way a real browser is: without waiting for it.
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth() as oauth,
            serve_protected(oauth) as mcp,
            open_loopback_callback() as loopback,
            httpx.AsyncClient(follow_redirects=True) as browser,
            trio.open_nursery() as nursery,
        ):

            async def open_page(url: str) -> None:
                nursery.start_soon(browser.get, url)

            auth = OAuth(
                redirect_uri=loopback.redirect_uri,
                redirect_handler=open_page,
                callback_handler=loopback.callback,
            )
            async with open_client(mcp.url, auth=auth) as client:
                assert await client.list_tools()
            assert oauth.requests["authorize"] == 1
            # The other registered client is the protected server's, for introspection.
            (registered,) = [c for c in oauth.clients.values() if c.redirect_uris]
            assert registered.redirect_uris == (loopback.redirect_uri,)


async def test_requests_meeting_the_same_401_share_one_new_token() -> None:
    storage = MemoryTokenStorage()
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth(refresh_tokens=False) as oauth,
            serve_protected(oauth) as mcp,
        ):
            async with open_client(mcp.url, auth=_user(storage=storage)) as client:
                await client.list_tools()
                tokens = await storage.get_tokens(mcp.url)
                assert tokens is not None
                oauth.revoke(tokens.access_token)
                async with trio.open_nursery() as nursery:
                    for n in range(4):
                        nursery.start_soon(client.call_tool, "add", {"a": n, "b": 1})
            # The first authorization, then one more for all four calls.
            assert oauth.requests["authorize"] == 2
            assert len(_grants(oauth, "authorization_code")) == 2


async def test_credentials_of_another_authorization_server_are_not_offered() -> None:
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth() as oauth,
            serve_protected(oauth) as mcp,
        ):
            registered = oauth.register_client(
                redirect_uris=[REDIRECT], token_endpoint_auth_method="client_secret_basic"
            )
            auth = _user(
                client_id=registered.client_id,
                client_secret=registered.client_secret,
                issuer="https://old-issuer.example",
            )
            with pytest.raises(AuthorizationError, match="not offered"):
                async with open_client(mcp.url, auth=auth):
                    pass
            assert oauth.requests["authorize"] == 0
            assert oauth.requests["token"] == 0


async def test_an_authorization_server_without_metadata_is_an_error() -> None:
    # The protected resource names an authorization server that is not running.
    with trio.fail_after(TEST_TIMEOUT):
        async with serve_protected(OAuthServer(), verifier="jwt") as mcp:
            with pytest.raises(AuthorizationError, match="no authorization server metadata"):
                async with open_client(mcp.url, auth=_user()):
                    pass


def test_dpop_proofs_are_fresh_and_bound_to_request_token_and_nonce() -> None:
    key = _DpopKey()
    token = "access-token"
    first = key.proof("POST", "https://mcp.example/mcp?x=1#f", access_token=token, nonce="n1")
    second = key.proof("POST", "https://mcp.example/mcp", access_token=token)
    header = jwt.get_unverified_header(first)
    assert header["typ"] == "dpop+jwt"
    assert header["alg"] == "ES256"
    assert "d" not in header["jwk"]  # the public key only
    public = jwt.algorithms.ECAlgorithm.from_jwk(json.dumps(header["jwk"]))
    claims = jwt.decode(first, public, algorithms=["ES256"])  # type: ignore[arg-type]
    assert claims["htm"] == "POST"
    assert claims["htu"] == "https://mcp.example/mcp"
    assert claims["nonce"] == "n1"
    digest = hashlib.sha256(token.encode()).digest()
    assert claims["ath"] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    again = jwt.decode(second, public, algorithms=["ES256"])  # type: ignore[arg-type]
    assert "nonce" not in again
    assert again["jti"] != claims["jti"]


async def test_a_401_is_answered_with_the_refresh_token_first() -> None:
    storage = MemoryTokenStorage()
    with trio.fail_after(TEST_TIMEOUT):
        async with (
            serve_oauth() as oauth,
            serve_protected(oauth) as mcp,
        ):
            async with open_client(mcp.url, auth=_user(storage=storage)) as client:
                await client.list_tools()
                tokens = await storage.get_tokens(mcp.url)
                assert tokens is not None
                oauth.revoke(tokens.access_token)
                result = await client.call_tool("add", {"a": 1, "b": 1})
                assert result.structured == {"result": 2}
                renewed = await storage.get_tokens(mcp.url)
                assert renewed is not None
                assert renewed.access_token != tokens.access_token
            assert oauth.requests["authorize"] == 1
            (refresh,) = _grants(oauth, "refresh_token")
            assert refresh["resource"] == mcp.url
