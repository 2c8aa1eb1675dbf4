"""The client the official MCP conformance suite runs in its client mode (`scripts/conformance`).

Written with trio-mcp's public API only, the way a user would write a client. For each client
scenario the suite starts a test server and runs this script with the server's URL as the last
argument; the environment names the scenario (`MCP_CONFORMANCE_SCENARIO`), the protocol
revision to speak (`MCP_CONFORMANCE_PROTOCOL_VERSION`: up to 2025-11-25 the initialize
handshake, 2026-07-28 per-request `_meta`) and, for some scenarios, what to do
(`MCP_CONFORMANCE_CONTEXT`, JSON). `SCENARIOS` maps each scenario to what a well-behaved client
does against that server; the suite then judges what it saw on the wire.

The client is unattended: it answers every form elicitation by accepting it, with the
schema's defaults (which trio-mcp fills in itself, SEP-1034) and a value of each other field's
type; `call_tool` answers 2026-07-28 input requests with the same handler.

An auth/ scenario connects with the `OAuth` settings `oauth_for` makes of its context: an
unattended user whose authorization server approves at once (`AutoRedirect`), or the machine
client (client credentials, JWT-bearer grant) the scenario describes.

A scenario that needs a client feature trio-mcp lacks (`UNSUPPORTED`: none today), and a
scenario this script does not know, ends at once
with exit code 2 and one line on stderr, so that a suite run never waits out its timeout
on it. A scenario that fails exits 1 with the traceback.

Run: through the suite (which appends the URL),

    node .../conformance/dist/index.js client \
        --command "python tests/conformance/everything_client.py" --suite all

or by hand against a server the suite started: `MCP_CONFORMANCE_SCENARIO=tools_call
python tests/conformance/everything_client.py http://localhost:PORT/mcp`.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if __package__ in (None, ""):  # run by path, as the suite runs it: `tests` is at the root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.timing import scaled

if TYPE_CHECKING:
    from trio_mcp import (
        AcceptedElicitation,
        AssertionRequest,
        Client,
        ElicitRequest,
        OAuth,
        ToolInfo,
    )

#: A scenario's client behaviour: given the connected client and the suite's context object.
Handler = Callable[["Client", Mapping[str, Any]], Awaitable[None]]

# Seconds a whole scenario may take, connection included: under the suite's own limit (60 s
# from scripts/conformance, scaled alike), so that a hang ends here with a traceback naming the
# call that hung, not as a bare timeout. Scaled by TRIO_MCP_TEST_TIMEOUT_FACTOR (tests/timing.py).
SCENARIO_TIMEOUT: Final = scaled(40)
EXIT_FAILED: Final = 1
EXIT_UNSUPPORTED: Final = 2


class ScenarioError(Exception):
    """The server's answers were not what the scenario describes."""


# -- scenarios ------------------------------------------------------------------------------------


async def initialize(client: Client, context: Mapping[str, Any]) -> None:
    # open_client has done the handshake; a client then asks what the server offers.
    await client.list_tools()


async def tools_call(client: Client, context: Mapping[str, Any]) -> None:
    await _tools_by_name(client, "add_numbers")
    result = await client.call_tool("add_numbers", {"a": 5, "b": 3}, raise_on_error=True)
    _expect(result.text == "The sum of 5 and 3 is 8", f"unexpected result {result.text!r}")


async def json_schema_2020_12_preservation(client: Client, context: Mapping[str, Any]) -> None:
    tools = await _tools_by_name(client, "json_schema_2020_12_tool", "json_schema_echo")
    # The schema as the client holds it after listing: whatever trio-mcp dropped or rewrote on
    # the way in shows in the echo.
    schema = tools["json_schema_2020_12_tool"].input_schema
    await client.call_tool("json_schema_echo", {"schema": schema}, raise_on_error=True)


async def json_schema_ref_no_deref(client: Client, context: Mapping[str, Any]) -> None:
    # Listing is the test: the tool's schema holds a network $ref that must not be fetched.
    await client.list_tools()


