"""Subscriptions, sans-IO: the filter of a `subscriptions/listen` request (read strictly,
granted by the server's capabilities, matched against each notification), and the bounded set
of URIs a handshake-era session subscribed to."""

from __future__ import annotations

from typing import Any

import pytest

from trio_mcp._core.subscriptions import SessionSubscriptions, SubscriptionFilter, tagged
from trio_mcp._exceptions import RemoteProtocolError

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
EVERYTHING = {
    "tools": {"listChanged": True},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
}


def test_a_filter_reads_its_fields_and_keeps_each_uri_once() -> None:
    asked = SubscriptionFilter.parse(
        {
            "notifications": {
                "toolsListChanged": True,
                "promptsListChanged": False,
                "resourceSubscriptions": ["test://b", "test://a", "test://b"],
            }
        }
    )
    assert asked == SubscriptionFilter(frozenset({"tools"}), ("test://b", "test://a"))
    assert asked.wire() == {
        "toolsListChanged": True,
        "resourceSubscriptions": ["test://b", "test://a"],
    }
    assert SubscriptionFilter.parse({"notifications": {}}).wire() == {}


@pytest.mark.parametrize(
    "notifications",
    [None, [], {"resourcesListChanged": 1}, {"resourceSubscriptions": [None]}],
)
def test_a_malformed_filter_is_invalid_params(notifications: object) -> None:
    with pytest.raises(RemoteProtocolError) as raised:
        SubscriptionFilter.parse({"notifications": notifications})
    assert raised.value.code == -32602


def test_only_what_the_server_announces_is_granted() -> None:
    asked = SubscriptionFilter(frozenset({"tools", "prompts", "resources"}), ("test://a",))
    assert asked.granted(EVERYTHING) == asked
    tools_only = asked.granted({"tools": {"listChanged": True}, "resources": {}})
    assert tools_only == SubscriptionFilter(frozenset({"tools"}))
    assert asked.granted({}).wire() == {}


def test_a_stream_carries_only_what_it_asked_for() -> None:
    granted = SubscriptionFilter(frozenset({"prompts"}), ("test://a",))
    assert granted.wants("notifications/prompts/list_changed")
    assert granted.wants("notifications/resources/updated", {"uri": "test://a"})
    for method, params in [
        ("notifications/tools/list_changed", None),
        ("notifications/resources/list_changed", None),
        ("notifications/resources/updated", {"uri": "test://b"}),
        ("notifications/resources/updated", None),
        ("notifications/message", {"level": "info", "data": "x"}),
        ("notifications/progress", {"progressToken": 1, "progress": 1}),
        ("prompts", None),
    ]:
        assert not granted.wants(method, params), method


def test_tagging_keeps_the_params_and_other_meta() -> None:
    assert tagged({"uri": "test://a", "_meta": {"x": 1}}, 7) == {
        "uri": "test://a",
        "_meta": {"x": 1, SUBSCRIPTION_ID: 7},
    }
    assert tagged(None, "s") == {"_meta": {SUBSCRIPTION_ID: "s"}}


def test_task_ids_are_asked_granted_with_the_extension_and_carried_alone() -> None:
    asked = SubscriptionFilter.parse({"notifications": {"taskIds": ["t2", "t1", "t2"]}})
    tasks: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    granted = asked.granted(tasks)
    assert asked == SubscriptionFilter(task_ids=("t2", "t1"))
    assert not asked.empty
    assert SubscriptionFilter().empty
    assert granted.wire() == {"taskIds": ["t2", "t1"]}
    assert asked.granted(EVERYTHING).wire() == {}  # no extension announced: none granted
    assert granted.wants("notifications/tasks", {"taskId": "t1", "status": "working"})
    assert not granted.wants("notifications/tasks", {"taskId": "t3", "status": "working"})
    assert not granted.wants("notifications/tasks/status", {"taskId": "t1"})
    with pytest.raises(RemoteProtocolError) as raised:
        SubscriptionFilter.parse({"notifications": {"taskIds": "t1"}})
    assert raised.value.code == -32602
    assert "taskIds" in raised.value.message


# -- a session's resources/subscribe set, bounded -----------------------------------------------


def test_a_sessions_subscriptions_are_bounded_in_count() -> None:
    held = SessionSubscriptions(max_count=2, max_bytes=1000)
    held.add("test://a")
    held.add("test://b")
    held.add("test://a")  # held already: no new one
    with pytest.raises(RemoteProtocolError) as info:
        held.add("test://c")
    assert info.value.code == -32000
    assert "max_subscriptions=2" in info.value.message
    assert info.value.data == {"limit": "max_subscriptions", "max": 2}
    assert list(held) == ["test://a", "test://b"]
    held.discard("test://a")
    held.add("test://c")  # room again
    assert list(held) == ["test://b", "test://c"]


def test_a_sessions_subscriptions_are_bounded_in_bytes() -> None:
    held = SessionSubscriptions(max_count=100, max_bytes=20)
    held.add("x://" + "é" * 4)  # 4 + 8 bytes in UTF-8
    assert held.bytes == 12
    with pytest.raises(RemoteProtocolError) as info:
        held.add("x://12345")  # 9 more: 21 > 20
    assert "max_subscription_bytes" in info.value.message
    assert info.value.data == {"limit": "max_subscription_bytes", "max": 20}
    assert (len(held), held.bytes) == (1, 12)  # nothing changed
    held.add("x://1234")  # 8 more: exactly 20
    assert held.bytes == 20
    held.discard("x://1234")
    held.discard("x://never")
    assert held.bytes == 12
    held.clear()
    assert (len(held), held.bytes, list(held)) == (0, 0, [])
