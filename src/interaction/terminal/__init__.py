"""A terminal UI provider over prompt_toolkit (extra ``[terminal]``).

``TerminalProvider`` asks inline, one question at a time, with arrow keys, toggles, a
free-text "Other" field, skip and back, a strip of a batch's questions and a review
before sending, and a plan-review screen; see docs/terminal.md.
"""

try:
    import prompt_toolkit  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.terminal needs prompt_toolkit: pip install "interaction-seam[terminal]"'
    ) from exc

from ._provider import TerminalProvider as TerminalProvider

__all__ = ["TerminalProvider"]
