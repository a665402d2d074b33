"""The prompt_toolkit application that asks one batch: layout, keys and style."""

from __future__ import annotations

import math
import time
from bisect import bisect_right
from collections.abc import Callable
from functools import partial
from typing import Final

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition, FilterOrBool
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import (
    BufferControl,
    ConditionalContainer,
    FormattedTextControl,
    HSplit,
    Layout,
    VSplit,
    Window,
)
from prompt_toolkit.layout.processors import Processor, Transformation, TransformationInput
from prompt_toolkit.output import Output
from prompt_toolkit.styles import Style

from .._core import AskUserQuestionAnswer, cancelled_error, escape_controls
from ..flow import BatchFlow
from ._view import Screen, Viewport, joined, paint

__all__ = ["ESC_DELAY", "STYLE", "Escaped", "build_app"]

ESC_DELAY: Final = 0.5
"""Seconds after which a lone Esc acts, in every mode."""

STYLE: Final = Style.from_dict(
    {
        "title": "bold",
        "provenance": "ansibrightblack",
        "question": "bold",
        "md.h1": "bold underline",
        "md.h": "bold",
        "md.code": "ansicyan",
        "md.strong": "bold",
        "md.em": "italic",
        "md.link": "underline",
        "md.url": "ansibrightblack",
        "md.quote": "italic",
        "md.rule": "ansibrightblack",
        "cursor": "ansicyan bold",
        "current": "bold",
        "badge": "ansigreen bold",
        "description": "ansibrightblack",
        "chosen": "ansigreen",
        "more": "ansibrightblack italic",
        "notice": "ansiyellow",
        "hint": "ansibrightblack",
        "action": "",
        "action.focused": "reverse bold",
        "summary.ok": "ansigreen bold",
        "summary.stop": "ansired bold",
        "summary.skip": "ansiyellow bold",
        "strip.current": "bold",
        "strip.name": "",
        "strip.answered": "ansigreen bold",
        "strip.skipped": "ansiyellow bold",
        "strip.open": "ansibrightblack",
        "countdown": "ansiyellow",
        "permission": "ansicyan",
        "role.allow": "ansigreen",
        "role.allow-always": "ansigreen bold",
        "role.deny": "ansired",
    }
)


class Escaped(Processor):
    """The text field as text: every control character the user typed or pasted, the
    bidirectional ones too, shows as its escape (``\\u202e``), as model text does."""

    def apply_transformation(self, transformation_input: TransformationInput) -> Transformation:
        fragments = transformation_input.fragments
        text = "".join(fragment[1] for fragment in fragments)
        if escape_controls(text, keep_newlines=False) == text:
            return Transformation(fragments)
        shown: StyleAndTextTuples = []
        starts = [0]  # where each character of the text starts on the screen
        for style, part, *_ in fragments:
            for char in part:
                visible = escape_controls(char, keep_newlines=False)
                shown.append((style, visible))
                starts.append(starts[-1] + len(visible))
        end = len(starts) - 1

        def to_display(at: int) -> int:
            return starts[at] if at <= end else starts[end] + at - end

        def to_source(at: int) -> int:
            return end + at - starts[end] if at >= starts[end] else bisect_right(starts, at) - 1

        return Transformation(shown, to_display, to_source)


def build_app(
    flow: BatchFlow, input: Input, output: Output, deadline: float | None = None
) -> Application[AskUserQuestionAnswer]:
    """An inline application that ends with ``flow``'s answer, or ``ASK_CANCELLED``.

    With a ``deadline`` (a ``time.monotonic()`` instant) it repaints every second, and
    the flow's ``seconds_left`` counts down to it.
    """
    viewport = Viewport()
    painted: dict[int, Screen] = {}

    def screen() -> Screen:
        counter = app.render_counter
        if counter not in painted:  # one paint per render, shared by the three controls
            if deadline is not None:
                flow.seconds_left = math.ceil(deadline - time.monotonic())
            size = output.get_size()
            painted.clear()
            painted[counter] = paint(flow, viewport, size.columns, size.rows)
        return painted[counter]

    def typed(buffer: Buffer) -> None:
        if flow.mode == "text":
            flow.set_text(buffer.text)

    buffer = Buffer(multiline=False, on_text_changed=typed)
    above = Window(
        FormattedTextControl(lambda: joined(screen().above), focusable=True, show_cursor=False),
        dont_extend_height=True,
        wrap_lines=True,
        always_hide_cursor=True,
    )
    field = Window(
        BufferControl(buffer, input_processors=[Escaped()]),
        dont_extend_height=True,
        wrap_lines=True,
    )
    prompt = Window(
        FormattedTextControl(lambda: joined([screen().field_prompt])),
        dont_extend_width=True,
        dont_extend_height=True,
    )
    below = Window(
        FormattedTextControl(lambda: joined(screen().below)),
        dont_extend_height=True,
        wrap_lines=True,
    )
    typing = Condition(lambda: flow.mode == "text" and not flow.reviewing)
    layout = Layout(
        HSplit([above, ConditionalContainer(VSplit([prompt, field]), filter=typing), below]),
        focused_element=above,
    )

    def sync() -> None:
        """Bring the application in line with the flow after a key."""
        if flow.done:
            app.exit(result=flow.answer())
        elif flow.dismissed:
            app.exit(exception=cancelled_error())
        elif flow.mode == "text" and not flow.confirming and not flow.reviewing:
            if buffer.text != flow.draft.text:
                text = flow.draft.text
                buffer.set_document(Document(text, len(text)), bypass_readonly=True)
            layout.focus(field)
        else:
            layout.focus(above)

    app: Application[AskUserQuestionAnswer] = Application(
        layout=layout,
        key_bindings=_keys(flow, viewport, sync),
        style=STYLE,
        full_screen=False,
        erase_when_done=True,
        mouse_support=False,
        include_default_pygments_style=False,
        input=input,
        output=output,
        refresh_interval=None if deadline is None else 1.0,
    )
    # A lone Esc is known once the input has waited ``ttimeoutlen`` (half a second) for
    # the rest of a sequence; prompt_toolkit's default ``timeoutlen`` then waits a second
    # more in a text field (Esc starts its Meta bindings) and turns a key typed meanwhile
    # into Alt-key. A Meta key arrives as ESC and its key together, so none is needed.
    app.ttimeoutlen = ESC_DELAY
    app.timeoutlen = 0.0
    sync()
    return app