async def call_every_tool(client: Client, context: Mapping[str, Any]) -> None:
    # Every tool that list_tools keeps is fair game, so a tool that trio-mcp should have left
    # out (an invalid x-mcp-header) gets called and the suite sees it.
    for tool in await client.list_tools():
        await client.call_tool(tool.name, placeholder_arguments(tool))


async def http_standard_headers(client: Client, context: Mapping[str, Any]) -> None:
    await call_every_tool(client, context)
    # trio-mcp's client has no resources or prompts methods yet; `request` sends them as is,
    # and the link still adds the Mcp-Method and Mcp-Name headers the scenario looks for.
    resources = await client.request("resources/list")
    for resource in _items(resources, "resources"):
        await client.request("resources/read", {"uri": resource["uri"]})
    prompts = await client.request("prompts/list")
    for prompt in _items(prompts, "prompts"):
        await client.request("prompts/get", {"name": prompt["name"]})


async def http_custom_headers(client: Client, context: Mapping[str, Any]) -> None:
    # Listing first: the x-mcp-header annotations it brings decide which arguments the link
    # mirrors into Mcp-Param-* headers.
    await client.list_tools()
    for call in context.get("toolCalls", []):
        await client.call_tool(call["name"], call["arguments"], raise_on_error=True)


async def request_metadata(client: Client, context: Mapping[str, Any]) -> None:
    # The checks are on the metadata of every request, so ordinary traffic is enough.
    await client.list_tools()


async def mrtr_request_state(client: Client, context: Mapping[str, Any]) -> None:
    # call_tool answers the input requests (SEP-2322) with the elicitation handler and sends the
    # call again, echoing the server's requestState untouched (none when it sent none).
    for tool in await client.list_tools():
        await client.call_tool(tool.name, placeholder_arguments(tool), raise_on_error=True)


async def authorized_calls(client: Client, context: Mapping[str, Any]) -> None:
    # open_client authorized as the scenario's OAuth settings say (`oauth_for`); listing and
    # calling then meet the server's per-operation challenges (step-up on tools/call) and, in
    # the migration scenario, a second authorization server.
    await call_every_tool(client, context)


async def skills_listed(client: Client, context: Mapping[str, Any]) -> None:
    # A host builds its registry of skills from the listing alone: nothing of a skill is
    # fetched before the skill is used.
    _expect(bool(await client.list_skills()), "the server lists no skill")


async def skills_used(client: Client, context: Mapping[str, Any]) -> None:
    # A host that uses a skill loads its SKILL.md, checked against the entry, then reads the
    # files it needs, each checked too. A skill that fails a check is not loaded, and nothing
    # more of it is read.
    from trio_mcp import SkillVerificationError  # noqa: PLC0415 - see `run_scenario`

    for skill in await client.list_skills():
        try:
            loaded = await client.load_skill(skill)
        except SkillVerificationError as exc:
            print(f"skill not loaded: {exc}", file=sys.stderr)
            continue
        for file in loaded.info.files or ():
            if file.uri != loaded.info.uri:  # SKILL.md is read already
                await client.read_skill_file(loaded, file.uri)


async def elicitation_defaults(client: Client, context: Mapping[str, Any]) -> None:
    # The tool elicits a form whose every field has a default; the server checks that the
    # answer carries them all. Its elicitation/create comes on the session's GET stream, which
    # the client opens since it has an elicitation handler.
    await _tools_by_name(client, "test_client_elicitation_defaults")
    await client.call_tool("test_client_elicitation_defaults", raise_on_error=True)


