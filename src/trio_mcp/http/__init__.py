"""trio_mcp.http: the options of the HTTP transports, serving and connecting.

```python
import trio_mcp
from trio_mcp.http import HttpOptions

trio_mcp.run(server, transport="http", options=HttpOptions(stateless=True))
```

- `HttpOptions`: the limits and security settings of `serve_http` and `http_app` (origins
  and hosts accepted, token verification, sessions, body and connection bounds, timeouts,
  event store, metrics).
- `EventStore`, `MemoryEventStore`: where the events of sessions' SSE streams are kept, so
  that a client whose stream broke gets what it missed.
- `RetryPolicy`: how `open_client` retries transient network failures over HTTP.

Serving itself (`serve_http`, `http_app`, `run`) is at the top level, with the server. The
names load on first use: `RetryPolicy` brings in the HTTP links' module and trio (httpx loads
only when a link opens).
"""

from typing import TYPE_CHECKING, Any

from .._exports import lazy_attribute

if TYPE_CHECKING:
    from ..transports.http.client import RetryPolicy
    from ..transports.http.options import HttpOptions
    from ..transports.http.replay import EventStore, MemoryEventStore

_LAZY = {
    "HttpOptions": "..transports.http.options",
    "EventStore": "..transports.http.replay",
    "MemoryEventStore": "..transports.http.replay",
    "RetryPolicy": "..transports.http.client",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, globals(), _LAZY, {}, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = ["EventStore", "HttpOptions", "MemoryEventStore", "RetryPolicy"]
