"""Styled lines and how they wrap: the text layer under the terminal view.

A :class:`Line` is a list of ``(style, text)`` fragments, as prompt_toolkit takes them,
with the indent of its first row and of the rows it wraps into. :func:`wrap` cuts a line
into rows no wider than the terminal, at spaces where it can, counting wide characters
as two cells, so a narrow terminal wraps rather than clips.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, TypeAlias

from prompt_toolkit.utils import get_cwidth

__all__ = ["Fragments", "Line", "clip", "fit", "plain", "wrap"]

Fragments: TypeAlias = list[tuple[str, str]]
"""``(style, text)`` pairs, text without newlines."""

_WORDS: Final = re.compile(r"\S+|\s+")


@dataclass(frozen=True, slots=True)
class Line:
    """One logical line: wrapped rows start with ``indent``, then with ``hang``.

    ``reflow=False`` (code) cuts at the width instead of between words.
    """

    fragments: Fragments
    indent: str = ""
    hang: str = ""
    reflow: bool = True


def plain(fragments: Fragments) -> str:
    return "".join(text for _, text in fragments)


def wrap(line: Line, width: int) -> list[Fragments]:
    """The rows ``line`` takes on a terminal ``width`` cells wide (at least one row)."""
    rows = _Rows(line, max(width, 1))
    for word in _words(line):
        if line.reflow and word[0][1].isspace():
            rows.space(*word[0])
            continue
        size = sum(get_cwidth(piece) for _, piece in word)
        if line.reflow and rows.used > rows.start and not rows.fits(size) and rows.fits_alone(size):
            rows.new_row()  # the word fits on a row of its own
        for style, whole in word:
            rows.put(style, whole)
    rows.rows.append(rows.row)
    return rows.rows


class _Rows:
    """The rows :func:`wrap` has filled, and the one it is filling."""

    __slots__ = ("hang", "line", "row", "rows", "start", "used", "width")

    def __init__(self, line: Line, width: int) -> None:
        self.line = line
        self.width = width
        self.rows: list[Fragments] = []
        self.row: Fragments = [("", line.indent)] if line.indent else []
        self.start = self.used = get_cwidth(line.indent)
        self.hang = get_cwidth(line.hang)

    def fits(self, size: int) -> bool:
        return self.used + size <= self.width

    def fits_alone(self, size: int) -> bool:
        return self.hang + size <= self.width

    def new_row(self) -> None:
        self.rows.append(self.row)
        self.row = [("", self.line.hang)] if self.line.hang else []
        self.start = self.used = self.hang

    def space(self, style: str, piece: str) -> None:
        """A run of space between words: a break where it does not fit."""
        size = get_cwidth(piece)
        if not self.fits(size):
            self.new_row()  # the break swallows the space it falls on
        elif self.used > self.start or not self.rows:
            self.row.append((style, piece))
            self.used += size

    def put(self, style: str, whole: str) -> None:
        """A piece of a word, cut across rows while it is too wide."""
        piece, size = whole, get_cwidth(whole)
        while piece and not self.fits(size):  # still too wide: cut it
            cut, cut_size = fit(piece, self.width - self.used)
            if not cut and self.used > self.start:
                self.new_row()
                continue
            if not cut:  # a character wider than the whole row
                cut, cut_size = piece[0], get_cwidth(piece[0])
            self.row.append((style, cut))
            self.used += cut_size
            piece, size = piece[len(cut) :], size - cut_size
            if piece:
                self.new_row()
        if piece:
            self.row.append((style, piece))
            self.used += size


def clip(rows: list[Fragments], count: int, width: int) -> list[Fragments]:
    """The first ``count`` rows of ``rows``; the last ends in ``…`` when rows were left out."""
    if len(rows) <= count:
        return rows
    last: Fragments = []
    used = 0
    for style, text in rows[count - 1]:
        piece, size = fit(text, width - 1 - used)
        if piece:
            last.append((style, piece))
            used += size
        if piece != text:
            break
    style = rows[count - 1][-1][0] if rows[count - 1] else ""
    return [*rows[: count - 1], [*last, (style, "…")]]


def _words(line: Line) -> Iterator[list[tuple[str, str]]]:
    """Words and runs of space, each piece with its style; code keeps whole fragments.

    A word's pieces may come from several fragments (``**bold**,`` or ``name: ``), so no
    row starts with the comma or colon that follows a styled word.
    """
    if not line.reflow:
        yield from ([(style, text)] for style, text in line.fragments if text)
        return
    word: list[tuple[str, str]] = []
    for style, text in line.fragments:
        for match in _WORDS.finditer(text):
            piece = match.group()
            if piece.isspace():
                if word:
                    yield word
                    word = []
                yield [(style, piece)]
            else:
                word.append((style, piece))
    if word:
        yield word


def fit(text: str, cells: int) -> tuple[str, int]:
    """The longest start of ``text`` that fits in ``cells``, and its width."""
    used = 0
    for index, char in enumerate(text):
        size = get_cwidth(char)
        if used + size > cells:
            return text[:index], used
        used += size
    return text, used
