"""The YAML front matter of a `SKILL.md`: found, parsed, and compared, without a YAML library.

A skill's front matter is a small YAML mapping (the Agent Skills fields: `name`, `description`,
`license`, `compatibility`, `metadata`, `allowed-tools`), and both sides of the skills extension
need it as JSON: the server sends it in each skill's entry, the client compares the entry with
the file it fetched. This module reads the part of YAML such a block uses, as a YAML 1.2 parser
(the core schema) reads it, and refuses the rest by name and line instead of guessing:

- block mappings and block sequences, nested by indentation (spaces; a tab there is refused);
- plain scalars, over several lines too (folded with spaces), resolved as the core schema
  says: `null`/`~`/nothing, `true`/`false`, integers (decimal, `0o`, `0x`), floats; anything
  else is a string;
- single- and double-quoted strings (every YAML escape), over several lines too;
- literal (`|`) and folded (`>`) block scalars, with their chomping and indentation indicators;
- flow sequences and mappings (`[a, b]`, `{k: v}`) written on one line;
- comments.

Refused (`FrontMatterError`): anchors, aliases, tags, directives, complex keys, several
documents, duplicate keys, `.inf`/`.nan` (JSON has no such number), and a top level that is not
a mapping. A real YAML library was weighed and left out: PyYAML reads YAML 1.1 (`yes` is true,
`2024-01-01` a date, neither is JSON), and the block is too small to be worth a dependency.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "MAX_DEPTH",
    "FrontMatterError",
    "front_matter",
    "parse_yaml",
    "same_json",
    "split_front_matter",
]

# The block opens the file (after a byte order mark) with a line "---" and closes at the next
# line that is "---" (trailing blanks allowed): what the Agent Skills readers look for.
_FENCED: Final = re.compile(r"---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.DOTALL)
# The core schema's null and boolean words, and its numbers (YAML 1.2, 10.3.2).
_CONSTANTS: Final[dict[str, Any]] = {
    **dict.fromkeys(("", "~", "null", "Null", "NULL")),
    **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
}
_NUMBERS: Final[tuple[tuple[re.Pattern[str], Callable[[str], Any]], ...]] = (
    (re.compile(r"[-+]?[0-9]+"), int),
    (re.compile(r"0o[0-7]+"), lambda text: int(text[2:], 8)),
    (re.compile(r"0x[0-9a-fA-F]+"), lambda text: int(text[2:], 16)),
    (re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"), float),
)
_NON_FINITE: Final = re.compile(r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
# What may not start a plain scalar (YAML 1.2, 7.3.3), and what each would have been.
_INDICATORS: Final = {
    "&": "an anchor",
    "*": "an alias",
    "!": "a tag",
    "%": "a directive",
    "@": "a reserved indicator (@)",
    "`": "a reserved indicator (`)",
    "?": "a complex key",
}
_ESCAPES: Final = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85",
    "_": "\xa0", "L": "\u2028", "P": "\u2029",
}  # fmt: skip
_HEX_ESCAPES: Final = {"x": 2, "u": 4, "U": 8}
# Front matter nests a level or two (`metadata:`); 64 levels is far past any real one and far
# below Python's recursion limit, which a file made to be deep must not reach.
MAX_DEPTH: Final = 64
# How much of a line an error message quotes.
_SHOWN: Final = 80


class FrontMatterError(ValueError):
    """A front matter block is missing, or uses YAML this reader does not read.

    The message names the line (counted in the block, from 1) and what was found.
    """


def split_front_matter(text: str) -> tuple[str, str] | None:
    """The YAML of the front matter block opening `text`, and the body after it; None if none."""
    found = _FENCED.match(text.removeprefix("\ufeff"))
    if found is None:
        return None
    return found.group(1), text.removeprefix("\ufeff")[found.end() :]


def front_matter(text: str) -> dict[str, Any]:
    """The front matter of a `SKILL.md`, as JSON-compatible values.

    Raises:
        FrontMatterError: when the file does not begin with a front matter block, or the block
            is not a mapping this reader reads (see the module docstring).
    """
    split = split_front_matter(text)
    if split is None:
        raise FrontMatterError(
            "no front matter: the file must begin with a line '---', the YAML, and a line '---'"
        )
    return parse_yaml(split[0])


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal as JSON compares them: true is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_json(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


@dataclass(frozen=True, slots=True)
class _Line:
    number: int  # in the block, from 1
    indent: int  # leading spaces
    text: str  # the rest, right-trimmed ("" for a blank or comment-only line)
    raw: str  # the whole line, for block scalars


def parse_yaml(source: str) -> dict[str, Any]:
    """Parse a YAML mapping of the subset this module reads (see the module docstring).

    Raises:
        FrontMatterError: for YAML outside the subset, naming the line.
    """
    lines: list[_Line] = []
    rows = source.replace("\r\n", "\n").split("\n")
    broken = rows[-1] == ""  # the last line ends with a line break
    if broken:
        rows.pop()  # which starts no line
    for number, raw in enumerate(rows, start=1):
        stripped = raw.lstrip(" ")
        indent = len(raw) - len(stripped)
        if stripped.startswith("\t") and stripped.strip():
            raise FrontMatterError(f"line {number}: a tab in indentation (use spaces)")
        text = stripped.rstrip()
        if text.startswith("#"):
            text = ""
        if indent == 0 and (text in ("---", "...") or text.startswith("%")):
            raise FrontMatterError(f"line {number}: {text!r}: one document of YAML only")
        lines.append(_Line(number, indent, text, raw))
    parser = _Parser(lines, broken=broken)
    start = parser.skip_blank(0)
    if start == len(lines):
        return {}
    value, end = parser.block(start, lines[start].indent)
    end = parser.skip_blank(end)
    if end < len(lines):
        raise FrontMatterError(f"line {lines[end].number}: unexpected indentation")
    if not isinstance(value, dict):
        raise FrontMatterError("the front matter must be a mapping of fields (name: ...)")
    return value


class _Parser:
    def __init__(self, lines: list[_Line], *, broken: bool) -> None:
        self.lines = lines
        self.broken = broken
        self.depth = 0

    def skip_blank(self, index: int) -> int:
        while index < len(self.lines) and not self.lines[index].text:
            index += 1
        return index

    def block(self, index: int, indent: int) -> tuple[Any, int]:
        """The block node whose first line is `index`, at `indent`; and the line after it."""
        line = self.lines[index]
        if line.text.startswith("? ") or line.text == "?":
            raise FrontMatterError(f"line {line.number}: a complex key is not read here")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FrontMatterError(f"line {line.number}: nested more than {MAX_DEPTH} levels deep")
        try:
            return self.node(line, index, indent)
        finally:
            self.depth -= 1

    def node(self, line: _Line, index: int, indent: int) -> tuple[Any, int]:
        if _is_item(line.text):
            return self.sequence(index, indent)
        if _key_split(line.text, line.number) is not None:
            return self.mapping(index, indent)
        raise FrontMatterError(
            f"line {line.number}: expected 'key: value' or '- item', found {line.text[:_SHOWN]!r}"
        )

    def mapping(self, index: int, indent: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        while index < len(self.lines):
            line = self.lines[index]
            if line.indent != indent or _is_item(line.text):
                break
            split = _key_split(line.text, line.number)
            if split is None:
                raise FrontMatterError(f"line {line.number}: expected 'key: value'")
            key, rest = split
            if key in out:
                raise FrontMatterError(f"line {line.number}: duplicate key {key[:_SHOWN]!r}")
            out[key], index = self.value(rest, index, indent, sequence_here=True)
            index = self.after_node(index, indent)
        return out, index

    def sequence(self, index: int, indent: int) -> tuple[list[Any], int]:
        out: list[Any] = []
        while index < len(self.lines):
            line = self.lines[index]
            if line.indent != indent or not _is_item(line.text):
                break
            rest = line.text[1:].lstrip(" ")
            if rest and (_is_item(rest) or _key_split(rest, line.number) is not None):
                # "- key: value" or "- - x": a block node that starts on this line, where
                # `rest` starts.
                column = indent + len(line.text) - len(rest)
                self.lines[index] = _Line(line.number, column, rest, line.raw)
                value, index = self.block(index, column)
            else:
                value, index = self.value(rest, index, indent, sequence_here=False)
            out.append(value)
            index = self.after_node(index, indent)
        return out, index

    def after_node(self, index: int, indent: int) -> int:
        """The next line with content, refusing one indented deeper than the node's siblings."""
        index = self.skip_blank(index)
        if index < len(self.lines) and self.lines[index].indent > indent:
            raise FrontMatterError(f"line {self.lines[index].number}: unexpected indentation")
        return index

    def value(self, rest: str, index: int, indent: int, *, sequence_here: bool) -> tuple[Any, int]:
        """The value that begins with `rest` on line `index`, of a node at `indent`."""
        line = self.lines[index]
        if rest.startswith("#"):
            rest = ""  # only a comment: the value is on the next lines, or null
        if not rest:
            return self.below(index, indent, sequence_here=sequence_here)
        if rest[0] in "|>":
            return self.block_scalar(rest, index, indent)
        if rest[0] in "\"'":
            # `rest` ends the line as written (right-trimmed): where it starts in the raw line.
            return self.quoted(index, len(line.raw.rstrip()) - len(rest), indent)
        if rest[0] in "[{":
            value, end = _Flow(rest, line.number).parse()
            self.check_tail(rest[end:], line.number, "a flow collection")
            return value, index + 1
        return self.plain(rest, index, indent)

    def below(self, index: int, indent: int, *, sequence_here: bool) -> tuple[Any, int]:
        """The value of a key or item that ends line `index`: on the lines below, or null."""
        after = self.skip_blank(index + 1)
        if after == len(self.lines):
            return None, index + 1
        below = self.lines[after]
        if sequence_here and below.indent == indent and _is_item(below.text):
            return self.block(after, below.indent)  # "key:" over "- item" at its own indentation
        if below.indent <= indent:
            return None, index + 1
        if _is_item(below.text) or _key_split(below.text, below.number):
            return self.block(after, below.indent)
        return self.value(below.text, after, indent, sequence_here=False)

    def plain(self, rest: str, index: int, indent: int) -> tuple[Any, int]:
        """A plain scalar, which may go on over the lines indented deeper than its node."""
        number = self.lines[index].number
        first = _plain_text(rest, number)
        parts = [first]
        ended = first != rest  # a comment ends it
        index += 1
        blanks = 0
        while not ended and index < len(self.lines):
            below = self.lines[index]
            if not below.raw.strip():
                blanks += 1
                index += 1
                continue
            if below.indent <= indent or not below.text:  # a sibling, or a comment line
                break
            text = _plain_text(below.text, below.number, first=False)
            # Folded as YAML folds: a line break is a space, each blank line a newline.
            parts.append("\n" * blanks if blanks else " ")
            parts.append(text)
            ended = text != below.text
            blanks = 0
            index += 1
        index -= blanks  # trailing blank lines are nobody's
        if len(parts) > 1:
            return "".join(parts), index  # a multi-line plain scalar is always a string
        return _resolve(first, number), index

    def quoted(self, index: int, column: int, indent: int) -> tuple[str, int]:
        """A quoted scalar opening at `column` of line `index`'s raw text (it may span lines)."""
        opening = self.lines[index].number
        raw = self.lines[index].raw
        quote = raw[column]
        position = column + 1
        pieces: list[_Piece] = []
        current = _Piece()
        while True:
            while position < len(raw):
                char = raw[position]
                if char == quote and quote == "'" and raw[position + 1 : position + 2] == "'":
                    current.add("'", escaped=True)
                    position += 2
                elif char == quote:
                    self.check_tail(raw[position + 1 :], self.lines[index].number, "a string")
                    pieces.append(current)
                    return _fold_quoted(pieces), index + 1
                elif char == "\\" and quote == '"':
                    if position + 1 == len(raw.rstrip(" \t")) and position + 1 <= len(raw):
                        current.joined = True  # an escaped line break: nothing in its place
                        position = len(raw)
                    else:
                        text, position = _escape(raw, position, self.lines[index].number)
                        current.add(text, escaped=True)
                else:
                    current.add(char, escaped=False)
                    position += 1
            pieces.append(current)
            current = _Piece()
            index += 1
            if index == len(self.lines):
                raise FrontMatterError(f"line {opening}: a quoted string is never closed")
            below = self.lines[index]
            if below.raw.strip() and below.indent <= indent:
                raise FrontMatterError(
                    f"line {below.number}: the next line of a quoted string must be indented"
                )
            raw = below.raw
            position = 0

    @staticmethod
    def check_tail(tail: str, number: int, what: str) -> None:
        """Refuse anything but a comment after `what`, which ended before `tail`."""
        if tail.strip() and not re.match(r"[ \t]+#", tail):
            raise FrontMatterError(f"line {number}: text after {what}")

    def block_scalar(self, header: str, index: int, indent: int) -> tuple[str, int]:
        """A literal (|) or folded (>) block scalar: its header is on line `index`."""
        number = self.lines[index].number
        found = re.fullmatch(r"([|>])(?:([-+])([1-9])?|([1-9])([-+])?)?(?:[ \t]+#.*)?", header)
        if found is None:
            raise FrontMatterError(
                f"line {number}: unreadable block scalar header {header[:_SHOWN]!r}"
            )
        folded = found.group(1) == ">"
        chomp = found.group(2) or found.group(5) or ""
        digit = found.group(3) or found.group(4)
        content = indent + int(digit) if digit else None
        index += 1
        rows: list[tuple[str, bool]] = []  # (raw line, holds only spaces)
        leading = 0  # the most spaces on a blank line before the first line of text
        while index < len(self.lines):
            raw = self.lines[index].raw.rstrip("\r")
            spaces = len(raw) - len(raw.lstrip(" "))
            if not raw.strip():
                if content is None:
                    leading = max(leading, len(raw))
                rows.append((raw, True))
                index += 1
                continue
            if content is None:
                if spaces <= indent:
                    break
                content = spaces
                if leading > content:
                    raise FrontMatterError(
                        f"line {number}: a block scalar whose leading blank lines are indented "
                        "deeper than its text needs an indentation indicator (|2)"
                    )
            if spaces < content:
                if spaces > indent and not raw.lstrip().startswith("#"):
                    raise FrontMatterError(
                        f"line {self.lines[index].number}: less indented than its block scalar"
                    )
                break
            rows.append((raw, False))
            index += 1
        lines = _block_lines(rows, content)
        if index == len(self.lines) and not self.broken and lines and lines[-1] is None:
            lines.pop()  # spaces with no line break after them: not even an empty line
            index -= 1
        trailing = 0
        while lines and lines[-1] is None:
            lines.pop()
            trailing += 1
        index -= trailing  # blank lines after it are its own only for chomping
        return _block_text(lines, folded=folded, chomp=chomp, trailing=trailing), index


