"""Regression tests for the findings of the security review of the OAuth code.

Each test runs real servers on loopback (the test authorization server of tests/oauth_server.py
and a trio-mcp HTTP server) and asserts what a client sees: audience binding of introspected
tokens, scopes of task, completion and subscription requests, authorization server pinning,
JWKS fetch limits, the loopback listener's state check, challenge escaping, session binding,
and the other hardening rules.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from typing import Any

import httpx
import pytest
import trio

from tests.auth.test_http_auth import SCOPES, Notes, params, protected
from tests.auth.verifiers import verifier_for
from tests.features.test_tasks import meta
from tests.helpers import MODERN
from tests.http_helpers import serve
from tests.oauth_server import OAuthServer, serve_oauth
from tests.stdio_peer import ROOT
from trio_mcp import (
    AuthorizationError,
    AutoRedirect,
    IntrospectionVerifier,
    JwtVerifier,
    MemoryTokenStorage,
    OAuth,
    ProtectedResource,
    Server,
    StaticTokenVerifier,
    http_app,
    open_client,
    open_loopback_callback,
)
from trio_mcp._features.tasks import TaskRecord
from trio_mcp.auth.resource import RESOURCE_METADATA_PATH, TokenVerifierError, challenge
from trio_mcp.auth.verifiers import discover_jwks_url
from trio_mcp.http import HttpOptions
from trio_mcp.oauth.rules import AuthorizationResponse, check_authorization_response

# -- introspection: audience bound by default ----------------------------------------------------


async def test_introspection_without_audience_takes_the_canonical_uri_of_the_metadata() -> None:
    async with serve_oauth(token_format="opaque") as oauth:
        verifier = verifier_for(oauth, "introspection", audience=None)
        resource = "http://mcp.example/mcp"
        md = ProtectedResource(authorization_servers=(oauth.issuer,), resource=resource)
        async with serve(Notes().server(), auth=verifier, resource_metadata=md) as s:
            other = oauth.mint(audience="https://some-other-api.example/", scopes=["mcp"])
            refused = await s.client(authorization=f"Bearer {other}").initialize()
            mine = oauth.mint(audience=resource, scopes=["mcp"])
            accepted = await s.client(authorization=f"Bearer {mine}").initialize()
    assert verifier.audience == resource
    assert refused.status == 401
    assert 'error="invalid_token"' in refused.response.headers["www-authenticate"]
    assert accepted.status == 200


async def test_introspection_without_any_canonical_uri_refuses_to_start() -> None:
    async with serve_oauth(token_format="opaque") as oauth:
        verifier = verifier_for(oauth, "introspection", audience=None)
        md = ProtectedResource(authorization_servers=(oauth.issuer,))
        with pytest.raises(ValueError, match="canonical URI"):
            http_app(Notes().server(), HttpOptions(auth=verifier, resource_metadata=md))
        with pytest.raises(ValueError, match="canonical URI"):
            http_app(Notes().server(), HttpOptions(auth=verifier))


async def test_introspection_any_audience_only_when_asked() -> None:
    async with serve_oauth(token_format="opaque") as oauth:
        verifier = verifier_for(oauth, "introspection", audience=None, allow_any_audience=True)
        md = ProtectedResource(authorization_servers=(oauth.issuer,))
        async with serve(Notes().server(), auth=verifier, resource_metadata=md) as s:
            other = oauth.mint(audience="https://some-other-api.example/", scopes=["mcp"])
            reply = await s.client(authorization=f"Bearer {other}").initialize()
    assert reply.status == 200


async def test_introspection_checks_nbf_and_iss_and_remembers_refusals() -> None:
    async with protected(
        verifier="introspection",
        oauth_knobs={"token_format": "opaque"},
        verifier_options={"leeway": 0},
    ) as p:
        assert isinstance(p.verifier, IntrospectionVerifier)
        p.verifier.issuer = p.oauth.issuer
        early = await p.client(p.token(not_before=600)).initialize()
        foreign = await p.client(p.token(issuer="https://other-as.example")).initialize()
        p.oauth.reset_counts()
        dead = p.token(expires_in=-10)
        replies: list[Any] = [await p.client(dead).initialize() for _ in range(5)]
        introspections = p.oauth.requests["introspect"]
        good = await p.client(p.token()).initialize()
    assert early.status == 401
    assert "nbf" in early.response.headers["www-authenticate"]
    assert foreign.status == 401
    assert "another issuer" in foreign.response.headers["www-authenticate"]
    assert [r.status for r in replies] == [401] * 5
    assert introspections == 1
    assert good.status == 200


# -- scopes of task, completion and subscription requests ----------------------------------------


def _secret_tasks() -> Server:
    server = Server("t")

    @server.tool(task=True, scopes=["secret:read"])
    async def secret() -> str:
        await trio.lowlevel.checkpoint()
        return "the secret"

    return server


async def test_task_requests_need_the_scopes_of_the_tasks_tool() -> None:
    knobs = {"scopes_supported": [*SCOPES, "secret:read"]}
    async with protected(_secret_tasks(), oauth_knobs=knobs) as p:
        owner = p.client(p.token(scopes=["secret:read"]), version=MODERN)
        narrow = p.client(p.token(scopes=["mcp"]), version=MODERN)
        created = await owner.call("secret", {}, **meta())
        task_id = created.last["result"]["taskId"]
        extras: dict[str, dict[str, Any]] = {
            "tasks/get": {},
            "tasks/update": {"inputResponses": {}},
            "tasks/cancel": {},
        }
        reads = {
            method: await narrow.request(method, {"taskId": task_id, **extra, "_meta": meta()})
            for method, extra in extras.items()
        }
        mine = await owner.request("tasks/get", {"taskId": task_id, "_meta": meta()})
    for method, reply in reads.items():
        assert reply.status == 403, method
        header = params(reply.response.headers["www-authenticate"])
        assert header["error"] == "insufficient_scope"
        assert "secret:read" in header["scope"].split()
    assert mine.status == 200
    assert mine.last["result"]["taskId"] == task_id


def test_task_records_keep_their_scopes_and_read_old_records() -> None:
    record = TaskRecord("t", 1.0, 60.0, 1.0, scopes=("a", "b"))
    assert TaskRecord.load(record.dump()).scopes == ("a", "b")
    old = TaskRecord("t", 1.0, 60.0, 1.0).dump()
    assert "scopes" not in old
    assert TaskRecord.load(old).scopes == ()


def _completing() -> Server:
    server = Server("c")

    @server.prompt(scopes=["notes:read"], completions={"title": lambda value: ["Salary review"]})
    def note(title: str) -> str:
        return title

    @server.resource(
        "notes://{title}", scopes=["notes:read"], completions={"title": lambda value: ["t1"]}
    )
    def read(title: str) -> str:
        return title

    return server


async def test_completion_and_subscription_need_the_scopes_of_what_they_name() -> None:
    async with protected(_completing()) as p:
        narrow = p.client(p.token(scopes=["mcp"]))
        assert (await narrow.initialize()).status == 200
        wide = p.client(p.token(scopes=["mcp", "notes:read"]))
        assert (await wide.initialize()).status == 200
        requests: list[tuple[str, dict[str, Any]]] = [
            (
                "completion/complete",
                {
                    "ref": {"type": "ref/prompt", "name": "note"},
                    "argument": {"name": "title", "value": ""},
                },
            ),
            (
                "completion/complete",
                {
                    "ref": {"type": "ref/resource", "uri": "notes://{title}"},
                    "argument": {"name": "title", "value": ""},
                },
            ),
            ("resources/subscribe", {"uri": "notes://secret"}),
            ("resources/unsubscribe", {"uri": "notes://secret"}),
        ]
        refused = [await narrow.request(method, body) for method, body in requests]
        allowed = [await wide.request(method, body) for method, body in requests[:2]]
    for reply in refused:
        assert reply.status == 403
        assert params(reply.response.headers["www-authenticate"])["error"] == "insufficient_scope"
    assert [r.last["result"]["completion"]["values"] for r in allowed] == [
        ["Salary review"],
        ["t1"],
    ]


# -- JWKS fetches: one per interval, however many ask; the keys held survive an outage ----------


async def test_concurrent_unknown_kids_cost_one_key_set_fetch() -> None:
    async with protected(verifier_options={"jwks_min_refetch": 60.0}) as p:
        tokens = [p.token(kid=f"garbage-{i}") for i in range(100)]
        statuses: list[int] = []

        async def one(token: str) -> None:
            statuses.append((await p.client(token).initialize()).status)

        async with trio.open_nursery() as nursery:
            for token in tokens:
                nursery.start_soon(one, token)
        fetched = p.oauth.requests["jwks"]
        good = await p.client(p.token()).initialize()
    assert statuses == [401] * 100
    assert fetched == 1
    assert good.status == 200
    assert p.oauth.requests["jwks"] == 1


async def test_key_set_outage_keeps_the_previous_keys_and_is_not_hammered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    options = {"jwks_ttl": 0.0, "jwks_min_refetch": 0.0, "jwks_grace": 3600.0}
    async with protected(verifier_options=options) as p:
        assert (await p.client(p.token()).initialize()).status == 200
        p.oauth.jwks_down = True
        with caplog.at_level(logging.WARNING, logger="trio_mcp.http"):
            during = await p.client(p.token()).initialize()
        assert "previous keys stay" in caplog.text
        assert during.status == 200
        # Without usable keys (grace over) and the JWKS down, requests get 503, and no new
        # attempt is made within `jwks_min_refetch` of the failed one.
        verifier = p.verifier
        assert isinstance(verifier, JwtVerifier)
        verifier.jwks_grace = 0.0
        verifier.jwks_min_refetch = 60.0
        p.oauth.reset_counts()
        down = [await p.client(p.token()).initialize() for _ in range(5)]
        attempts = p.oauth.requests["jwks"]
    assert [r.status for r in down] == [503] * 5
    assert attempts == 0


# -- JWT and discovery rules ----------------------------------------------------------------------


async def test_dpop_bound_tokens_are_refused_as_bearer() -> None:
    async with protected() as p:
        bound = p.token(claims={"cnf": {"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}})
        reply = await p.client(bound).initialize()
    assert reply.status == 401
    header = params(reply.response.headers["www-authenticate"])
    assert header["error"] == "invalid_token"
    assert header["error_description"] == "DPoP-bound tokens are not accepted"


async def test_at_jwt_typ_is_required_only_when_asked() -> None:
    async with protected(verifier_options={"require_at_jwt_typ": True}) as p:
        plain = await p.client(p.token()).initialize()
        typed = await p.client(p.token(typ="at+jwt")).initialize()
    async with protected() as p:
        lenient = await p.client(p.token()).initialize()
    assert plain.status == 401
    assert "at+jwt" in plain.response.headers["www-authenticate"]
    assert typed.status == 200
    assert lenient.status == 200


async def test_jwks_discovery_refuses_metadata_naming_another_issuer() -> None:
    async with serve_oauth() as oauth:
        assert await discover_jwks_url(oauth.issuer) == oauth.endpoint("jwks")
        # The document at the derived URL names `oauth.issuer`, not this spelling of it.
        with pytest.raises(TokenVerifierError, match="names issuer"):
            await discover_jwks_url(oauth.issuer + "/")


# -- challenges and metadata: escaping, and one canonical URI for both -------------------------


async def test_a_forged_host_cannot_inject_challenge_parameters(
    caplog: pytest.LogCaptureFixture,
) -> None:
    md = ProtectedResource(authorization_servers=("https://as.example",))
    forged = 'evil.example/x", error="invalid_request", error_uri="https://evil.example'
    with caplog.at_level(logging.WARNING, logger="trio_mcp.http"):
        async with serve(
            Notes().server(),
            auth=StaticTokenVerifier("dev-token"),
            resource_metadata=md,
            allowed_hosts=("*",),
        ) as s:
            reply = await s.client(host=forged).initialize()
            metadata = await s.http.get(
                s.base + RESOURCE_METADATA_PATH + "/mcp", headers={"host": forged}
            )
    assert "names no canonical URI" in caplog.text
    assert reply.status == 401
    header = params(reply.response.headers["www-authenticate"])
    assert list(header) == ["resource_metadata"]
    assert header["resource_metadata"] == s.base + RESOURCE_METADATA_PATH + "/mcp"
    assert metadata.json()["resource"] == s.url


def test_challenge_percent_encodes_what_a_quoted_string_cannot_hold() -> None:
    value = challenge(resource_metadata='https://a.example/x", error="y').decode()
    assert value == 'Bearer resource_metadata="https://a.example/x%22,%20error=%22y"'


async def test_challenge_metadata_url_is_served_when_the_audience_path_differs() -> None:
    audience = "https://mcp.example/api/mcp"
    async with protected() as p:
        assert isinstance(p.verifier, JwtVerifier)
        p.verifier.audience = audience  # the endpoint is /mcp
        reply = await p.client().initialize()
        pointed = params(reply.response.headers["www-authenticate"])["resource_metadata"]
        assert pointed == "https://mcp.example" + RESOURCE_METADATA_PATH + "/api/mcp"
        served = await p.served.http.get(p.served.base + RESOURCE_METADATA_PATH + "/api/mcp")
        by_endpoint = await p.served.http.get(p.served.base + RESOURCE_METADATA_PATH + "/mcp")
        ok = await p.client(p.token(audience=audience)).initialize()
    assert reply.status == 401
    assert served.status_code == 200
    assert served.json()["resource"] == audience
    assert by_endpoint.status_code == 200
    assert ok.status == 200


# -- client: a pre-registered client stays with its authorization server -----------------------


def _switch(md: ProtectedResource, verifier: JwtVerifier, to: OAuthServer) -> None:
    """Make the running resource name (and trust) another authorization server."""
    object.__setattr__(md, "authorization_servers", (to.issuer,))
    verifier.issuer, verifier.jwks_url = to.issuer, to.endpoint("jwks")


async def test_a_configured_client_is_bound_to_the_first_authorization_server() -> None:
    async with serve_oauth() as as1, serve_oauth() as as2:
        verifier = JwtVerifier(
            issuer=as1.issuer, audience="http://unset.invalid/mcp", jwks_url=as1.endpoint("jwks")
        )
        md = ProtectedResource(authorization_servers=(as1.issuer,), scopes_supported=SCOPES)
        async with serve(Notes().server(), auth=verifier, resource_metadata=md) as s:
            verifier.audience = s.url
            machine = as1.register_client(
                token_endpoint_auth_method="client_secret_post",
                grant_types=["client_credentials"],
            )
            storage = MemoryTokenStorage()

            def config() -> OAuth:
                return OAuth(
                    grant="client_credentials",
                    client_id=machine.client_id,
                    client_secret=machine.client_secret,
                    token_endpoint_auth_method="client_secret_post",
                    storage=storage,
                )

            async with open_client(s.url, auth=config()) as client:
                assert await client.list_tools()
                _switch(md, verifier, as2)
                with pytest.RaisesGroup(
                    pytest.RaisesExc(AuthorizationError, match=_both(as1, as2)),
                    allow_unwrapped=True,
                    flatten_subgroups=True,
                ):
                    await client.list_tools()
            # A new client with the same storage: the stored tokens' issuer is the binding.
            with pytest.RaisesGroup(
                pytest.RaisesExc(AuthorizationError, match=_both(as1, as2)),
                allow_unwrapped=True,
                flatten_subgroups=True,
            ):
                async with open_client(s.url, auth=config()) as client:
                    await client.list_tools()
    assert [seen.endpoint for seen in as2.log if seen.endpoint == "token"] == []


def _both(first: OAuthServer, second: OAuthServer) -> str:
    return f"{re.escape(second.issuer)}.*{re.escape(first.issuer)}"


# -- client: the authorization response is ours before its error is read ------------------------


def test_an_error_response_with_another_state_is_not_shown() -> None:
    forged = AuthorizationResponse.from_url(
        "http://127.0.0.1/cb?error=access_denied&error_description=log+in+at+https://evil.example"
    )
    check: dict[str, Any] = {"state": "s", "issuer": "https://as", "iss_supported": True}
    with pytest.raises(AuthorizationError) as caught:
        check_authorization_response(forged, **check)
    assert "state" in str(caught.value)
    assert "evil" not in str(caught.value)
    wrong_iss = AuthorizationResponse(state="s", iss="https://evil", error="access_denied")
    with pytest.raises(AuthorizationError, match="RFC 9207"):
        check_authorization_response(wrong_iss, **check)


async def test_loopback_listener_ignores_redirects_with_another_state() -> None:
    results: list[AuthorizationResponse] = []
    statuses: list[int] = []
    async with (
        open_loopback_callback() as loopback,
        httpx.AsyncClient() as browser,
        trio.open_nursery() as nursery,
    ):

        async def wait() -> None:
            results.append(await loopback.callback(state="the-state"))

        nursery.start_soon(wait)
        for query in (
            {"error": "access_denied", "error_description": "log in at https://evil.example"},
            {"code": "stolen", "state": "another"},
            {"code": "c1", "state": "the-state"},
        ):
            statuses.append((await browser.get(loopback.redirect_uri, params=query)).status_code)
    assert statuses == [400, 400, 200]
    assert [(r.code, r.state) for r in results] == [("c1", "the-state")]


async def test_a_whole_flow_through_the_loopback_listener_skips_a_forged_redirect() -> None:
    async with (
        protected() as p,
        open_loopback_callback() as loopback,
        httpx.AsyncClient(follow_redirects=True) as browser,
        trio.open_nursery() as nursery,
    ):
        forged: list[int] = []

        async def forge_then_browse(url: str) -> None:
            # A local page gets there first; the real browser follows once it was answered.
            query = {"error": "access_denied", "error_description": "log in at evil.example"}
            forged.append((await browser.get(loopback.redirect_uri, params=query)).status_code)
            await browser.get(url)

        async def open_page(url: str) -> None:
            nursery.start_soon(forge_then_browse, url)

        auth = OAuth(
            redirect_uri=loopback.redirect_uri,
            redirect_handler=open_page,
            callback_handler=loopback.callback,
        )
        async with open_client(p.served.url, auth=auth) as client:
            tools = await client.list_tools()
    assert forged == [400]
    assert tools


# -- sessions of tokens that name no one ---------------------------------------------------------


async def test_a_token_naming_no_one_binds_the_session_to_itself() -> None:
    anonymous = {"omit": ("iss", "sub", "client_id")}
    async with protected(verifier="introspection", oauth_knobs={"token_format": "opaque"}) as p:
        first, second = p.token(**anonymous), p.token(**anonymous)
        owner = p.client(first)
        assert (await owner.initialize()).status == 200
        other = p.client(second)
        other.session_id = owner.session_id
        hijack = await other.request("tools/list", {})
        mine = await owner.request("tools/list", {})
    assert hijack.status == 404
    assert mine.status == 200


# -- the command line ---------------------------------------------------------------------------


async def test_run_refuses_a_bearer_token_beside_an_issuer_in_one_line() -> None:
    command = [sys.executable, "-m", "trio_mcp", "run", "demo_tools", "--transport", "http"]
    args = ["--auth-issuer", "http://as.test", "--auth-audience", "http://mcp.test/mcp"]
    done = await trio.run_process(
        [*command, *args],
        capture_stderr=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, "TRIO_MCP_BEARER_TOKEN": "dev-token"},
    )
    assert done.returncode == 2
    assert b"Traceback" not in done.stderr
    assert b"TRIO_MCP_BEARER_TOKEN and --auth-issuer exclude each other" in done.stderr


# -- cache hints of lists cut per token ----------------------------------------------------------


async def test_lists_cut_per_token_are_private_to_caches() -> None:
    async with protected() as p:
        scopes_seen = {}
        for scopes in (["mcp"], list(SCOPES)):
            client = p.client(p.token(scopes=scopes), version=MODERN)
            for method in ("tools/list", "prompts/list", "resources/list"):
                reply = await client.request(method, {"_meta": meta()})
                scopes_seen[(tuple(scopes), method)] = reply.last["result"]["cacheScope"]
    async with protected(Notes().server(hide_unauthorized=False)) as p:
        client = p.client(p.token(scopes=["mcp"]), version=MODERN)
        unfiltered = await client.request("tools/list", {"_meta": meta()})
    assert set(scopes_seen.values()) == {"private"}
    assert unfiltered.last["result"]["cacheScope"] == "public"


# -- client: concurrent step-ups share one authorization -----------------------------------------


def _with_secret_tool() -> Server:
    server = Notes().server()

    @server.tool(scopes=["secret:read"], inline=True)
    def secret() -> str:
        return "the secret"

    return server


async def test_concurrent_insufficient_scope_answers_share_one_step_up() -> None:
    knobs = {"scopes_supported": [*SCOPES, "secret:read"]}
    async with protected(_with_secret_tool(), oauth_knobs=knobs) as p:
        redirect = AutoRedirect()
        auth = OAuth(
            redirect_uri="http://127.0.0.1:9/callback",
            redirect_handler=redirect.redirect,
            callback_handler=redirect.callback,
        )
        results: list[Any] = []
        async with open_client(p.served.url, auth=auth) as client:
            assert await client.list_tools()
            assert p.oauth.requests["authorize"] == 1

            async def call() -> None:
                results.append(await client.call_tool("secret", {}))

            async with trio.open_nursery() as nursery:
                for _ in range(5):
                    nursery.start_soon(call)
        authorizations = p.oauth.requests["authorize"]
    assert len(results) == 5
    assert authorizations == 2


# -- client: the legacy /sse endpoint of a protected trio-mcp server ---------------------------


async def test_the_client_authorizes_for_the_legacy_sse_endpoint() -> None:
    async with protected() as p:
        redirect = AutoRedirect()
        auth = OAuth(
            redirect_uri="http://127.0.0.1:9/callback",
            redirect_handler=redirect.redirect,
            callback_handler=redirect.callback,
        )
        async with open_client(p.served.base + "/sse", auth=auth) as client:
            tools = await client.list_tools()
        # The token was asked for the resource the server's metadata names: its MCP endpoint.
        (grant,) = [seen.params for seen in p.oauth.log if seen.endpoint == "token"]
    assert {tool.name for tool in tools} >= {"echo", "whoami"}
    assert grant["resource"] == p.served.url
