"""The test authorization server itself (tests/oauth_server.py) behaves as its docstring says."""

from __future__ import annotations

import signal
import subprocess
import sys

import httpx
import jwt
import pytest
import trio

from tests.oauth_server import OAuthServer, serve_oauth
from tests.stdio_peer import ROOT
from tests.timing import scaled

REDIRECT = "http://127.0.0.1:9/callback"
RESOURCE = "http://127.0.0.1:8000/mcp"


def _claims(server: OAuthServer, token: str) -> dict[str, object]:
    key = server.keys[0]
    return dict(
        jwt.decode(token, key.private.public_key(), algorithms=[key.algorithm], audience=RESOURCE)
    )


async def test_metadata_documents_and_jwks() -> None:
    async with serve_oauth(issuer_path="/tenant") as server, httpx.AsyncClient() as http:
        meta = (await http.get(server.metadata_url)).json()
        assert server.metadata_url.endswith("/.well-known/oauth-authorization-server/tenant")
        assert meta["issuer"] == server.issuer == server.base + "/tenant"
        assert meta["code_challenge_methods_supported"] == ["S256"]
        assert meta["registration_endpoint"] == server.issuer + "/register"
        for path in (
            "/tenant/.well-known/openid-configuration",
            "/.well-known/openid-configuration/tenant",
        ):
            openid = (await http.get(server.base + path)).json()
            assert openid["jwks_uri"] == meta["jwks_uri"]
        keys = (await http.get(meta["jwks_uri"])).json()["keys"]
        assert [k["kid"] for k in keys] == [server.keys[0].kid]
        assert keys[0]["kty"] == "RSA"
        assert "d" not in keys[0]  # public only
        assert server.requests == {"metadata": 1, "openid": 2, "jwks": 1}


async def test_missing_metadata_is_404() -> None:
    async with serve_oauth(serve_oauth_metadata=False) as server, httpx.AsyncClient() as http:
        assert (await http.get(server.metadata_url)).status_code == 404
        url = server.base + "/.well-known/openid-configuration"
        assert (await http.get(url)).status_code == 200


async def test_code_flow_with_registration_pkce_refresh_rotation() -> None:
    async with (
        serve_oauth(require_resource=True, algorithm="ES256") as server,
        httpx.AsyncClient() as http,
    ):
        reg = await http.post(
            server.endpoint("register"),
            json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"},
        )
        assert reg.status_code == 201
        client_id = reg.json()["client_id"]
        assert "client_secret" not in reg.json()
        verifier, challenge = server.pkce_pair()
        common = {"client_id": client_id, "redirect_uri": REDIRECT}
        back = await server.authorize(
            http,
            **common,
            response_type="code",
            code_challenge=challenge,
            code_challenge_method="S256",
            state="st8",
            scope="mcp notes:read",
            resource=RESOURCE,
        )
        assert back["state"] == "st8"
        assert back["iss"] == server.issuer
        form = {**common, "grant_type": "authorization_code", "code": back["code"]}
        bad = await http.post(server.endpoint("token"), data={**form, "code_verifier": "x"})
        assert bad.json()["error"] == "invalid_grant"  # and the code is now spent
        assert (await http.post(server.endpoint("token"), data=form)).status_code == 400

        back = await server.authorize(
            http,
            **common,
            response_type="code",
            code_challenge=challenge,
            code_challenge_method="S256",
            resource=RESOURCE,
        )
        form = {**form, "code": back["code"], "code_verifier": verifier, "resource": RESOURCE}
        tokens = (await http.post(server.endpoint("token"), data=form)).json()
        claims = _claims(server, tokens["access_token"])
        assert claims["aud"] == RESOURCE
        assert claims["scope"] == "mcp"
        assert claims["iss"] == server.issuer
        assert jwt.get_unverified_header(tokens["access_token"])["alg"] == "ES256"

        refresh = {"grant_type": "refresh_token", "client_id": client_id}
        first = tokens["refresh_token"]
        again = await http.post(server.endpoint("token"), data={**refresh, "refresh_token": first})
        assert again.status_code == 200
        assert again.json()["refresh_token"] != first
        reused = await http.post(server.endpoint("token"), data={**refresh, "refresh_token": first})
        assert reused.json()["error"] == "invalid_grant"