def _block_lines(rows: list[tuple[str, bool]], content: int | None) -> list[str | None]:
    """A block scalar's lines past its indentation `content`, None for each blank one.

    A line of spaces is content where it goes past the indentation ("  " of a literal) and
    content follows; after the last content, only where it goes past the indentation of the
    first line of text (as the `yaml` package reads it); otherwise it is blank.
    """
    texts = [raw for raw, spaces in rows if not spaces]
    if not texts or content is None:
        return [None] * len(rows)
    first = len(texts[0]) - len(texts[0].lstrip(" "))
    lines: list[str | None] = []
    followed = False  # by content
    for raw, spaces in reversed(rows):
        past = len(raw) > (content if followed else max(content, first))
        line = raw[content:] if not spaces or past else None
        followed = followed or line is not None
        lines.append(line)
    return lines[::-1]


@dataclass(slots=True)
class _Piece:
    """One line of a quoted scalar: its characters, each marked escaped (never trimmed) or not."""

    chars: list[tuple[str, bool]] = field(default_factory=list)
    joined: bool = False  # it ends with an escaped line break

    def add(self, text: str, *, escaped: bool) -> None:
        self.chars.extend((char, escaped) for char in text)

    def text(self, *, left: bool, right: bool) -> str:
        chars = self.chars
        start, end = 0, len(chars)
        if left:
            while start < end and chars[start][0] in " \t" and not chars[start][1]:
                start += 1
        if right and not self.joined:
            while end > start and chars[end - 1][0] in " \t" and not chars[end - 1][1]:
                end -= 1
        return "".join(char for char, _ in chars[start:end])


