"""The HTTP transport, server and client side: it moves JSON-RPC messages and knows no tools.

Serving: our accept loop on h11 (`serving`), the ASGI application (`app`, `asgi`) with its
Host and Origin checks (`guard`) and bearer-token gate (`gate`), Streamable HTTP (`streamable`,
its session table `sessions`, request metadata headers `headers`, server-to-client stream
`outbox`, resumption `replay`), legacy HTTP+SSE (`legacy_sse`), and the options
(`options`). The client's links are `client`. Authorization proper (verifiers, metadata, the
OAuth flows) is `trio_mcp.auth` and `trio_mcp.oauth`.
"""