SCENARIOS: Final[Mapping[str, Handler]] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "json-schema-2020-12-preservation": json_schema_2020_12_preservation,
    "json-schema-ref-no-deref": json_schema_ref_no_deref,
    "http-standard-headers": http_standard_headers,
    "http-custom-headers": http_custom_headers,
    "http-invalid-tool-headers": call_every_tool,
    "request-metadata": request_metadata,
    "sep-2322-client-request-state": mrtr_request_state,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": call_every_tool,
    "sep-2640-client-no-prefetch": skills_listed,
    "sep-2640-client-verify-digest": skills_used,
    "sep-2640-client-verify-size": skills_used,
    "sep-2640-client-verify-frontmatter": skills_used,
    **{
        f"auth/{name}": authorized_calls
        for name in (
            "metadata-default",
            "metadata-var1",
            "metadata-var2",
            "metadata-var3",
            "basic-cimd",
            "scope-from-www-authenticate",
            "scope-from-scopes-supported",
            "scope-omitted-when-undefined",
            "scope-step-up",
            "scope-retry-limit",
            "token-endpoint-auth-basic",
            "token-endpoint-auth-post",
            "token-endpoint-auth-none",
            "pre-registration",
            "2025-03-26-oauth-metadata-backcompat",
            "2025-03-26-oauth-endpoint-fallback",
            "resource-mismatch",
            "offline-access-scope",
            "offline-access-not-supported",
            "authorization-server-migration",
            "iss-supported",
            "iss-not-advertised",
            "iss-supported-missing",
            "iss-wrong-issuer",
            "iss-unexpected",
            "iss-normalized",
            "metadata-issuer-mismatch",
            "client-credentials-jwt",
            "client-credentials-basic",
            "enterprise-managed-authorization",
            "wif-jwt-bearer",
            "dpop",
            "dpop-nonce",
        )
    },
}

#: Scenarios (or, ending in "/" or "-", families of them) and the trio-mcp feature they need.
UNSUPPORTED: Final[Mapping[str, str]] = {}


# -- how a client authorizes itself ---------------------------------------------------------------

# The Client ID Metadata Document URL the suite's authorization servers expect (SEP-991); they
# never fetch it during the flow.
CLIENT_METADATA_URL: Final = "https://conformance-test.local/client-metadata.json"
# Never opened: the suite's authorization servers approve at once and redirect here, and
# `AutoRedirect` reads the redirect instead of following it.
REDIRECT_URI: Final = "http://localhost:3000/callback"


