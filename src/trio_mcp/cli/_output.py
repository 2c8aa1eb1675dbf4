"""What the command line shows people: tables, results, contents, task states and progress.

The `format_*`, `render_*` and `describe_*` functions turn the client's records into text and
are tested without a server; the `print_*` ones write what a command reports as it runs (the
server's log, a task's state, progress) to stderr, leaving stdout to the command's answer.
"""

from __future__ import annotations

import base64
import json
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._core.client_records import (
    LogMessage,
    Progress,
    PromptInfo,
    PromptResult,
    ResourceInfo,
    ResourceTemplateInfo,
    TaskInfo,
    ToolInfo,
    ToolResult,
    describe_type,
)
from .._core.types import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    ResourceLink,
    TextContent,
)

if TYPE_CHECKING:
    from .._features.skills import SkillInfo

__all__ = [
    "content_bytes",
    "describe_block",
    "describe_output",
    "dumps",
    "format_progress",
    "format_prompts",
    "format_resources",
    "format_skills",
    "format_task",
    "format_tool",
    "format_tools",
    "plural",
    "print_completion",
    "print_log",
    "print_progress",
    "print_task",
    "render_contents",
    "render_messages",
    "render_result",
]


def print_completion(elicitation_id: str) -> None:
    """The server's word that an elicitation (URL mode) is complete."""
    _note(f"trio-mcp: the server says elicitation {elicitation_id} is complete")


def print_log(message: LogMessage) -> None:
    """A log message of the server: `[server LOGGER LEVEL] data`."""
    data = message.data if isinstance(message.data, str) else json.dumps(message.data)
    source = f" {message.logger}" if message.logger else ""
    _note(f"[server{source} {message.level}] {data}")


def print_task(task: TaskInfo) -> None:
    """A task's new state, as `call` shows it while the task runs."""
    _note(f"  {format_task(task)}")


def print_progress(update: Progress) -> None:
    """A progress update, as `call` shows it while the tool runs."""
    _note(f"  {format_progress(update)}")


