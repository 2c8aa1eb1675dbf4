"""The wire and the sessions, sans-IO: JSON-RPC, framing, revisions, both sides' session state.

Nothing here imports trio, sockets or httpx: the runtimes above feed these modules what arrived
and send what they return, so every rule of the protocol can be tested without a connection.
"""
