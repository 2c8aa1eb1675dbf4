"""The option records of `Server`, `open_client` and `testing.connect`, and the old keywords.

`Limits`, `Timeouts` and `Asking` are frozen records that check their values when made; the
keywords they replaced still work, each with a `DeprecationWarning` that points at the caller's
line and names the record and field to use instead.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pytest
import trio

import trio_mcp.testing
from tests.timing import scaled
from trio_mcp import (
    AcceptedElicitation,
    Asking,
    Context,
    ElicitRequest,
    Limits,
    Server,
    Timeouts,
    open_client,
)
from trio_mcp._runtime.options import CLIENT_MOVED, SERVER_MOVED

TIMEOUT = scaled(10)


def test_a_server_takes_its_bounds_and_waits_as_records() -> None:
    server = Server(
        "bounded",
        limits=Limits(max_in_flight=8, max_uri_length=100),
        timeouts=Timeouts(ask=5.0, shutdown=1.5),
    )
    assert server.limits == Limits(max_in_flight=8, max_uri_length=100)
    assert server.timeouts.ask == 5.0
    assert server.timeouts.shutdown == 1.5
    assert Server("plain").limits == Limits()


@pytest.mark.parametrize(("keyword", "where"), SERVER_MOVED.items(), ids=list(SERVER_MOVED))
def test_an_old_server_keyword_lands_in_its_record_and_warns(
    keyword: str, where: tuple[str, str]
) -> None:
    record, field = where
    given: dict[str, Any] = {keyword: 300}  # a valid value for every one of them
    with pytest.warns(DeprecationWarning, match=rf"Server\({keyword}=\.\.\.\) is deprecated") as w:
        server = Server("old", **given)
    assert w[0].filename == __file__  # the caller's line, not ours
    assert f"{record}={type(getattr(server, record)).__name__}({field}=...)" in str(w[0].message)
    assert getattr(getattr(server, record), field) == 300


def test_an_old_keyword_beats_the_records_field() -> None:
    with pytest.warns(DeprecationWarning, match="max_in_flight"):
        server = Server("both", limits=Limits(max_in_flight=3, max_line_bytes=99), max_in_flight=5)
    assert (server.limits.max_in_flight, server.limits.max_line_bytes) == (5, 99)


def test_an_unknown_keyword_is_a_type_error() -> None:
    with pytest.raises(
        TypeError, match="Server\\(\\) got an unexpected keyword argument 'pagesize'"
    ):
        Server("typo", pagesize=10)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Limits(max_in_flight=0), "max_in_flight must be positive"),
        (lambda: Limits(max_subscriptions=-1), "must not be negative"),
        (lambda: Limits(max_subscription_bytes=-1), "must not be negative"),
        (lambda: Limits(max_uri_length=0), "max_uri_length must be positive"),
        (lambda: Asking(max_input_rounds=-1), "max_input_rounds must be 0 or more"),
    ],
)
def test_records_check_their_values_when_made(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_an_old_keyword_is_checked_as_its_record_is() -> None:
    with (
        pytest.raises(ValueError, match="max_in_flight must be positive"),
        pytest.warns(DeprecationWarning, match="max_in_flight"),
    ):
        Server(max_in_flight=0)


@pytest.mark.parametrize("record", [Limits(), Timeouts(), Asking()], ids=type)
def test_records_are_frozen(record: Any) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, dataclasses.fields(record)[0].name, 1)


def asking_server() -> Server:
    server = Server("asks")

    @server.tool()
    async def name(ctx: Context) -> str:
        outcome = await ctx.elicit("Your name?", {"type": "object", "properties": {}})
        return type(outcome).__name__

    return server


async def accept(request: ElicitRequest) -> AcceptedElicitation[Any]:
    return AcceptedElicitation({})


async def test_open_client_takes_the_handlers_as_asking() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_client(asking_server(), asking=Asking(elicitation=accept)) as client:
            assert (await client.call_tool("name")).text == "AcceptedElicitation"


@pytest.mark.parametrize("opener", ["open_client", "connect"])
@pytest.mark.parametrize(("keyword", "where"), CLIENT_MOVED.items(), ids=list(CLIENT_MOVED))
async def test_an_old_client_keyword_still_works_and_warns_at_the_async_with(
    opener: str, keyword: str, where: tuple[str, str]
) -> None:
    values: dict[str, Any] = {
        "elicitation_handler": accept,
        "sampling_handler": None,
        "roots": [],
        "elicitation_modes": ("form",),
        "on_elicitation_complete": None,
        "max_input_rounds": 3,
    }
    open_ = open_client if opener == "open_client" else trio_mcp.testing.connect
    given = {keyword: values[keyword]}
    if keyword == "elicitation_modes":  # modes without a handler declare nothing to narrow
        given["elicitation_handler"] = accept
    with trio.fail_after(TIMEOUT), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with open_(asking_server(), **given) as client:
            if "elicitation_handler" in given:
                assert (await client.call_tool("name")).text == "AcceptedElicitation"
    mine = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert f"{opener}({keyword}=...) is deprecated; pass {opener}(asking=Asking(" in str(
        mine[0].message
    )
    assert {warning.filename for warning in mine} == {__file__}  # the `async with` line


async def test_an_unknown_client_keyword_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="open_client\\(\\) got an unexpected keyword argument"):
        async with open_client(asking_server(), elicitation=accept):
            pass