def _note(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def format_tools(tools: Sequence[ToolInfo], server_info: Mapping[str, Any] | None = None) -> str:
    """The tools and their parameters as a plain-text table."""
    lines = _heading(server_info, [(len(tools), "tool")])
    for tool in tools:
        # `trio-mcp tools SERVER TOOL` shows the rest of the description.
        lines.append(_headline(tool.name, tool.description))
        lines += _parameter_table(tool)
        if tool.output_schema is not None:
            lines.append(f"    returns: {describe_output(tool.output_schema)}")
        lines.append("")
    return "\n".join(lines).rstrip()


def format_tool(tool: ToolInfo) -> str:
    """One tool in full: its description, parameters and return, then its JSON Schemas."""
    lines = [tool.name + (f"  ({tool.title})" if tool.title else "")]
    if tool.description:
        lines += [textwrap.indent(tool.description, "    "), ""]
    lines += _parameter_table(tool)
    if tool.output_schema is not None:
        lines.append(f"    returns: {describe_output(tool.output_schema)}")
    if tool.annotations:
        lines.append(f"    annotations: {json.dumps(tool.annotations, ensure_ascii=False)}")
    for label, schema in (
        ("input schema", tool.input_schema),
        ("output schema", tool.output_schema),
    ):
        shown = "none" if schema is None else dumps(schema)
        lines += ["", f"{label}:" if schema is not None else f"{label}: {shown}"]
        if schema is not None:
            lines.append(shown)
    return "\n".join(lines)


def _parameter_table(tool: ToolInfo) -> list[str]:
    params = tool.parameters
    if not params:
        return ["    (no parameters)"]
    rows = [("PARAMETER", "TYPE", "REQUIRED", "DEFAULT", "DESCRIPTION")]
    for param in params:
        default = json.dumps(param.default) if param.has_default else ""
        rows.append(
            (
                param.name,
                param.type,
                "yes" if param.required else "no",
                default,
                param.description or "",
            )
        )
    return _columns(rows, "    ")


def describe_output(schema: dict[str, Any]) -> str:
    """An output schema in one line: a wrapped value's type, or the object's fields."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return describe_type(schema)
    if set(properties) == {"result"}:
        return describe_type(properties["result"])  # a plain value, wrapped by the server
    return ", ".join(
        f"{name}: {describe_type(sub if isinstance(sub, dict) else {})}"
        for name, sub in properties.items()
    )


def format_task(task: TaskInfo) -> str:
    """A task's state in one line: `task working: battle 2 of 5`."""
    words = f"task {task.status.replace('_', ' ')}"
    return f"{words}: {task.status_message}" if task.status_message else words


def format_progress(update: Progress) -> str:
    """One progress update as `[2/3] message`."""
    done = _number(update.progress)
    step = f"[{done}/{_number(update.total)}]" if update.total is not None else f"[{done}]"
    return f"{step} {update.message}" if update.message else step


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def render_result(result: ToolResult) -> str:
    """A result for people: a lone value bare, an object one field per line, else the blocks."""
    structured = result.structured
    if structured is not None and not result.is_error:
        if set(structured) == {"result"}:
            return _render_value(structured["result"])
        width = max((len(str(key)) for key in structured), default=0)
        return "\n".join(
            f"{str(key) + ':':<{width + 1}} {_render_value(value)}"
            for key, value in structured.items()
        )
    return "\n".join(describe_block(block) for block in result.content)


def describe_block(block: ContentBlock | str | Mapping[str, Any]) -> str:
    """One content block for people: text as it is, other kinds summarised in brackets."""
    if isinstance(block, str):
        return block
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return f"[{kind} {block.mime_type}, {len(block.data)} base64 characters]"
    if isinstance(block, EmbeddedResource):
        return block.text if block.text is not None else f"[resource {block.uri}]"
    if isinstance(block, ResourceLink):
        return f"[link {block.name}: {block.uri}]"
    return json.dumps(block)


def _render_value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def dumps(value: Any) -> str:
    """JSON as the commands print it: indented, non-ASCII as it is."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def _columns(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Rows as aligned columns; the last column is left ragged (it may be long)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append((indent + "  ".join([*cells, row[-1]])).rstrip())
    return lines


def _heading(server_info: Mapping[str, Any] | None, counts: Sequence[tuple[int, str]]) -> list[str]:
    """A table's first line, `demo 1.0: 3 tools`, then a blank one; none without server info."""
    if not server_info:
        return []
    name = server_info.get("name", "server")
    version = server_info.get("version")
    shown = ", ".join(plural(n, noun) for n, noun in counts)
    return [f"{name} {version or ''}".rstrip() + f": {shown}", ""]


def _headline(name: str, about: str | None) -> str:
    """A name and the first paragraph of what is said of it, on one line."""
    summary = " ".join(about.split("\n\n")[0].split()) if about else ""
    return name + (f"  {summary}" if summary else "")


def plural(n: int, noun: str) -> str:
    """`1 tool`, `2 tools`."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def format_resources(
    resources: Sequence[ResourceInfo],
    templates: Sequence[ResourceTemplateInfo],
    server_info: Mapping[str, Any] | None = None,
) -> str:
    """The resources, then the templates, as plain-text tables."""
    lines = _heading(server_info, [(len(resources), "resource"), (len(templates), "template")])
    if resources:
        lines += _columns(
            [
                ("URI", "NAME", "MIME TYPE", "TITLE"),
                *((r.uri, r.name, r.mime_type or "", r.title or "") for r in resources),
            ]
        )
    if templates:
        lines += [""] if resources else []
        lines += _columns(
            [
                ("URI TEMPLATE", "NAME", "MIME TYPE", "TITLE"),
                *((t.uri_template, t.name, t.mime_type or "", t.title or "") for t in templates),
            ]
        )
    if not resources and not templates:
        lines.append("(no resources)")
    return "\n".join(lines)


def format_skills(skills: Sequence[SkillInfo], server_info: Mapping[str, Any] | None = None) -> str:
    """The skills a server lists, as a plain-text table (a dynamic skill's files: "dynamic")."""
    lines = _heading(server_info, [(len(skills), "skill")])
    if not skills:
        lines.append("(no skills)")
        return "\n".join(lines)
    rows = [("NAME", "FILES", "BYTES", "URI", "DESCRIPTION")]
    for skill in skills:
        files, size = ("dynamic", "") if skill.files is None else (
            str(len(skill.files)), f"{skill.size:,}"
        )  # fmt: skip
        rows.append((skill.name, files, size, skill.uri, _headline("", skill.description).strip()))
    return "\n".join(lines + _columns(rows))


def content_bytes(part: ResourceContents) -> bytes:
    """A resource's contents as bytes: text in UTF-8, a blob decoded."""
    if part.text is not None:
        return part.text.encode()
    return part.blob if isinstance(part.blob, bytes) else base64.b64decode(part.blob or "")


def render_contents(contents: Sequence[ResourceContents]) -> str:
    """Resource contents for people: text as it is, a blob as its size and type.

    Each part ends with a newline; when there are several, each is headed by its URI.
    """
    parts = []
    for part in contents:
        if part.text is not None:
            body = part.text if part.text.endswith("\n") else part.text + "\n"
        else:
            size = len(content_bytes(part))
            kind = part.mime_type or "of unknown type"
            body = f"[blob {kind}, {size} bytes; --out FILE writes it]\n"
        head = f"==> {part.uri} <==\n" if len(contents) > 1 else ""
        parts.append(head + body)
    return "".join(parts)


def format_prompts(
    prompts: Sequence[PromptInfo], server_info: Mapping[str, Any] | None = None
) -> str:
    """The prompts and their arguments as a plain-text table."""
    lines = _heading(server_info, [(len(prompts), "prompt")])
    for prompt in prompts:
        lines.append(_headline(prompt.name, prompt.description or prompt.title))
        if prompt.arguments:
            rows = [("ARGUMENT", "REQUIRED", "DESCRIPTION")]
            rows += [
                (a.name, "yes" if a.required else "no", a.description or a.title or "")
                for a in prompt.arguments
            ]
            lines += _columns(rows, "    ")
        else:
            lines.append("    (no arguments)")
        lines.append("")
    if not prompts:
        lines.append("(no prompts)")
    return "\n".join(lines).rstrip()


def render_messages(result: PromptResult) -> str:
    """A prompt's messages for people: `role: text` each, other content summarised."""
    return "\n".join(
        f"{message.role}: {describe_block(message.content)}" for message in result.messages
    )
