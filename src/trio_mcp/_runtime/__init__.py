"""The event loop's side of the library, on trio: everything that runs, waits or is cancelled.

The peer engine both sides share (`peer`), the server (`server`, its sessions `session`, the
connection loop `connection`, the invoker `invoke`, the hub `hub`, listen streams `listening`,
tasks `tasks`, brokers and Redis stores), the client (`client/`), and the option records
(`options`). Transports (`transports/`) are a sibling layer: neither imports the other.
"""
