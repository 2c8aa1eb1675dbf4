"""The pytest plugin, as a user's suite meets it: a folder of tests run by a fresh pytest.

One run covers it all: trio tests (pytest-trio's mark) and anyio tests on both backends take
`mcp_client`, a revision can be parametrized, and a missing `mcp_server` or an asyncio test
fails with a message that says what to do.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import DEMO_TOOLS, run_pytest
from trio_mcp import SUPPORTED_VERSIONS

ROOT_CONFTEST = """
pytest_plugins = ["trio_mcp.testing.pytest_plugin"]
"""

SERVED_CONFTEST = """
import pytest
from demo_tools import build_server


@pytest.fixture
def mcp_server():
    return build_server()
"""

TRIO_TESTS = """
import pytest
import trio_mcp

pytestmark = pytest.mark.trio


async def test_calls_a_tool(mcp_client):
    result = await mcp_client.call_tool("calculator.add", {"a": 5, "b": 3})
    assert result.structured == {"result": 8.0}


@pytest.mark.parametrize("mcp_protocol_version", trio_mcp.SUPPORTED_VERSIONS)
async def test_each_revision(mcp_client, mcp_protocol_version):
    assert mcp_client.protocol_version == mcp_protocol_version
    assert len(await mcp_client.list_tools()) == {n_tools}
"""

ANYIO_TESTS = """
import pytest

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["trio", "asyncio"])
def anyio_backend(request):
    return request.param


async def test_on_anyio(mcp_client):
    await mcp_client.ping()
"""

MISSING_SERVER = """
import pytest


@pytest.mark.trio
async def test_without_a_server(mcp_client):
    pass
"""


@pytest.mark.slow
def test_the_plugin_in_a_users_suite(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(ROOT_CONFTEST)
    (tmp_path / "test_missing.py").write_text(MISSING_SERVER)
    served = tmp_path / "served"
    served.mkdir()
    (served / "conftest.py").write_text(SERVED_CONFTEST)
    (served / "test_trio.py").write_text(TRIO_TESTS.replace("{n_tools}", str(len(DEMO_TOOLS))))
    (served / "test_on_anyio.py").write_text(ANYIO_TESTS)

    outcomes = run_pytest(tmp_path)

    passed = {name for name, (outcome, _) in outcomes.items() if outcome == "passed"}
    assert passed == {
        "served.test_trio::test_calls_a_tool",
        *(f"served.test_trio::test_each_revision[{v}]" for v in SUPPORTED_VERSIONS),
        "served.test_on_anyio::test_on_anyio[trio]",
    }
    outcome, message = outcomes["test_missing::test_without_a_server"]
    assert outcome == "error"
    assert "define a fixture named mcp_server" in message
    outcome, message = outcomes["served.test_on_anyio::test_on_anyio[asyncio]"]
    assert outcome == "error"
    assert "trio_mcp.testing.connect was called from asyncio" in message
    assert len(outcomes) == len(passed) + 2
