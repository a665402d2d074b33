"""The text policy: which characters a request may hold, and when two labels are the same.

Every string in a request comes from a model and is shown to a human, so the policy is
strict and in one place: controls, bidirectional overrides and lone surrogates are refused
(``UNSAFE``), text of only invisible characters is blank (``INVISIBLE``), and labels are
compared by ``label_key``. ``escape_controls`` shows the same ``UNSAFE`` set.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from ._errors import bad_request, type_name

__all__ = [
    "INVISIBLE",
    "SURROGATE",
    "UNSAFE",
    "UNSAFE_EXCEPT_LINES",
    "LazyPattern",
    "check_text",
    "describe_char",
    "is_blank",
    "label_key",
    "visible_text",
]


class LazyPattern:
    """A regular expression compiled when it is first used, with the two methods used here.

    Compiling these wide character classes took ~0.7 ms, a tenth of ``import interaction``,
    while the common text (ASCII) is checked with ``str`` methods and never needs them.
    """

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern: Final = pattern
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.pattern)
        return compiled

    def search(self, text: str) -> re.Match[str] | None:
        return self.compiled().search(text)

    def sub(self, repl: Callable[[re.Match[str]], str], text: str) -> str:
        return self.compiled().sub(repl, text)


# C0 and C1 controls and DEL, bidirectional embeddings/overrides/isolates, lone surrogates:
# refused in requests, and made visible by escape_controls. Prose may hold newline and tab.
UNSAFE: Final = LazyPattern("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
UNSAFE_EXCEPT_LINES: Final = LazyPattern(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
SURROGATE: Final = LazyPattern("[\ud800-\udfff]")
# Default-ignorable code points, format (Cf) characters and the blank fillers (Hangul
# fillers, the braille blank U+2800): nothing a reader can see. A text made only of them is
# blank, and labels that differ only by them are look-alikes.
INVISIBLE: Final = LazyPattern(
    "[\u00ad\u034f\u061c\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
    "\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u2800\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
_ZWJ: Final = "\u200d"


def describe_char(char: str) -> str:
    code = ord(char)
    if 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        kind = "bidirectional override character"
    elif 0xD800 <= code <= 0xDFFF:
        kind = "unpaired surrogate"
    else:
        kind = "control character"
    return f"contains {kind} U+{code:04X}"


def _is_emoji_joint(text: str, index: int) -> bool:
    """Whether the ZWJ at ``index`` joins two pictographs (as in 👨\u200d👩\u200d👧)."""
    before = text[index - 1] if index > 0 else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    if before == "\ufe0f" and index > 1:  # emoji presentation selector before the joiner
        before = text[index - 2]
    import unicodedata  # imported when needed: ~0.2 ms that ASCII text never pays

    return (
        bool(before)
        and bool(after)
        and unicodedata.category(before) in ("So", "Sk")
        and unicodedata.category(after) == "So"
    )


def visible_text(text: str) -> str:
    """``text`` without its invisible characters, keeping the joiners inside emoji."""
    # No invisible character is ASCII.
    if text.isascii() or INVISIBLE.search(text) is None:
        return text
    return INVISIBLE.sub(
        lambda m: m.group() if m.group() == _ZWJ and _is_emoji_joint(text, m.start()) else "",
        text,
    )


def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing: only white space and invisible characters."""
    return not text.strip() or not visible_text(text).strip()


def check_text(
    value: object, path: str, *, block: bool = False, optional: bool = False, nonblank: bool = False
) -> None:
    """A string without forbidden characters; ``block`` text may hold newlines and tabs.

    Only an exact ``str`` is a string here: a subclass could lie about its contents.
    """
    if value is None and optional:
        return
    if type(value) is not str:
        raise bad_request(path, f"expected a string, got {type_name(value)}")
    if nonblank and not value.strip():
        raise bad_request(path, "must not be empty")
    found = (UNSAFE_EXCEPT_LINES if block else UNSAFE).search(value)
    if found:
        raise bad_request(path, describe_char(found.group()))
    if nonblank and is_blank(value):
        raise bad_request(path, "must not be empty: it has only invisible characters")


def label_key(label: str) -> str:
    """The form in which two labels count as the same.

    Compatibility form, case, surrounding white space and invisible characters do not count.
    """
    if label.isascii():  # NFKC and visible_text keep ASCII as it is; casefold is lower
        return label.lower().strip()
    import unicodedata  # imported when needed: ~0.2 ms that ASCII labels never pay

    return visible_text(unicodedata.normalize("NFKC", label)).casefold().strip()