def _fold_quoted(pieces: list[_Piece]) -> str:
    """Join the lines of a quoted scalar as YAML folds them (7.3.1, 7.3.2)."""
    last = len(pieces) - 1
    out: list[str] = []
    blanks = 0
    for number, piece in enumerate(pieces):
        text = piece.text(left=number > 0, right=number < last)
        if 0 < number < last and not text and not piece.joined:
            blanks += 1
            continue
        if number > 0 and not pieces[number - 1 - blanks].joined:
            out.append("\n" * blanks if blanks else " ")
        out.append(text)
        blanks = 0
    return "".join(out)


def _block_text(lines: list[str | None], *, folded: bool, chomp: str, trailing: int) -> str:
    """A block scalar's value from its lines (None: blank), its style and chomping (8.1)."""
    out: list[str] = []
    read = False  # some content line was seen
    more_indented = False
    blanks = 0
    for line in lines:
        if line is None or not line:
            blanks += 1
            continue
        if not folded:
            out.append("\n" * (blanks + 1 if read else blanks))
        elif line[0] in " \t":
            more_indented = True
            out.append("\n" * (blanks + 1 if read else blanks))
        elif more_indented:
            more_indented = False
            out.append("\n" * (blanks + 1))
        elif blanks == 0:
            out.append(" " if read else "")
        else:
            out.append("\n" * blanks)
        out.append(line)
        read = True
        blanks = 0
    blanks += trailing
    if chomp == "+":
        out.append("\n" * (blanks + 1 if read else blanks))
    elif chomp == "" and read:
        out.append("\n")
    return "".join(out)


