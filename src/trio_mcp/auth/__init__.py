"""The MCP server as an OAuth 2.1 protected resource: token verifiers, metadata, challenges.

`resource` holds what needs no I/O: the `TokenVerifier` protocol, the protected resource
metadata (`ProtectedResource`, RFC 9728), the `WWW-Authenticate` challenges (RFC 6750) and
scope hierarchies; `verifiers` the verifiers (a fixed token, JWTs, introspection). The HTTP
transport's gate (`transports/http/gate`) reads a request's token and answers 401, 403 or 503
with them. The client's side is `trio_mcp.oauth`.
"""
