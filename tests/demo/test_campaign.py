"""The demo's `wh40k.campaign`: a long job that runs as a task, in process under trio's autojump
clock (the battles' sleeps cost no real time)."""

from __future__ import annotations

from typing import Any

import trio

import demo_tools
from tests.helpers import MODERN
from trio_mcp import Progress, open_client
from trio_mcp.tasks import TaskInfo


async def test_a_campaign_runs_as_a_task_naming_each_battle(autojump_clock: Any) -> None:
    seen: list[TaskInfo] = []
    async with open_client(
        demo_tools.build_server(), protocol_version=MODERN, tasks=True
    ) as client:
        result = await client.call_tool(
            "wh40k.campaign", {"battles": 4}, on_task_status=seen.append
        )
        again = await client.call_tool("wh40k.campaign", {"battles": 4})
        other = await client.call_tool("wh40k.campaign", {"battles": 4, "seed": 1})
    assert result.structured is not None
    assert result.structured == again.structured  # the same arguments, the same campaign
    assert other.structured != result.structured
    assert len(result.structured["battles"]) == 4
    wins = result.structured["imperial_victories"] + result.structured["enemy_victories"]
    assert wins == 4
    messages = [t.status_message for t in seen if t.status == "working"]
    assert [m.split(":")[0] for m in messages if m and m.startswith("battle")] == [
        f"battle {n} of 4" for n in range(1, 5)
    ]
    assert seen[-1].status == "completed"


async def test_cancelling_the_campaign_cancels_its_task(autojump_clock: Any) -> None:
    seen: list[TaskInfo] = []
    async with open_client(
        demo_tools.build_server(), protocol_version=MODERN, tasks=True
    ) as client:
        with trio.move_on_after(1.5):
            await client.call_tool("wh40k.campaign", {"battles": 50}, on_task_status=seen.append)
        after = await client.get_task(seen[0].task_id)
    assert after.status == "cancelled"
    assert after.status_message is not None
    assert after.status_message.startswith("battle 3 of 50")


async def test_without_tasks_a_campaign_reports_progress(autojump_clock: Any) -> None:
    progress: list[Progress] = []
    async with open_client(demo_tools.build_server()) as client:
        result = await client.call_tool("wh40k.campaign", {"battles": 2}, progress=progress.append)
    assert not result.is_error
    assert [p.progress for p in progress] == [0, 1, 2]
    assert progress[-1].message == "the campaign is over"
