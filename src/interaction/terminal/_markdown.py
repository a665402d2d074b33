"""Enough Markdown to read a plan on a terminal: headings, emphasis, code, lists, quotes,
tables.

The text has already had its control characters escaped; this only styles it. Source lines
stay lines (a plan's line breaks are usually meant); list items and quotes wrap under
their own text, code under its own indentation; a table's columns line up (one line per
row, ``header: cell`` pairs, when it is wider than the terminal). Anything not recognised
is shown as written.
"""

from __future__ import annotations

import re
from typing import Final

from prompt_toolkit.utils import get_cwidth

from ._text import Fragments, Line, plain

__all__ = ["markdown"]

_FENCE: Final = re.compile(r"^\s*(```|~~~)")
_HEADING: Final = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_RULE: Final = re.compile(r"^\s{0,3}([-*_])(?:\s*\1){2,}\s*$")
_BULLET: Final = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_NUMBERED: Final = re.compile(r"^(\s*)(\d{1,9}[.)])\s+(.*)$")
_QUOTE: Final = re.compile(r"^\s{0,3}>\s?(.*)$")
_INLINE: Final = re.compile(
    r"`(?P<code>[^`]+)`"
    r"|\*\*(?P<strong>\S(?:.*?\S)?)\*\*"
    r"|__(?P<strong_>\S(?:.*?\S)?)__"
    r"|\*(?P<em>[^\s*](?:[^*]*?[^\s*])?)\*"
    r"|(?<!\w)_(?P<em_>[^\s_](?:[^_]*?[^\s_])?)_(?!\w)"
    r"|\[(?P<text>[^\]]+)\]\((?P<url>[^)\s]+)\)"
)
_TABLE_ROW: Final = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE: Final = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_CELL_BREAK: Final = re.compile(r"(?<!\\)\|")
RULE_WIDTH: Final = 24
TAB_SIZE: Final = 4
CODE_MARGIN: Final = "  "
COLUMN_GAP: Final = " │ "


def markdown(text: str, style: str = "", width: int | None = None) -> list[Line]:
    """``text`` as styled lines; ``style`` is the base style of its prose.

    ``width``, the cells the lines will be wrapped to, decides whether a table is drawn
    as columns, and caps how far a wrapped code line hangs.
    """
    lines: list[Line] = []
    fenced = False
    sources = text.expandtabs(TAB_SIZE).split("\n")
    at = 0
    while at < len(sources):
        source = sources[at]
        at += 1
        if _FENCE.match(source):
            fenced = not fenced
        elif fenced:
            lines.append(_code(source, style, width))
        elif _TABLE_ROW.match(source) and at < len(sources) and _TABLE_RULE.match(sources[at]):
            rule, body = sources[at], []
            at += 1
            while at < len(sources) and _TABLE_ROW.match(sources[at]):
                body.append(sources[at])
                at += 1
            lines.extend(_table(source, rule, body, style, width))
        else:
            lines.append(_block(source, style))
    return lines


def _code(source: str, style: str, width: int | None) -> Line:
    """A code line, cut at the width; its wrapped rows start under its own indentation."""
    lead = len(source) - len(source.lstrip(" "))
    if width is not None:  # leave at least half the row for the code itself
        lead = max(0, min(lead, width // 2 - len(CODE_MARGIN)))
    hang = CODE_MARGIN + " " * lead
    return Line([(f"{style} class:md.code", source)], CODE_MARGIN, hang, reflow=False)


def _cells(row: str) -> list[str]:
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in _CELL_BREAK.split(inner)]


def _table(head: str, rule: str, body: list[str], style: str, width: int | None) -> list[Line]:
    """A Markdown table as aligned columns, or as ``header: cell`` lines when too wide."""
    names = _cells(head)
    count = len(names)
    aligns = [
        "^" if cell.startswith(":") and cell.endswith(":") else ">" if cell.endswith(":") else "<"
        for cell in (_cells(rule) + ["-"] * count)[:count]
    ]
    heading = [_inline(name, f"{style} class:md.h") for name in names]
    rows = [[_inline(cell, style) for cell in (_cells(row) + [""] * count)[:count]] for row in body]
    widths = [
        max(get_cwidth(plain(row[column])) for row in [heading, *rows]) for column in range(count)
    ]
    total = sum(widths) + get_cwidth(COLUMN_GAP) * (count - 1)
    if width is not None and total > width:
        return [_record(heading, row, style) for row in rows]
    lines = [Line(_columns(heading, widths, aligns, style), reflow=False)]
    ruled = "─┼─".join("─" * column for column in widths)
    lines.append(Line([(f"{style} class:md.rule", ruled)], reflow=False))
    lines.extend(Line(_columns(row, widths, aligns, style), reflow=False) for row in rows)
    return lines


def _columns(cells: list[Fragments], widths: list[int], aligns: list[str], style: str) -> Fragments:
    out: Fragments = []
    last = len(cells) - 1
    for column, (cell, cells_wide, align) in enumerate(zip(cells, widths, aligns, strict=True)):
        if column:
            out.append((f"{style} class:md.rule", COLUMN_GAP))
        spare = cells_wide - get_cwidth(plain(cell))
        before = {"<": 0, ">": spare, "^": spare // 2}[align]
        after = 0 if column == last else spare - before
        out.extend([(style, " " * before), *cell, (style, " " * after)])
    return [(name, text) for name, text in out if text]


def _record(heading: list[Fragments], row: list[Fragments], style: str) -> Line:
    """One table row on a line of its own: ``• name: cell · name: cell``."""
    out: Fragments = []
    for column, (name, cell) in enumerate(zip(heading, row, strict=True)):
        if column:
            out.append((f"{style} class:md.rule", " · "))
        out.extend([*name, (style, ": "), *cell])
    return Line(out, "• ", "  ")


def _block(source: str, style: str) -> Line:
    if match := _HEADING.match(source):
        level = "class:md.h1" if len(match.group(1)) == 1 else "class:md.h"
        return Line(_inline(match.group(2), f"{style} {level}"))
    if _RULE.match(source):
        return Line([(f"{style} class:md.rule", "─" * RULE_WIDTH)])
    if match := _BULLET.match(source):
        indent = " " * len(match.group(1)) + "• "
        return Line(_inline(match.group(2), style), indent, " " * len(indent))
    if match := _NUMBERED.match(source):
        indent = f"{' ' * len(match.group(1))}{match.group(2)} "
        return Line(_inline(match.group(3), style), indent, " " * len(indent))
    if match := _QUOTE.match(source):
        return Line(_inline(match.group(1), f"{style} class:md.quote"), "│ ", "│ ")
    stripped = source.lstrip(" ")
    indent = " " * (len(source) - len(stripped))
    return Line(_inline(stripped, style), indent, indent)


def _inline(text: str, style: str) -> Fragments:
    fragments: Fragments = []
    at = 0
    for match in _INLINE.finditer(text):
        if match.start() > at:
            fragments.append((style, text[at : match.start()]))
        kind = match.lastgroup
        if kind == "url":
            fragments.append((f"{style} class:md.link", match.group("text")))
            fragments.append((f"{style} class:md.url", f" <{match.group('url')}>"))
        else:
            assert kind is not None
            name = kind.rstrip("_")
            fragments.append((f"{style} class:md.{name}", match.group(kind)))
        at = match.end()
    if at < len(text):
        fragments.append((style, text[at:]))
    return fragments