async def test_authorization_errors() -> None:
    async with serve_oauth(require_resource=True) as server, httpx.AsyncClient() as http:
        client = server.register_client(redirect_uris=[REDIRECT])
        _, challenge = server.pkce_pair()
        base = {"client_id": client.client_id, "response_type": "code", "state": "s"}
        pkce = {"code_challenge": challenge, "code_challenge_method": "S256"}
        wrong_uri = await http.get(server.authorize_url(**base, **pkce, redirect_uri="http://x/"))
        assert wrong_uri.status_code == 400
        cases = [
            ({"redirect_uri": REDIRECT, "resource": RESOURCE}, "invalid_request"),  # no PKCE
            ({**pkce, "redirect_uri": REDIRECT}, "invalid_target"),  # no resource
            (
                {**pkce, "redirect_uri": REDIRECT, "resource": RESOURCE, "scope": "nope"},
                "invalid_scope",
            ),
        ]
        for extra, error in cases:
            back = await server.authorize(http, **base, **extra)
            assert back["error"] == error
            assert back["state"] == "s"
        server.deny_next_authorization()
        back = await server.authorize(
            http, **base, **pkce, redirect_uri=REDIRECT, resource=RESOURCE
        )
        assert back["error"] == "access_denied"


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
async def test_client_credentials_and_introspection(method: str) -> None:
    async with serve_oauth() as server, httpx.AsyncClient() as http:
        client = server.register_client(
            token_endpoint_auth_method=method, grant_types=["client_credentials"]
        )
        secret = client.client_secret
        assert secret is not None
        form = {"grant_type": "client_credentials", "scope": "notes:read", "resource": RESOURCE}
        if method == "client_secret_basic":
            auth: httpx.BasicAuth | httpx._client.UseClientDefault = httpx.BasicAuth(
                client.client_id, secret
            )
        else:
            auth = httpx.USE_CLIENT_DEFAULT
            form.update(client_id=client.client_id, client_secret=secret)
        answer = await http.post(server.endpoint("token"), data=form, auth=auth)
        assert answer.status_code == 200, answer.text
        token = answer.json()["access_token"]
        assert "refresh_token" not in answer.json()
        assert _claims(server, token)["sub"] == client.client_id

        wrong = await http.post(
            server.endpoint("token"),
            data={**form, "client_secret": "x", "client_id": client.client_id},
        )
        assert wrong.status_code == 401
        assert wrong.json()["error"] == "invalid_client"

        rs = server.register_client(token_endpoint_auth_method="client_secret_basic")
        assert rs.client_secret is not None
        rs_auth = httpx.BasicAuth(rs.client_id, rs.client_secret)
        seen = (
            await http.post(server.endpoint("introspect"), data={"token": token}, auth=rs_auth)
        ).json()
        assert seen["active"] is True
        assert seen["scope"] == "notes:read"
        assert seen["aud"] == RESOURCE
        no_auth = await http.post(server.endpoint("introspect"), data={"token": token})
        assert no_auth.status_code == 401
        server.revoke(token)
        seen = (
            await http.post(server.endpoint("introspect"), data={"token": token}, auth=rs_auth)
        ).json()
        assert seen == {"active": False}


async def test_mint_and_rotate() -> None:
    async with serve_oauth() as server:
        old_kid = server.keys[0].kid
        expired = server.mint(expires_in=-60, audience=RESOURCE)
        with pytest.raises(jwt.ExpiredSignatureError):
            _claims(server, expired)
        assert server.introspect(expired) == {"active": False}
        new_kid = server.rotate_key()
        assert [k.kid for k in server.keys] == [new_kid, old_kid]
        token = server.mint(audience=RESOURCE, scopes=["admin"], claims={"extra": 1})
        assert jwt.get_unverified_header(token)["kid"] == new_kid
        assert _claims(server, token)["extra"] == 1
        forged = server.mint(audience=RESOURCE, unpublished_key=True)
        assert server.introspect(forged) == {"active": False}
        later = server.mint(audience=RESOURCE, not_before=300)
        assert server.introspect(later) == {"active": False}  # not yet valid
        server.rotate_key(keep_old=False)
        assert len(server.jwks()["keys"]) == 1


async def test_opaque_tokens() -> None:
    async with serve_oauth(token_format="opaque") as server:
        token = server.mint(scopes=["mcp"])
        assert token.count(".") == 0
        assert server.introspect(token)["scope"] == "mcp"


async def test_runs_as_a_program_for_development() -> None:
    # `python tests/oauth_server.py`: it says its issuer first, serves its metadata there, names
    # the command that puts the demo tools behind it, and stops at Ctrl-C (SIGINT).
    command = [sys.executable, str(ROOT / "tests" / "oauth_server.py"), "--port", "0"]
    process = await trio.lowlevel.open_process(
        [*command, "--scopes", "mcp", "notes:write", "--mcp-port", "8123"],
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdout is not None
    try:
        with trio.fail_after(scaled(60)):
            printed = b""
            while b"(Ctrl-C stops it)\n" not in printed:
                chunk = await process.stdout.receive_some()
                assert chunk, printed
                printed += chunk
            first, *rest = printed.decode().splitlines()
            assert first.startswith("issuer: http://127.0.0.1:")
            issuer = first.removeprefix("issuer: ")
            async with httpx.AsyncClient() as http:
                meta = (await http.get(f"{issuer}/.well-known/oauth-authorization-server")).json()
            assert meta["issuer"] == issuer
            assert meta["scopes_supported"] == ["mcp", "notes:write"]
            assert (
                "  trio-mcp run demo_tools --transport http --port 8123 --auth-issuer "
                f"{issuer} --auth-audience http://127.0.0.1:8123/mcp --auth-scopes mcp"
            ) in rest
            process.send_signal(signal.SIGINT)
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
