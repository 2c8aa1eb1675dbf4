"""trio_mcp.tasks: calls that run as tasks (the tasks extension, SEP-2663), both sides.

```python
from trio_mcp import Server
from trio_mcp.tasks import RedisTaskStore, TaskSupport

server = Server("reports", task_store=RedisTaskStore("redis://localhost"))

@server.tool(task=TaskSupport(required=True))
async def report(topic: str) -> str: ...
```

- `TaskSupport`: how a tool runs as a task (`@tool(task=...)`).
- `TaskStore`: where a server keeps its tasks; `MemoryTaskStore` (the default, in this
  process) and `RedisTaskStore` (shared by the workers of a fleet).
- `TaskRecord`: one task as a store keeps it.
- `TaskInfo`: a task as a client sees it (`Client.call_tool_as_task`, `get_task`, ...).

`TaskCancelledError`, what a call whose task was cancelled raises, is with the other
exceptions at the top level. `RedisTaskStore` loads on first use (it needs trio).
"""

from typing import TYPE_CHECKING, Any

from .._exports import lazy_attribute, publish
from .._features.tasks import MemoryTaskStore, TaskRecord, TaskStore, TaskSupport

if TYPE_CHECKING:
    from .._core.client_records import TaskInfo
    from .._runtime.redis_tasks import RedisTaskStore

_LAZY = {
    "RedisTaskStore": ".._runtime.redis_tasks",
    "TaskInfo": ".._core.client_records",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, globals(), _LAZY, {}, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "MemoryTaskStore",
    "RedisTaskStore",
    "TaskInfo",
    "TaskRecord",
    "TaskStore",
    "TaskSupport",
]

publish(__name__, globals(), __all__)