def oauth_for(scenario: str, context: Mapping[str, Any]) -> OAuth | None:
    """The `OAuth` settings of an auth/ scenario (None for the others): an unattended user
    who approves everything, or the machine client the scenario's context describes."""
    if not scenario.startswith("auth/"):
        return None
    from trio_mcp import AutoRedirect, OAuth, id_jag_assertion  # noqa: PLC0415

    name = scenario.removeprefix("auth/")
    if name == "client-credentials-jwt":
        return OAuth(
            grant="client_credentials",
            client_id=context["client_id"],
            private_key=context["private_key_pem"],
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
    if name == "client-credentials-basic":
        return OAuth(
            grant="client_credentials",
            client_id=context["client_id"],
            client_secret=context["client_secret"],
        )
    if name == "enterprise-managed-authorization":
        return OAuth(
            grant="jwt_bearer",
            client_id=context["client_id"],
            client_secret=context["client_secret"],
            assertion=id_jag_assertion(
                token_endpoint=context["idp_token_endpoint"],
                id_token=context["idp_id_token"],
                client_id=context["idp_client_id"],
            ),
        )
    if name == "wif-jwt-bearer":
        workload_token: str = context["valid_jwt"]

        async def workload_identity(request: AssertionRequest) -> str:
            return workload_token

        return OAuth(
            grant="jwt_bearer", client_id=context["client_id"], assertion=workload_identity
        )
    redirect = AutoRedirect()
    return OAuth(
        redirect_uri=REDIRECT_URI,
        redirect_handler=redirect.redirect,
        callback_handler=redirect.callback,
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        issuer=context.get("issuer"),
        client_metadata_url=CLIENT_METADATA_URL,
        client_name="trio-mcp conformance client",
        dpop=name.startswith("dpop"),
    )


# -- what a client does with a server's tools -----------------------------------------------------

# A value of each JSON type, for the arguments a model would otherwise fill in.
_PLACEHOLDERS: Final[Mapping[str, Any]] = {
    "string": "example",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "object": {},
    "array": [],
    "null": None,
}


def placeholder_arguments(tool: ToolInfo) -> dict[str, Any]:
    """A value of the declared type (or the default) for each required parameter of `tool`."""
    return {
        parameter.name: parameter.default
        if parameter.has_default
        else _placeholder(tool.input_schema["properties"][parameter.name])
        for parameter in tool.parameters
        if parameter.required
    }


def _placeholder(schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    return _PLACEHOLDERS.get(kind, "example") if isinstance(kind, str) else "example"


async def accept_form(request: ElicitRequest) -> AcceptedElicitation[dict[str, Any]]:
    """Accept a form elicitation, as an unattended client: a value of each field's type for
    the fields without a default (trio-mcp fills those with a default in)."""
    from trio_mcp import AcceptedElicitation  # noqa: PLC0415 - see `run_scenario`

    fields = (request.requested_schema or {}).get("properties")
    return AcceptedElicitation(
        {
            key: _placeholder(field)
            for key, field in (fields if isinstance(fields, dict) else {}).items()
            if isinstance(field, dict) and "default" not in field
        }
    )


async def _tools_by_name(client: Client, *names: str) -> dict[str, ToolInfo]:
    tools = {tool.name: tool for tool in await client.list_tools()}
    missing = [name for name in names if name not in tools]
    _expect(not missing, f"the server lists no tool {', '.join(missing)}")
    return tools


def _items(result: Any, key: str) -> list[dict[str, Any]]:
    items = result.get(key) if isinstance(result, dict) else None
    if not isinstance(items, list):
        raise ScenarioError(f"malformed list result: {result!r}")
    return [item for item in items if isinstance(item, dict)]


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise ScenarioError(message)


# -- running one scenario ------------------------------------------------------------------------


def unsupported(scenario: str) -> str | None:
    """The trio-mcp feature `scenario` needs and lacks, or None."""
    for name, feature in UNSUPPORTED.items():
        family = name.endswith(("/", "-"))
        if scenario == name or (family and scenario.startswith(name)):
            return feature
    return None


def run_scenario(
    handler: Handler,
    url: str,
    version: str | None,
    context: Mapping[str, Any],
    auth: OAuth | None = None,
) -> int:
    """Connect to `url`, speaking `version` (trio-mcp's default when None), and run `handler`.

    Returns:
        The exit code: 0 done, 1 the scenario failed (traceback on stderr), 2 a revision
        trio-mcp does not speak.
    """
    # Imported here, not at the top: a scenario turned away in `main` exits in milliseconds
    # rather than after the ~0.6 s these imports take, which adds up over dozens of scenarios.
    import trio  # noqa: PLC0415

    from trio_mcp import SUPPORTED_VERSIONS, Asking, open_client  # noqa: PLC0415

    if version is not None and version not in SUPPORTED_VERSIONS:
        print(f"not supported by trio-mcp yet: protocol version {version}", file=sys.stderr)
        return EXIT_UNSUPPORTED

    async def scenario() -> None:
        with trio.fail_after(SCENARIO_TIMEOUT):
            options: dict[str, Any] = {"asking": Asking(elicitation=accept_form)}
            if version is not None:
                options["protocol_version"] = version
            if auth is not None:
                options["auth"] = auth
            async with open_client(url, **options) as client:
                await handler(client, context)

    # What trio-mcp reports (a tool left out of the list, a fallback to initialize) belongs in
    # the stderr the suite keeps with each scenario's results; httpx's line per request not.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")
    logging.getLogger("trio_mcp").setLevel(logging.INFO)
    try:
        trio.run(scenario)
    except Exception:
        traceback.print_exc()
        return EXIT_FAILED
    return 0


def main(argv: list[str]) -> int:
    """Run the scenario the environment names against the server URL last in `argv`."""
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(argv) < 2:
        print("usage: everything_client.py <server-url>", file=sys.stderr)
        return EXIT_UNSUPPORTED
    feature = unsupported(scenario)
    if feature is not None:
        print(f"not supported by trio-mcp yet: {feature}", file=sys.stderr)
        return EXIT_UNSUPPORTED
    handler = SCENARIOS.get(scenario)
    if handler is None:
        print(f"unknown scenario {scenario!r} (MCP_CONFORMANCE_SCENARIO)", file=sys.stderr)
        return EXIT_UNSUPPORTED
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or None
    return run_scenario(handler, argv[-1], version, context, oauth_for(scenario, context))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