def _escape(raw: str, position: int, number: int) -> tuple[str, int]:
    """The character an escape at `position` (the backslash) stands for, and what follows it."""
    code = raw[position + 1]
    if code in _ESCAPES:
        return _ESCAPES[code], position + 2
    width = _HEX_ESCAPES.get(code)
    digits = raw[position + 2 : position + 2 + width] if width else ""
    if width is None or len(digits) != width or not re.fullmatch(r"[0-9a-fA-F]+", digits):
        raise FrontMatterError(f"line {number}: unknown escape \\{code}")
    value = int(digits, 16)
    if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
        raise FrontMatterError(f"line {number}: \\{code}{digits} is no character")
    return chr(value), position + 2 + width


def _is_item(text: str) -> bool:
    return text == "-" or text.startswith(("- ", "-\t"))


def _key_split(text: str, number: int) -> tuple[str, str] | None:
    """("key", "rest") of a "key: rest" line; None when the line is not a mapping entry."""
    if text[:1] in "\"'":
        flow = _Flow(text, number)
        try:
            key = flow.node()
        except FrontMatterError:
            return None  # a quoted value that goes on over the next lines
        after = text[flow.position :]
        if not re.match(r":(?:[ \t]|$)", after):
            return None
        return str(key), after[1:].strip()
    found = re.search(r":(?:[ \t]|$)", text)
    if found is None or text[:1] in "[{":
        return None
    key = text[: found.start()].rstrip()
    if not key or re.search(r"[ \t]#", key):
        return None
    _check_start(key, number)
    return key, text[found.end() :].strip()


