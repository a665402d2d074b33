"""hypothesis strategies for valid requests and answers."""

from __future__ import annotations

from hypothesis import strategies as st

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PermissionIntent,
    PlanReviewIntent,
    UnknownIntent,
)
from interaction._text_policy import is_blank, label_key

# Text without the characters ask() refuses; prose may also hold newlines and tabs.
_ALPHABET = st.characters(
    blacklist_categories=["Cc", "Cs"],
    blacklist_characters="\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
)
# Ids, labels and questions must show something: not only space or invisible characters.
line = st.text(_ALPHABET, min_size=1, max_size=12).filter(lambda s: not is_blank(s))
prose = st.text(st.one_of(_ALPHABET, st.sampled_from("\n\t")), min_size=1, max_size=30).filter(
    lambda s: not is_blank(s)
)


@st.composite
def questions(draw: st.DrawFn, qid: str) -> AskUserQuestionItem:
    labels = draw(st.lists(line, max_size=5, unique_by=label_key))
    options = [AskUserQuestionOption(label, draw(st.none() | prose)) for label in labels]
    detail = draw(st.none() | prose)
    multi_select = draw(st.booleans())
    intent: PlanReviewIntent | PermissionIntent | UnknownIntent | None = None
    if detail is not None and draw(st.booleans()):
        if len(labels) >= 2 and not multi_select and draw(st.booleans()):
            allow, deny, *rest = draw(st.permutations(labels))
            always = draw(st.sampled_from([None, *rest[:1]]))
            intent = PermissionIntent(draw(line), draw(line), allow, deny, always)
        elif labels and draw(st.booleans()):  # type: ignore[arg-type]  # hypothesis stub quirk
            intent = PlanReviewIntent(draw(st.sampled_from(labels)))
        else:
            kind = draw(line.filter(lambda k: k not in {"plan-review", "permission"}))
            intent = UnknownIntent(
                kind,
                draw(
                    st.dictionaries(
                        line.filter(lambda k: k != "kind"), st.integers() | line, max_size=2
                    )
                ),
            )
    return AskUserQuestionItem(
        qid,
        draw(prose),
        detail=detail,
        header=draw(st.none() | line),
        options=options,
        multi_select=multi_select,
        intent=intent,
    )


@st.composite
def requests(draw: st.DrawFn) -> AskUserQuestionRequest:
    ids = draw(st.lists(line, min_size=1, max_size=4, unique=True))
    return AskUserQuestionRequest([draw(questions(qid)) for qid in ids])


@st.composite
def answers(draw: st.DrawFn) -> AskUserQuestionAnswer:
    items = [
        AskUserQuestionAnswerItem(
            draw(line), draw(st.lists(line, max_size=3)), draw(st.none() | st.text(max_size=8))
        )
        for _ in range(draw(st.integers(0, 4)))
    ]
    return AskUserQuestionAnswer(items)
