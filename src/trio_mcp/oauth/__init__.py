"""The MCP client as an OAuth 2.1 client: how it gets the tokens an HTTP server asks for.

`rules` holds the configuration (`OAuth`), the records and the rules that need no I/O
(discovery order, the resource and issuer checks, scope selection, PKCE); `flow` runs them on
httpx for every request of an HTTP link (discovery, registration, the grants, the 401 and 403
handling); `storage` keeps tokens in a file across runs; `loopback` is the user's way through
an authorization (a browser, and a listener on 127.0.0.1 for the redirect back).
The server's side is `trio_mcp.auth`.
"""