def _check_start(text: str, number: int) -> None:
    """Refuse a plain scalar (or key) that starts with an indicator (YAML 1.2, 7.3.3)."""
    first = text[0]
    if first in "?-:" and text[1:2] not in ("", " ", "\t"):
        return  # "?x", "-2", ":x" are plain
    if first in _INDICATORS:
        raise FrontMatterError(f"line {number}: {_INDICATORS[first]} is not read here")
    if first in "|>\"'[]{},#-:":
        raise FrontMatterError(f"line {number}: {first!r} cannot start a plain value here")


def _plain_text(text: str, number: int, *, first: bool = True) -> str:
    """A plain scalar's text on one line, without a trailing comment; refused if not plain.

    `first`: the scalar's first line, which may not start with an indicator; the lines after
    it may.
    """
    if first:
        _check_start(text, number)
    found = re.search(r"[ \t]#", text)
    plain = (text[: found.start()] if found else text).rstrip()
    if re.search(r":(?:[ \t]|$)", plain):
        raise FrontMatterError(
            f"line {number}: ': ' inside a value; quote the value to keep it as text"
        )
    return plain


def _resolve(text: str, number: int) -> Any:
    """A plain scalar's value under the YAML 1.2 core schema."""
    if text in _CONSTANTS:
        return _CONSTANTS[text]
    for pattern, convert in _NUMBERS:
        if pattern.fullmatch(text):
            return convert(text)
    if _NON_FINITE.fullmatch(text):
        raise FrontMatterError(f"line {number}: {text} has no JSON form; quote it for a string")
    return text