def _keys(flow: BatchFlow, viewport: Viewport, sync: Callable[[], None]) -> KeyBindings:
    """The keys; in a batch (``flow.review``) Tab, Shift-Tab, ← and → move between questions.

    Outside a batch Tab opens the "Other" field, as it always did; in a text field Tab goes
    back to the options, so in a batch ``o`` opens the field.
    """
    keys = KeyBindings()
    confirming = Condition(lambda: flow.confirming)
    reviewing = Condition(lambda: flow.reviewing) & ~confirming
    listing = Condition(lambda: flow.mode == "list" and not flow.reviewing) & ~confirming
    typing = Condition(lambda: flow.mode == "text" and not flow.reviewing) & ~confirming
    plan = Condition(lambda: flow.plan_review)
    multi = Condition(lambda: flow.multi)
    batch = Condition(lambda: flow.review)
    options = Condition(lambda: bool(flow.rows))

    def bind(*names: str, action: Callable[[], None], filter: FilterOrBool = ~confirming) -> None:
        def handler(event: KeyPressEvent) -> None:
            action()
            sync()

        for name in names:
            keys.add(name, filter=filter)(handler)

    bind("up", "k", action=lambda: flow.move(-1), filter=listing & ~plan)
    bind("down", "j", action=lambda: flow.move(1), filter=listing & ~plan)
    # A plan review's arrows scroll the plan; its buttons keep Left/Right.
    bind("up", "k", action=lambda: viewport.scroll_rows(-1), filter=listing & plan)
    bind("down", "j", action=lambda: viewport.scroll_rows(1), filter=listing & plan)
    bind("home", action=viewport.home, filter=listing & plan)
    bind("end", action=viewport.end, filter=listing & plan)
    bind("left", "h", action=lambda: flow.move(-1), filter=listing & plan)
    bind("right", "l", action=lambda: flow.move(1), filter=listing & plan)
    bind("left", "b", action=flow.back, filter=(listing & ~plan) | reviewing)
    bind("s-tab", action=flow.back)
    bind("right", action=flow.forward, filter=listing & ~plan & batch)
    bind("tab", action=flow.forward, filter=listing & batch)
    bind("tab", action=flow.forward, filter=typing & ~options & batch)
    bind("tab", action=flow.open_text, filter=listing & ~batch)
    bind("tab", action=flow.close_text, filter=typing & options)
    bind("o", action=flow.open_text, filter=listing)
    for digit in range(10):
        bind(str(digit), action=partial(flow.digit, digit), filter=listing)
    bind("enter", action=flow.enter, filter=listing | reviewing)
    bind("space", action=flow.toggle, filter=listing & multi)
    bind("enter", action=flow.submit_text, filter=typing)
    bind("s", action=flow.skip, filter=listing)
    bind("c-s", action=flow.skip)
    bind("pageup", action=lambda: viewport.scroll(-1))
    bind("pagedown", action=lambda: viewport.scroll(1))

    # Not eager: Alt-b, Alt-f, Alt-Backspace and Alt-arrows arrive as ESC
    # followed by a key, and must reach prompt_toolkit's Meta bindings to
    # edit text instead of dismissing the batch and every answer in it.
    bind("escape", action=flow.escape, filter=True)
    bind("c-c", "<sigint>", action=flow.interrupt, filter=True)
    # "Discard N answers? y/N": y discards, any other key keeps them.
    bind("y", "Y", action=flow.discard, filter=confirming)
    bind("<any>", action=flow.keep, filter=confirming)
    # Mouse reports are off (mouse_support=False), yet prompt_toolkit's own mouse
    # bindings stay loaded and crash on typed look-alikes (Ctrl-V Esc [31m reads as one);
    # these come last, so they win, and drop such input.
    for mouse in (Keys.Vt100MouseEvent, Keys.WindowsMouseEvent):
        keys.add(mouse)(_ignore)
    return keys


def _ignore(event: KeyPressEvent) -> None:
    """Nothing: for input that is no key of this UI."""
