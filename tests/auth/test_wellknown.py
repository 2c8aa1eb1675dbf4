"""What the server's verifiers and the client's flows read alike (`trio_mcp._wellknown`).

Origins and the one GET of a metadata document or key set, over an in-process transport: the
verifiers turn its failures into `TokenVerifierError` (503), the client flow into "no
document here".
"""

from __future__ import annotations

import httpx
import pytest

from trio_mcp._wellknown import get_json, origin, same_origin


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://as.example/tenant/x?q=1#f", "https://as.example"),
        ("http://127.0.0.1:9000/mcp", "http://127.0.0.1:9000"),
        ("https://[::1]:8443", "https://[::1]:8443"),
        ("HTTPS://AS.Example/x", "https://AS.Example"),  # the host as written
    ],
)
def test_origin(url: str, expected: str) -> None:
    assert origin(url) == expected


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("https://mcp.example/mcp", "https://mcp.example/other", True),
        ("HTTPS://MCP.example/mcp", "https://mcp.EXAMPLE", True),  # case aside
        ("https://mcp.example/mcp", "http://mcp.example/mcp", False),
        ("https://mcp.example/mcp", "https://mcp.example:8443/mcp", False),
        ("https://mcp.example/mcp", "https://evil.example/mcp", False),
    ],
)
def test_same_origin(first: str, second: str, same: bool) -> None:
    assert same_origin(first, second) is same


def _serving(status: int, body: bytes) -> httpx.AsyncClient:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept"] == "application/json"
        return httpx.Response(status, content=body, headers={"content-type": "application/json"})

    return httpx.AsyncClient(transport=httpx.MockTransport(answer))


async def test_get_json_returns_the_document_of_a_200() -> None:
    async with _serving(200, b'{"issuer": "https://as.example", "keys": []}') as http:
        assert await get_json(http, "https://as.example/jwks") == {
            "issuer": "https://as.example",
            "keys": [],
        }


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (404, b"{}", "HTTP 404 Not Found"),
        (302, b"{}", "HTTP 302 Found"),
        # RFC 8414 and RFC 9728: a successful response uses 200 OK.
        (203, b"{}", "HTTP 203 Non-Authoritative Information"),
        (200, b"<html>", "Expecting value"),
    ],
)
async def test_get_json_refuses_anything_but_a_200_of_json(
    status: int, body: bytes, reason: str
) -> None:
    async with _serving(status, body) as http:
        with pytest.raises(ValueError, match=reason):
            await get_json(http, "https://as.example/.well-known/oauth-authorization-server")


async def test_get_json_lets_a_network_failure_through() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    async with httpx.AsyncClient(transport=httpx.MockTransport(refuse)) as http:
        with pytest.raises(httpx.ConnectError):
            await get_json(http, "https://as.example/jwks")