class _Flow:
    """A flow collection or a quoted scalar written on one line."""

    def __init__(self, text: str, number: int) -> None:
        self.text = text
        self.number = number
        self.position = 0
        self.depth = 0

    def fail(self, what: str) -> FrontMatterError:
        shown = self.text if len(self.text) <= _SHOWN else self.text[:_SHOWN] + "..."
        return FrontMatterError(f"line {self.number}: {what} in {shown!r}")

    def parse(self) -> tuple[Any, int]:
        value = self.node()
        return value, self.position

    def spaces(self) -> None:
        while self.position < len(self.text) and self.text[self.position] == " ":
            self.position += 1

    def node(self) -> Any:
        self.spaces()
        if self.position >= len(self.text):
            raise self.fail("a value is missing")
        char = self.text[self.position]
        if char in "[{":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.fail(f"collections nested more than {MAX_DEPTH} levels deep")
            try:
                return self.collection("]" if char == "[" else "}")
            finally:
                self.depth -= 1
        if char in "\"'":
            return self.quoted(char)
        return self.plain()

    def collection(self, close: str) -> Any:
        self.position += 1
        items: list[Any] = []
        pairs: dict[str, Any] = {}
        while True:
            self.spaces()
            if self.position >= len(self.text):
                raise self.fail("an unclosed flow collection (write it on one line)")
            if self.text[self.position] == close:
                self.position += 1
                return pairs if close == "}" else items
            start = self.position
            value = self.node()
            self.spaces()
            if close == "}" or self.text[self.position : self.position + 1] == ":":
                if self.text[self.position : self.position + 1] != ":":
                    raise self.fail("a flow mapping entry without ':'")
                self.position += 1
                key = value if isinstance(value, str) else self.text[start : self.position - 1]
                key = key.strip()
                entry = self.node() if self.peek() not in (",", close) else None
                if close == "}":
                    if key in pairs:
                        raise self.fail(f"duplicate key {key[:_SHOWN]!r}")
                    pairs[key] = entry
                else:
                    items.append({key: entry})
            else:
                items.append(value)
            following = self.peek()
            if following == ",":
                self.position += 1
            elif not following:
                raise self.fail("an unclosed flow collection (write it on one line)")
            elif following != close:
                raise self.fail("expected ',' or the collection's end")

    def peek(self) -> str:
        self.spaces()
        return self.text[self.position : self.position + 1]

    def quoted(self, quote: str) -> str:
        out: list[str] = []
        self.position += 1
        while self.position < len(self.text):
            char = self.text[self.position]
            if char == quote:
                if quote == "'" and self.text[self.position + 1 : self.position + 2] == "'":
                    out.append("'")
                    self.position += 2
                    continue
                self.position += 1
                return "".join(out)
            if quote == '"' and char == "\\":
                if self.position + 1 >= len(self.text):
                    break
                text, self.position = _escape(self.text, self.position, self.number)
                out.append(text)
                continue
            out.append(char)
            self.position += 1
        raise self.fail("an unterminated string")

    def plain(self) -> Any:
        start = self.position
        while self.position < len(self.text):
            char = self.text[self.position]
            following = self.text[self.position + 1 : self.position + 2]
            if char in ",[]{}" or (char == ":" and following in ("", " ", ",", "]", "}")):
                break
            if char == "#" and self.text[self.position - 1] == " ":
                raise self.fail("a comment inside a flow collection")
            self.position += 1
        text = self.text[start : self.position].strip()
        if not text:
            raise self.fail("an empty entry")
        _check_start(text, self.number)
        return _resolve(text, self.number)
