"""The server as an OAuth 2.1 protected resource, against a real authorization server.

Every test runs the test authorization server (tests/oauth_server.py) and a trio-mcp HTTP
server on loopback, and speaks to both with httpx: 401 and 403 challenges and their exact
`WWW-Authenticate` parameters, JWT checks (expiry, audience, issuer, signature, nbf, leeway),
key rotation and JWKS caching, introspection, per-tool/resource/prompt scopes, listing,
`ctx.auth`, the RFC 9728 metadata, and the GET stream, DELETE and legacy SSE endpoints.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from mcp import Client as SdkClient
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from tests.auth.verifiers import verifier_for
from tests.http_helpers import Served, parse_sse, serve
from tests.oauth_server import OAuthServer, serve_oauth
from trio_mcp import (
    AuthInfo,
    Context,
    JwtVerifier,
    ProtectedResource,
    Server,
    StaticTokenVerifier,
    TokenVerifier,
)

SCOPES = ("mcp", "notes:read", "notes:write")


@dataclass
class Notes:
    """A server whose tools, resource and prompt need scopes; `ran` records every body run."""

    ran: list[str] = field(default_factory=list)
    seen: list[AuthInfo | None] = field(default_factory=list)

    def server(self, **options: Any) -> Server:
        server = Server("notes", **options)

        @server.tool(inline=True)
        def echo(text: str) -> str:
            """Needs no scope of its own."""
            self.ran.append("echo")
            return text

        @server.tool(scopes=["notes:write"])
        def write_note(text: str) -> str:
            """Needs notes:write."""
            self.ran.append("write_note")
            return "saved " + text

        @server.tool(scopes=["notes:read"], inline=True)
        def read_notes() -> list[str]:
            """Needs notes:read."""
            self.ran.append("read_notes")
            return ["one"]

        @server.tool
        async def whoami(ctx: Context) -> dict[str, Any]:
            """What the tool learns of its caller."""
            self.seen.append(ctx.auth)
            auth = ctx.auth
            if auth is None:
                return {"auth": None}
            return {
                "subject": auth.subject,
                "client_id": auth.client_id,
                "scopes": sorted(auth.scopes),
                "audience": list(auth.audience),
                "issuer": auth.issuer,
                "jti": auth.claims.get("jti") is not None,
            }

        @server.resource("notes://all", scopes=["notes:read"])
        def all_notes() -> str:
            self.ran.append("all_notes")
            return "one"

        @server.resource("notes://open")
        def open_notes() -> str:
            return "open"

        @server.prompt(scopes=["notes:write"])
        def draft(topic: str) -> str:
            """Draft a note."""
            self.ran.append("draft")
            return f"Write about {topic}"

        return server


@dataclass
class Protected:
    oauth: OAuthServer
    served: Served
    verifier: TokenVerifier

    @property
    def metadata_url(self) -> str:
        return self.served.base + "/.well-known/oauth-protected-resource/mcp"

    def token(self, **claims: Any) -> str:
        """A token for this server (its audience) with `SCOPES` unless told otherwise."""
        claims.setdefault("audience", self.served.url)
        claims.setdefault("scopes", SCOPES)
        return self.oauth.mint(**claims)

    def client(self, token: str | None = None, **headers: str) -> Any:
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        return self.served.client(**headers)


@asynccontextmanager
async def protected(
    server: Server | None = None,
    *,
    verifier: Literal["jwt", "introspection"] = "jwt",
    oauth_knobs: dict[str, Any] | None = None,
    verifier_options: dict[str, Any] | None = None,
    **options: Any,
) -> AsyncIterator[Protected]:
    """A notes server behind a `JwtVerifier` (or an introspection one) of a live test AS."""
    async with serve_oauth(**(oauth_knobs or {})) as oauth:
        # The audience is the served URL, known once the port is bound: set just below.
        made: Any = verifier_for(oauth, verifier, **(verifier_options or {}))
        metadata = ProtectedResource(
            authorization_servers=(oauth.issuer,),
            scopes_supported=SCOPES,
            resource_name="Notes",
        )
        options.setdefault("auth", made)
        async with serve(server or Notes().server(), resource_metadata=metadata, **options) as s:
            if verifier_options is None or "audience" not in verifier_options:
                made.audience = s.url
            yield Protected(oauth, s, made)


def params(header: str) -> dict[str, str]:
    """The auth-params of a `Bearer` challenge, asserting its shape."""
    scheme, _, rest = header.partition(" ")
    assert scheme == "Bearer", header
    found: dict[str, str] = {}
    for part in rest.split(", "):
        name, _, value = part.partition("=")
        assert value.startswith('"'), header
        assert value.endswith('"'), header
        found[name] = value[1:-1]
    return found


# -- 401 -----------------------------------------------------------------------------------------


async def test_no_token_is_401_naming_the_metadata_and_the_scopes_every_request_needs() -> None:
    async with protected(Notes().server(required_scopes=["mcp"])) as p:
        reply = await p.client().initialize()
    assert reply.status == 401
    assert reply.response.headers["www-authenticate"] == (
        f'Bearer scope="mcp", resource_metadata="{p.metadata_url}"'
    )
    assert reply.response.json()["error"]["message"] == "Missing bearer token"


async def test_no_token_without_server_scopes_names_no_scope() -> None:
    async with protected() as p:
        reply = await p.client().initialize()
        basic = await p.served.client(authorization="Basic dXNlcjpwdw==").initialize()
    for answer in (reply, basic):
        assert answer.status == 401
        assert answer.response.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{p.metadata_url}"'
        )


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"expires_in": -120}, "The access token expired"),
        ({"audience": "http://other.example/mcp"}, "The access token is not for this server"),
        ({"issuer": "http://evil.example"}, "The access token is from another issuer"),
        ({"unpublished_key": True}, "The access token's signature does not verify"),
        ({"not_before": 120}, "The access token is not valid yet (nbf)"),
        ({"omit": ["exp"]}, "The access token lacks the exp claim"),
    ],
)
async def test_a_bad_token_is_401_invalid_token(claims: dict[str, Any], reason: str) -> None:
    async with protected() as p:
        reply = await p.client(p.token(**claims)).initialize()
    assert reply.status == 401
    found = params(reply.response.headers["www-authenticate"])
    assert found["error"] == "invalid_token"
    assert found["error_description"].startswith(reason)
    assert found["resource_metadata"] == p.metadata_url
    assert "scope" not in found


async def test_garbage_and_foreign_algorithms_are_401() -> None:
    async with protected(oauth_knobs={"algorithm": "ES256"}) as p:
        garbage = await p.client("not-a-jwt").initialize()
        ok = await p.client(p.token()).initialize()
    assert garbage.status == 401
    assert (
        "not a well-formed JWT"
        in params(garbage.response.headers["www-authenticate"])["error_description"]
    )
    assert ok.status == 200  # ES256 is accepted by default


async def test_leeway_is_honoured_for_exp_and_nbf() -> None:
    async with protected(verifier_options={"leeway": 60}) as p:
        late = await p.client(p.token(expires_in=-20)).initialize()
        early = await p.client(p.token(not_before=20)).initialize()
        too_late = await p.client(p.token(expires_in=-200)).initialize()
    assert late.status == 200
    assert early.status == 200
    assert too_late.status == 401


# -- keys ----------------------------------------------------------------------------------------


async def test_the_jwks_is_fetched_once_not_per_request() -> None:
    async with protected() as p:
        client = p.client(p.token())
        assert (await client.initialize()).status == 200
        for _ in range(5):
            assert (await client.call("echo", {"text": "hi"})).status == 200
        other = await p.client(p.token(subject="someone-else")).initialize()
    assert other.status == 200
    assert p.oauth.requests["jwks"] == 1


async def test_a_rotated_key_verifies_after_one_refetch() -> None:
    async with protected(verifier_options={"jwks_min_refetch": 0}) as p:
        assert (await p.client(p.token()).initialize()).status == 200
        p.oauth.rotate_key()
        rotated = await p.client(p.token()).initialize()
        again = await p.client(p.token()).initialize()
        p.oauth.rotate_key(keep_old=False)
        retired = p.token()
        p.oauth.rotate_key(keep_old=False)  # the key `retired` was signed with is gone
        refused = await p.client(retired).initialize()
    assert rotated.status == 200
    assert again.status == 200
    assert refused.status == 401
    assert (
        "unknown key" in params(refused.response.headers["www-authenticate"])["error_description"]
    )
    # First fetch, the rotation, the retired key's kid, and the last one's.
    assert p.oauth.requests["jwks"] == 3


async def test_unknown_kids_refetch_at_most_once_per_interval() -> None:
    async with protected(verifier_options={"jwks_min_refetch": 3600}) as p:
        assert (await p.client(p.token()).initialize()).status == 200
        for n in range(3):
            forged = p.oauth.mint(audience=p.served.url, kid=f"unknown-{n}")
            assert (await p.client(forged).initialize()).status == 401
    assert p.oauth.requests["jwks"] == 1


async def test_the_jwks_url_is_discovered_from_the_issuer() -> None:
    async with protected(oauth_knobs={"issuer_path": "/tenant"}) as p:
        verifier = JwtVerifier(issuer=p.oauth.issuer, audience=p.served.url)
        info = await verifier.verify(p.token())
    assert info is not None
    assert info.issuer == p.oauth.issuer
    assert p.oauth.requests["metadata"] == 1  # RFC 8414, path inserted


async def test_an_unreachable_jwks_is_503_not_401() -> None:
    async with protected(verifier_options={"jwks_url": "http://127.0.0.1:9/jwks"}) as p:
        reply = await p.client(p.token()).initialize()
    assert reply.status == 503
    assert "www-authenticate" not in reply.response.headers


# -- 403 and scopes ------------------------------------------------------------------------------


async def test_a_tool_needing_a_scope_the_token_lacks_is_403_and_never_runs() -> None:
    notes = Notes()
    async with protected(notes.server()) as p:
        client = p.client(p.token(scopes=["mcp", "notes:read"]))
        assert (await client.initialize()).status == 200
        refused = await client.call("write_note", {"text": "x"})
        allowed = await client.call("read_notes")
        writer = p.client(p.token(scopes=["notes:write"]))
        assert (await writer.initialize()).status == 200
        written = await writer.call("write_note", {"text": "x"})
    assert refused.status == 403
    found = params(refused.response.headers["www-authenticate"])
    assert found["error"] == "insufficient_scope"
    # The granted scopes and the missing one (the spec's recommended approach).
    assert found["scope"] == "mcp notes:read notes:write"
    assert found["resource_metadata"] == p.metadata_url
    assert "notes:write" in found["error_description"]
    assert allowed.status == 200
    assert written.result["content"][0]["text"] == "saved x"
    assert notes.ran == ["read_notes", "write_note"]


async def test_resources_and_prompts_need_their_scopes() -> None:
    notes = Notes()
    async with protected(notes.server()) as p:
        client = p.client(p.token(scopes=["mcp"]))
        assert (await client.initialize()).status == 200
        read = await client.request("resources/read", {"uri": "notes://all"})
        opened = await client.request("resources/read", {"uri": "notes://open"})
        got = await client.request("prompts/get", {"name": "draft", "arguments": {"topic": "t"}})
    assert read.status == 403
    assert params(read.response.headers["www-authenticate"])["scope"] == "mcp notes:read"
    assert opened.status == 200
    assert got.status == 403
    assert params(got.response.headers["www-authenticate"])["scope"] == "mcp notes:write"
    assert notes.ran == []


async def test_server_wide_required_scopes_are_403_without_them() -> None:
    async with protected(Notes().server(required_scopes=["mcp"])) as p:
        refused = await p.client(p.token(scopes=["notes:read"])).initialize()
        accepted = await p.client(p.token(scopes=["mcp"])).initialize()
    assert refused.status == 403
    assert params(refused.response.headers["www-authenticate"])["scope"] == "notes:read mcp"
    assert accepted.status == 200


async def test_verifier_required_scopes_are_403_without_them() -> None:
    async with protected(verifier_options={"required_scopes": ["notes:read"]}) as p:
        refused = await p.client(p.token(scopes=["mcp"])).initialize()
    assert refused.status == 403
    assert params(refused.response.headers["www-authenticate"])["error"] == "insufficient_scope"


async def _names(client: Any, method: str, key: str) -> list[str]:
    reply = await client.request(method)
    assert reply.status == 200, reply.response.text
    return [item.get("name") for item in reply.result[key]]


async def test_listing_hides_what_the_token_cannot_use() -> None:
    async with protected() as p:
        narrow = p.client(p.token(scopes=["mcp"]))
        await narrow.initialize()
        tools = await _names(narrow, "tools/list", "tools")
        resources = await _names(narrow, "resources/list", "resources")
        prompts = await _names(narrow, "prompts/list", "prompts")
        wide = p.client(p.token())
        await wide.initialize()
        all_tools = await _names(wide, "tools/list", "tools")
    assert tools == ["echo", "whoami"]
    assert resources == ["open_notes"]
    assert prompts == []
    assert all_tools == ["echo", "write_note", "read_notes", "whoami"]


async def test_listing_shows_everything_when_told_to() -> None:
    async with protected(Notes().server(hide_unauthorized=False)) as p:
        narrow = p.client(p.token(scopes=["mcp"]))
        await narrow.initialize()
        tools = await _names(narrow, "tools/list", "tools")
        refused = await narrow.call("write_note", {"text": "x"})
    assert tools == ["echo", "write_note", "read_notes", "whoami"]
    assert refused.status == 403


# -- ctx.auth ------------------------------------------------------------------------------------


async def test_ctx_auth_reaches_the_tool() -> None:
    notes = Notes()
    async with protected(notes.server()) as p:
        client = p.client(p.token(scopes=["mcp", "notes:read"], client_id="app-7"))
        await client.initialize()
        reply = await client.call("whoami")
    assert reply.result["structuredContent"] == {
        "subject": "user-1",
        "client_id": "app-7",
        "scopes": ["mcp", "notes:read"],
        "audience": [p.served.url],
        "issuer": p.oauth.issuer,
        "jti": True,
    }
    (info,) = notes.seen
    assert info is not None
    assert not hasattr(info, "token")  # the token itself never reaches a tool


async def test_ctx_auth_is_none_without_verification() -> None:
    notes = Notes()
    async with serve(notes.server()) as served:
        client = served.client()
        await client.initialize()
        reply = await client.call("whoami")
    assert reply.result["structuredContent"] == {"auth": None}


async def test_a_token_never_reaches_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with protected() as p:
        good, bad = p.token(), p.token(expires_in=-300)
        client = p.client(good)
        await client.initialize()
        await client.call("write_note", {"text": "x"})
        reply = await p.client(bad).initialize()
    assert reply.status == 401
    assert good not in reply.response.text
    assert bad not in reply.response.text
    assert bad not in reply.response.headers["www-authenticate"]
    for record in caplog.records:
        assert good not in record.getMessage()
        assert bad not in record.getMessage()


# -- metadata ------------------------------------------------------------------------------------


async def test_metadata_is_served_at_both_paths_to_anyone() -> None:
    async with protected() as p:
        answers = [
            await p.served.http.get(p.served.base + path, headers={"origin": "http://evil.test"})
            for path in (
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/mcp",
            )
        ]
        preflight = await p.served.http.options(p.metadata_url)
        post = await p.served.http.post(p.metadata_url)
    for answer in answers:
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/json"
        assert answer.headers["access-control-allow-origin"] == "*"
        assert answer.json() == {
            "resource": p.served.url,
            "authorization_servers": [p.oauth.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": list(SCOPES),
            "resource_name": "Notes",
        }
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert post.status_code == 405


async def test_a_configured_canonical_uri_is_the_resource() -> None:
    metadata = ProtectedResource(
        authorization_servers=("https://as.example",), resource="https://mcp.example.com/api/mcp"
    )
    async with serve(auth=StaticTokenVerifier("t"), resource_metadata=metadata) as served:
        doc = await served.http.get(served.base + "/.well-known/oauth-protected-resource/api/mcp")
        reply = await served.client().initialize()
    assert doc.json()["resource"] == "https://mcp.example.com/api/mcp"
    assert reply.response.headers["www-authenticate"] == (
        'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource'
        '/api/mcp"'
    )


# -- every endpoint ------------------------------------------------------------------------------


async def test_get_stream_and_delete_need_the_token() -> None:
    async with protected() as p:
        client = p.client(p.token())
        await client.initialize()
        sid = client.session_id
        assert sid is not None
        version = {"mcp-session-id": sid, "mcp-protocol-version": client.version}
        anonymous_get = await p.served.http.get(
            p.served.url, headers={**version, "accept": "text/event-stream"}
        )
        anonymous_delete = await p.served.http.delete(p.served.url, headers=version)
        auth = {"authorization": f"Bearer {p.token()}"}
        async with p.served.http.stream(
            "GET", p.served.url, headers={**version, **auth, "accept": "text/event-stream"}
        ) as stream:
            opened = stream.status_code
        deleted = await p.served.http.delete(p.served.url, headers={**version, **auth})
    assert anonymous_get.status_code == 401
    assert anonymous_delete.status_code == 401
    assert opened == 200
    assert deleted.status_code == 204


async def test_the_legacy_sse_transport_is_protected() -> None:
    notes = Notes()
    async with protected(notes.server()) as p:
        http = p.served.http
        anonymous = await http.get(p.served.base + "/sse")
        token = p.token(scopes=["mcp"])
        auth = {"authorization": f"Bearer {token}"}
        async with http.stream("GET", p.served.base + "/sse", headers=auth) as stream:
            assert stream.status_code == 200
            lines = stream.aiter_lines()
            endpoint = ""
            async for line in lines:
                if line.startswith("data: "):
                    endpoint = line.removeprefix("data: ")
                    break
            url = p.served.base + endpoint
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "write_note", "arguments": {"text": "x"}},
            }
            unauthenticated = await http.post(url, json=call)
            refused = await http.post(url, json=call, headers=auth)
    assert anonymous.status_code == 401
    assert unauthenticated.status_code == 401
    assert refused.status_code == 403
    assert params(refused.headers["www-authenticate"])["error"] == "insufficient_scope"
    assert notes.ran == []


async def test_the_2026_revision_is_protected_too() -> None:
    async with protected() as p:
        client = p.served.client("2026-07-28", authorization=f"Bearer {p.token(scopes=['mcp'])}")
        message = client.make_request(
            "tools/call",
            {
                "name": "write_note",
                "arguments": {"text": "x"},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
            },
        )
        refused = await client.post(message)
    assert refused.status == 403


# -- introspection -------------------------------------------------------------------------------


async def test_introspection_accepts_active_tokens_and_caches_them() -> None:
    async with protected(verifier="introspection", oauth_knobs={"token_format": "opaque"}) as p:
        token = p.token()
        client = p.client(token)
        assert (await client.initialize()).status == 200
        reply = await client.call("whoami")
        assert (await client.call("echo", {"text": "x"})).status == 200
    assert reply.result["structuredContent"]["scopes"] == list(SCOPES)
    assert p.oauth.requests["introspect"] == 1  # cached after the first


async def test_introspection_refuses_inactive_and_foreign_tokens() -> None:
    async with protected(verifier="introspection", verifier_options={"cache_seconds": 0}) as p:
        revoked = p.token()
        p.oauth.revoke(revoked)
        inactive = await p.client(revoked).initialize()
        foreign = await p.client(p.token(audience="http://other.example/mcp")).initialize()
        good = p.token()
        ok = await p.client(good).initialize()
        p.oauth.revoke(good)
        later = await p.client(good).initialize()
    for refused, reason in (
        (inactive, "not active"),
        (foreign, "not for this server"),
        (later, "not active"),
    ):
        assert refused.status == 401
        assert reason in params(refused.response.headers["www-authenticate"])["error_description"]
    assert ok.status == 200


# -- static tokens -------------------------------------------------------------------------------


async def test_a_static_token_verifier_grants_its_scopes() -> None:
    verifier = StaticTokenVerifier("dev-token", scopes=["notes:read"], subject="dev")
    async with serve(Notes().server(), auth=verifier) as served:
        client = served.client(authorization="Bearer dev-token")
        await client.initialize()
        read = await client.call("read_notes")
        write = await client.call("write_note", {"text": "x"})
        wrong = await served.client(authorization="Bearer nope").initialize()
    assert read.status == 200
    assert write.status == 403
    assert "resource_metadata" not in write.response.headers["www-authenticate"]
    assert wrong.status == 401
    assert "dev-token" not in repr(verifier)


# -- a streamed answer --------------------------------------------------------------


async def test_an_sse_answer_of_a_protected_call_is_ordinary() -> None:
    async with protected() as p:
        client = p.client(p.token())
        await client.initialize()
        message = client.make_request("tools/call", {"name": "whoami", "arguments": {}})
        response = await p.served.http.post(
            p.served.url,
            headers=client.headers(accept="text/event-stream, application/json"),
            content=json.dumps(message),
        )
    assert response.status_code == 200
    kind = response.headers["content-type"].split(";")[0]
    answer = parse_sse(response.text)[-1] if kind == "text/event-stream" else response.json()
    assert answer["result"]["structuredContent"]["subject"] == "user-1"


# -- the official SDK's client -------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:ping is removed as of 2026-07-28")
@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_the_official_sdk_client_connects_with_a_token_and_is_refused_without() -> None:
    notes = Notes()
    async with protected(notes.server()) as p:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {p.token()}"})
        transport = streamable_http_client(p.served.url, http_client=http)
        async with http, SdkClient(transport, mode="legacy") as client:
            tools = await client.list_tools()
            result = await client.call_tool("whoami", {})
        anonymous = SdkClient(streamable_http_client(p.served.url), mode="legacy")
        with pytest.raises(ExceptionGroup) as refused:
            async with anonymous as client:
                await client.list_tools()
    assert [tool.name for tool in tools.tools] == ["echo", "write_note", "read_notes", "whoami"]
    assert result.structured_content is not None
    assert result.structured_content["subject"] == "user-1"
    # The SDK surfaces the JSON-RPC error body of the 401.
    assert refused.group_contains(MCPError, match="bearer token")


async def test_a_session_belongs_to_the_user_who_opened_it() -> None:
    async with protected() as p:
        owner = p.client(p.token(subject="alice"))
        assert (await owner.initialize()).status == 200
        sid = owner.session_id
        assert sid is not None
        thief = p.client(p.token(subject="mallory"), **{"mcp-session-id": sid})
        thief.session_id = sid
        stolen = await thief.call("echo", {"text": "x"})
        stolen_delete = await thief.delete()
        refreshed = p.client(p.token(subject="alice"))
        refreshed.session_id = sid
        kept = await refreshed.call("echo", {"text": "x"})
    assert stolen.status == 404
    assert stolen_delete.status_code == 404
    assert kept.status == 200


async def test_a_broader_scope_implies_the_narrower_ones() -> None:
    notes = Notes()
    hierarchy = {"notes:admin": ("notes:write",), "notes:write": ("notes:read",)}
    async with protected(notes.server(), scope_hierarchy=hierarchy) as p:
        admin = p.client(p.token(scopes=["mcp", "notes:admin"]))
        await admin.initialize()
        tools = await _names(admin, "tools/list", "tools")
        written = await admin.call("write_note", {"text": "x"})
        read = await admin.call("read_notes")
        who = await admin.call("whoami")
    assert tools == ["echo", "write_note", "read_notes", "whoami"]
    assert written.status == 200
    assert read.status == 200
    assert who.result["structuredContent"]["scopes"] == [
        "mcp",
        "notes:admin",
        "notes:read",
        "notes:write",
    ]


async def test_the_audience_scheme_and_host_are_case_insensitive() -> None:
    async with protected() as p:
        shouted = p.served.url.replace("http://127.0.0.1", "HTTP://127.0.0.1")
        upper = await p.client(p.token(audience=shouted)).initialize()
        path = await p.client(p.token(audience=p.served.url.upper())).initialize()
        many = await p.client(
            p.token(audience=["http://other.example/mcp", p.served.url])
        ).initialize()
    assert upper.status == 200
    assert path.status == 401  # the path is case-sensitive
    assert many.status == 200
