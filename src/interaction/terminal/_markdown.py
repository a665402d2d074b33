"""Enough Markdown to read a plan on a terminal: headings, emphasis, code, lists, quotes.

The text has already had its control characters escaped; this only styles it. Source lines
stay lines (a plan's line breaks are usually meant); list items and quotes wrap under
their own text. Anything not recognised is shown as written.
"""

from __future__ import annotations

import re
from typing import Final

from ._text import Fragments, Line

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
RULE_WIDTH: Final = 24
TAB_SIZE: Final = 4


def markdown(text: str, style: str = "") -> list[Line]:
    """``text`` as styled lines; ``style`` is the base style of its prose."""
    lines: list[Line] = []
    fenced = False
    for source in text.expandtabs(TAB_SIZE).split("\n"):
        if _FENCE.match(source):
            fenced = not fenced
            continue
        if fenced:
            lines.append(Line([(f"{style} class:md.code", source)], "  ", "  ", reflow=False))
        else:
            lines.append(_block(source, style))
    return lines


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
