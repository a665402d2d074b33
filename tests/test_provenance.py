"""Provenance: its checks, its wire member, its display, and what it does not take part in."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import pickle
from datetime import UTC, datetime, timedelta, timezone, tzinfo

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

import interaction
from interaction import (
    AskSuspended,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    Provenance,
    UserInteractionError,
    check_request,
    request_digest,
    wire,
)
from interaction.display import ProvenanceView, asked_ago, present
from interaction.testing import ScriptedProvider

QUESTION = AskUserQuestionItem("q", "Proceed?")
MOMENT = datetime(2026, 12, 5, 7, 50, 1, 123000, tzinfo=UTC)
FULL = Provenance("deploy-bot", "build-7", "run-42", "deploy", MOMENT)


def _refusal(provenance: object) -> tuple[str, str, str | None]:
    request = AskUserQuestionRequest([QUESTION], provenance=provenance)  # type: ignore[arg-type]
    with pytest.raises(UserInteractionError) as caught:
        check_request(request)
    return caught.value.code, caught.value.message, caught.value.path


# ---------------------------------------------------------------------------- the value


def test_a_provenance_is_a_standard_frozen_slotted_dataclass() -> None:
    assert dataclasses.is_dataclass(Provenance)
    assert [f.name for f in dataclasses.fields(Provenance)] == [
        "source",
        "host",
        "session",
        "tool",
        "asked_at",
    ]
    assert Provenance() == Provenance(None, None, None, None, None)
    assert not hasattr(FULL, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        FULL.source = "other"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(FULL)) == FULL
    assert copy.deepcopy(FULL) == FULL


def test_asked_at_is_kept_in_utc_to_the_millisecond() -> None:
    plus_two = timezone(timedelta(hours=2))
    moment = datetime(2026, 12, 5, 9, 50, 1, 123456, tzinfo=plus_two)
    asked_at = Provenance(asked_at=moment).asked_at
    assert asked_at == datetime(2026, 12, 5, 7, 50, 1, 123000, tzinfo=UTC)
    assert asked_at is not None
    assert asked_at.tzinfo is UTC
    naive = datetime(2026, 12, 5, 7, 50)  # kept as given, for ask() to refuse
    assert Provenance(asked_at=naive).asked_at is naive


def test_a_request_carries_its_provenance_and_ask_hands_it_to_the_provider() -> None:
    async def scenario() -> None:
        provider = ScriptedProvider()
        with interaction.provide(provider):
            await interaction.ask(AskUserQuestionRequest([QUESTION], provenance=FULL))
        (seen,) = provider.requests
        assert seen.provenance is FULL

    asyncio.run(scenario())


def test_provenance_takes_no_part_in_equality_hash_or_digest() -> None:
    plain = AskUserQuestionRequest([QUESTION])
    later = AskUserQuestionRequest(
        [QUESTION], provenance=Provenance("bot", asked_at=MOMENT + timedelta(minutes=5))
    )
    assert plain == later
    assert hash(plain) == hash(later)
    assert request_digest(plain) == request_digest(later)


def test_a_suspended_ask_pickles_with_its_provenance() -> None:
    suspended = AskSuspended(AskUserQuestionRequest([QUESTION], key="k", provenance=FULL))
    restored = pickle.loads(pickle.dumps(suspended))
    assert restored.request.provenance == FULL
    assert restored.digest == suspended.digest


# ---------------------------------------------------------------------------- the checks


def test_a_full_provenance_passes_the_checks() -> None:
    request = AskUserQuestionRequest([QUESTION], provenance=FULL)
    assert check_request(request) is request


@pytest.mark.parametrize(
    ("provenance", "path", "problem"),
    [
        (Provenance(source="a\x1b[2Jb"), "provenance.source", "contains control character"),
        (Provenance(host="a\nb"), "provenance.host", "contains control character"),
        (Provenance(session="\u202eevil"), "provenance.session", "bidirectional"),
        (Provenance(tool=""), "provenance.tool", "must not be empty"),
        (Provenance(tool="\u200b"), "provenance.tool", "invisible characters"),
        (Provenance(source="x" * 201), "provenance.source", "longer than 200 characters"),
        (Provenance(host=3), "provenance.host", "expected a string, got int"),  # type: ignore[arg-type]
        (Provenance(asked_at="now"), "provenance.asked_at", "expected a datetime, got str"),  # type: ignore[arg-type]
        (
            Provenance(asked_at=datetime(2026, 1, 1)),
            "provenance.asked_at",
            "must be timezone-aware",
        ),
        (
            Provenance(asked_at=datetime.min.replace(tzinfo=timezone(timedelta(hours=1)))),
            "provenance.asked_at",
            "is out of range in UTC",
        ),
    ],
)
def test_a_bad_provenance_is_a_bad_request_naming_the_field(
    provenance: Provenance, path: str, problem: str
) -> None:
    code, message, where = _refusal(provenance)
    assert code == ErrorCode.BAD_REQUEST
    assert where == path
    assert message.startswith(f"{path}: ")
    assert problem in message


def test_a_provenance_that_is_not_one_is_named() -> None:
    assert _refusal({"source": "bot"}) == (
        ErrorCode.BAD_REQUEST,
        "provenance: expected a Provenance, got dict",
        "provenance",
    )


def test_a_time_zone_that_raises_is_a_bad_request_not_a_crash() -> None:
    class Broken(tzinfo):
        def utcoffset(self, dt: datetime | None) -> timedelta:
            raise RuntimeError("no")

        def dst(self, dt: datetime | None) -> timedelta:
            raise RuntimeError("no")

        def tzname(self, dt: datetime | None) -> str:
            raise RuntimeError("no")

    broken = Provenance(asked_at=datetime(2026, 1, 1, tzinfo=Broken()))
    assert _refusal(broken) == (
        ErrorCode.BAD_REQUEST,
        "provenance.asked_at: reading its time zone raised RuntimeError",
        "provenance.asked_at",
    )


def test_the_provenance_is_checked_before_an_empty_batch() -> None:
    request = AskUserQuestionRequest([], provenance=Provenance(source=""))
    with pytest.raises(UserInteractionError) as caught:
        check_request(request)
    assert caught.value.code == ErrorCode.BAD_REQUEST


# ---------------------------------------------------------------------------- the wire

WIRE = {
    "questions": [{"id": "q", "question": "Proceed?"}],
    "provenance": {
        "source": "deploy-bot",
        "host": "build-7",
        "session": "run-42",
        "tool": "deploy",
        "askedAt": "2026-12-05T07:50:01.123Z",
    },
}


def test_the_wire_carries_provenance_as_an_optional_camel_case_member() -> None:
    request = AskUserQuestionRequest([QUESTION], provenance=FULL)
    assert wire.encode_request(request) == WIRE
    assert wire.encode_request(AskUserQuestionRequest([QUESTION])) == {
        "questions": [{"id": "q", "question": "Proceed?"}]
    }
    assert wire.encode_request(
        AskUserQuestionRequest([QUESTION], provenance=Provenance(source="bot"))
    ) == {"questions": [{"id": "q", "question": "Proceed?"}], "provenance": {"source": "bot"}}
    jsonschema.Draft202012Validator(wire.REQUEST_SCHEMA).validate(WIRE)


@pytest.mark.parametrize("form", ["text", "parsed", "subclass"])
def test_both_decoding_paths_read_the_provenance(form: str) -> None:
    class Dict(dict[str, object]):
        pass

    data: object = {
        "text": json.dumps(WIRE),
        "parsed": WIRE,
        "subclass": Dict(WIRE),  # a dict subclass goes the detailed way
    }[form]
    assert wire.decode_request(data).provenance == FULL


def test_asked_at_with_an_offset_is_read_as_utc() -> None:
    data = {"questions": WIRE["questions"], "provenance": {"askedAt": "2026-12-05T09:50:01+02:00"}}
    provenance = wire.decode_request(data).provenance
    assert provenance == Provenance(asked_at=datetime(2026, 12, 5, 7, 50, 1, tzinfo=UTC))
    assert wire.encode_provenance(provenance) == {"askedAt": "2026-12-05T07:50:01.000Z"}


AT = "provenance.askedAt"


@pytest.mark.parametrize(
    ("member", "message"),
    [
        ("bot", "provenance: expected an object, got string"),
        ({"source": 3}, "provenance.source: expected a string, got number"),
        ({"host": ""}, "provenance.host: must not be empty"),
        ({"tool": "a\u0007"}, "provenance.tool: contains control character U+0007"),
        (
            {"askedAt": "yesterday"},
            "provenance.askedAt: not an ISO 8601 date and time: 'yesterday'",
        ),
        (
            {"askedAt": "2026-12-05T07:50:01"},
            "provenance.askedAt: has no time zone (write Z for UTC)",
        ),
        (
            {"askedAt": "2026-12-05T07:50:01Z" + " " * 30},
            "provenance.askedAt: longer than 40 characters",
        ),
        ({"askedAt": "0001-01-01T00:00:00+01:00"}, "provenance.askedAt: is out of range in UTC"),
        ({"session": "s" * 201}, "provenance.session: longer than 200 characters"),
    ],
)
def test_a_bad_provenance_member_is_a_located_bad_request(member: object, message: str) -> None:
    for data in ({"questions": WIRE["questions"], "provenance": member},):
        for form in (data, json.dumps(data)):
            with pytest.raises(UserInteractionError) as caught:
                wire.decode_request(form)
            assert caught.value.code == ErrorCode.BAD_REQUEST
            assert caught.value.message.startswith(message)


def test_a_question_fault_is_named_before_a_provenance_fault() -> None:
    data = {"questions": [{"id": "", "question": "?"}], "provenance": {"host": ""}}
    with pytest.raises(UserInteractionError) as caught:
        wire.decode_request(data)
    assert caught.value.path == "questions[0].id"


def test_a_typescript_reader_that_knows_no_provenance_still_reads_the_request() -> None:
    # A TypeScript UI ignores members it does not know: the questions are as before.
    encoded = wire.encode_request(AskUserQuestionRequest([QUESTION], provenance=FULL))
    without = {k: v for k, v in encoded.items() if k != "provenance"}
    assert wire.decode_request(without) == wire.decode_request(encoded)


TEXT = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Cf", "Zl", "Zp")), min_size=1, max_size=200
).filter(lambda s: s.strip() != "")


@given(
    source=st.none() | TEXT,
    host=st.none() | TEXT,
    session=st.none() | TEXT,
    tool=st.none() | TEXT,
    asked_at=st.none()
    | st.datetimes(
        min_value=datetime(1970, 1, 1),  # hypothesis takes naive bounds
        max_value=datetime(9000, 1, 1),
        timezones=st.just(UTC),
    ),
)
def test_any_checked_provenance_round_trips_through_the_wire(
    source: str | None,
    host: str | None,
    session: str | None,
    tool: str | None,
    asked_at: datetime | None,
) -> None:
    provenance = Provenance(source, host, session, tool, asked_at)
    request = AskUserQuestionRequest([QUESTION], provenance=provenance)
    check_request(request)
    encoded = wire.encode_request(request)
    jsonschema.Draft202012Validator(wire.REQUEST_SCHEMA).validate(encoded)
    assert wire.decode_request(json.dumps(encoded)).provenance == provenance


# ---------------------------------------------------------------------------- the display

HOSTILE = "\x1b]0;pwned\x07<b>x</b>\n"


def test_present_shows_the_provenance_escaped_to_one_line() -> None:
    provenance = Provenance(f"bot{HOSTILE}", f"h{HOSTILE}", f"s{HOSTILE}", f"t{HOSTILE}", MOMENT)
    view = present(AskUserQuestionRequest([QUESTION], provenance=provenance)).provenance
    escaped = "\\x1b]0;pwned\\x07<b>x</b>\\x0a"
    assert view == ProvenanceView(
        f"bot{escaped}", f"h{escaped}", f"s{escaped}", f"t{escaped}", MOMENT
    )
    assert present(AskUserQuestionRequest([QUESTION])).provenance is None


def test_the_summary_is_one_line_of_the_parts_that_are_set() -> None:
    now = MOMENT + timedelta(minutes=3, seconds=59)
    view = present(AskUserQuestionRequest([QUESTION], provenance=FULL)).provenance
    assert view is not None
    assert (
        view.summary(now)
        == "deploy-bot on build-7 · session run-42 · tool deploy · asked 3 min ago"
    )
    host_only = ProvenanceView(None, "build-7", None, None, None)
    assert host_only.summary(now) == "on build-7"
    assert ProvenanceView(None, None, None, None, None).summary(now) == ""


@pytest.mark.parametrize(
    ("elapsed", "words"),
    [
        (timedelta(seconds=-30), "asked just now"),
        (timedelta(seconds=59), "asked just now"),
        (timedelta(seconds=60), "asked 1 min ago"),
        (timedelta(minutes=59, seconds=59), "asked 59 min ago"),
        (timedelta(hours=1), "asked 1 h ago"),
        (timedelta(hours=47, minutes=59), "asked 47 h ago"),
        (timedelta(hours=48), "asked 2 days ago"),
    ],
)
def test_asked_ago_words_whole_units(elapsed: timedelta, words: str) -> None:
    assert asked_ago(MOMENT, MOMENT + elapsed) == words


def test_the_view_json_carries_the_provenance_for_the_page() -> None:
    data = present(AskUserQuestionRequest([QUESTION], provenance=FULL)).to_json()
    assert data["provenance"] == {
        "source": "deploy-bot",
        "host": "build-7",
        "session": "run-42",
        "tool": "deploy",
        "askedAt": "2026-12-05T07:50:01.123Z",
    }
    assert present(AskUserQuestionRequest([QUESTION])).to_json()["provenance"] is None
