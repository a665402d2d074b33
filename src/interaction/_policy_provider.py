""":class:`PolicyProvider`: the rules first, then the provider it wraps, and its timeout."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Sequence
from typing import Final, Literal, TypeAlias

from ._core import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    PermissionIntent,
    UserInteractionError,
    UserInteractionProvider,
)
from ._rules import Matcher, MemoryRuleStore, Rule, RuleStore, exact_pattern, matcher_of, new_rule
from ._timeout_policy import TimeoutPolicy, timeout_override
from .decisions import Decision, listening, report_decision


class _Index:
    """A store's rules, filed so that an ask looks only at those that may match.

    By tool: the rules for any input, those with an exact pattern (by the text) or a prefix
    (by the text: an input's candidates are the input itself and its every part before a
    space), and the globs; the tool ``*``'s rules are looked at for every tool. Each
    candidate is still checked by its matcher, its source and its session, as
    :func:`matches` does, so the index only leaves out rules that cannot match.
    """

    __slots__ = ("any_tool", "exact", "prefix", "rules", "scan")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = rules
        self.exact: dict[tuple[str, str], list[tuple[Rule, Matcher]]] = {}
        self.prefix: dict[tuple[str, str], list[tuple[Rule, Matcher]]] = {}
        self.scan: dict[str, list[tuple[Rule, Matcher]]] = {}
        self.any_tool: list[tuple[Rule, Matcher]] = []
        for rule in rules:
            matcher = matcher_of(rule.pattern)
            entry = (rule, matcher)
            if rule.tool == "*":
                self.any_tool.append(entry)
            elif matcher.kind == "exact":
                self.exact.setdefault((rule.tool, matcher.text), []).append(entry)
            elif matcher.kind == "prefix":
                self.prefix.setdefault((rule.tool, matcher.text), []).append(entry)
            else:  # any input, or a glob
                self.scan.setdefault(rule.tool, []).append(entry)

    def candidates(self, tool: str, summary: str) -> list[tuple[Rule, Matcher]]:
        found = [*self.scan.get(tool, ()), *self.exact.get((tool, summary), ()), *self.any_tool]
        prefix = self.prefix
        if prefix:
            found += prefix.get((tool, summary), ())
            space = summary.find(" ")
            while space >= 0:
                found += prefix.get((tool, summary[:space]), ())
                space = summary.find(" ", space + 1)
        return found


_Permission: TypeAlias = tuple[AskUserQuestionItem, PermissionIntent]
_UNSEEN: Final = object()
MEMO_SIZE: Final = 4096
"""How many inputs' decisions a policy provider remembers between changes of its rules."""


class PolicyProvider:
    """A provider that answers from rules first, then asks ``inner``.

    ``rules`` holds the persisted (and CLI-added ``once``) rules; ``session_rules`` (a
    fresh :class:`MemoryRuleStore` by default) the rules of this session, named
    ``session`` (a random id by default). ``source`` is where this host's requests come
    from, matched against rules that name one. ``always`` is the scope of the rule an
    "allow always" answer makes (``persisted`` or ``session``). ``timeout`` is the
    default :class:`TimeoutPolicy` (:func:`timeout_for` overrides it per ask).
    ``answerer`` names who answers through ``inner`` (kept as the new rule's author).
    """

    def __init__(
        self,
        inner: UserInteractionProvider,
        rules: RuleStore,
        *,
        source: str | None = None,
        session: str | None = None,
        session_rules: RuleStore | None = None,
        always: Literal["session", "persisted"] = "persisted",
        timeout: TimeoutPolicy | None = None,
        answerer: str | None = None,
    ) -> None:
        if always not in ("session", "persisted"):
            raise ValueError(f"always is session or persisted, got {always!r}")
        self.inner = inner
        self.rules = rules
        self.session_rules: RuleStore = (
            MemoryRuleStore() if session_rules is None else session_rules
        )
        self.source = source
        self.session = session if session is not None else f"s{secrets.token_hex(8)}"
        self.always = always
        self.timeout = timeout
        self.answerer = answerer
        self._indexes: list[_Index | None] = [None, None]
        self._answers: dict[tuple[str, str], AskUserQuestionAnswer] = {}
        self._memo: tuple[
            _Index | None, _Index | None, dict[tuple[str, str, str | None], Rule | None]
        ] = (
            None,
            None,
            {},
        )

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        permissions = _permissions(request)
        if not permissions:
            return await self._ask_inner(request)
        provenance = request.provenance
        source = (provenance.source if provenance is not None else None) or self.source
        decided = await self._decide(permissions, source)
        if decided is not None:
            return decided
        answer = await self._ask_inner(request)
        await self._remember(permissions, answer, source)
        return answer

    async def decide(self, tool: str, summary: str, source: str | None = None) -> Rule | None:
        """The rule that decides ``tool`` with ``summary`` from ``source`` (this provider's
        by default) now, deny first; ``None`` when none does."""
        indexes = (await self._index(0), await self._index(1))
        return self._decided(indexes, tool, summary, source or self.source)

    def _decided(
        self, indexes: tuple[_Index, _Index], tool: str, summary: str, source: str | None
    ) -> Rule | None:
        """:meth:`_looked_up`, remembered until the rules change (an index is rebuilt)."""
        memo = self._memo
        if memo[0] is not indexes[0] or memo[1] is not indexes[1] or len(memo[2]) >= MEMO_SIZE:
            memo = self._memo = (indexes[0], indexes[1], {})
        key = (tool, summary, source)
        decided = memo[2].get(key, _UNSEEN)
        if decided is _UNSEEN:
            decided = memo[2][key] = self._looked_up(indexes, tool, summary, source)
        return decided  # type: ignore[return-value]  # a Rule or None, never _UNSEEN here

    def _looked_up(
        self, indexes: tuple[_Index, _Index], tool: str, summary: str, source: str | None
    ) -> Rule | None:
        session = self.session
        allow: Rule | None = None
        for index in indexes:
            if not index.rules:
                continue
            for rule, matcher in index.candidates(tool, summary):
                if (
                    (rule.source is None or rule.source == source)
                    and (rule.scope != "session" or rule.session == session)
                    and matcher(summary, rule.effect)
                ):
                    if rule.effect == "deny":
                        return rule
                    if allow is None or (allow.scope == "once" and rule.scope != "once"):
                        allow = rule  # a lasting rule answers before a once-rule is spent
        return allow

    async def _index(self, which: int) -> _Index:
        """The index of the session's rules (0) or the store's (1), rebuilt when they change."""
        store = self.session_rules if which == 0 else self.rules
        rules = await store.rules()
        cached = self._indexes[which]
        if cached is None or cached.rules is not rules:
            cached = self._indexes[which] = _Index(rules)
        return cached

    async def _decide(
        self, permissions: list[_Permission], source: str | None
    ) -> AskUserQuestionAnswer | None:
        while True:
            indexes = (await self._index(0), await self._index(1))
            chosen = []
            for _, intent in permissions:
                rule = self._decided(indexes, intent.tool, intent.summary, source)
                if rule is None:
                    return None
                chosen.append(rule)
            for rule in chosen:
                if rule.scope == "once" and not await self._take(rule):
                    break  # another ask spent it first: decide again
            else:
                break
        if listening():
            report_decision(Decision("policy", rule=",".join(rule.id for rule in chosen)))
        if len(chosen) == 1:  # the common case: one answer object per id and label, reused
            (question, intent), rule = permissions[0], chosen[0]
            key = (question.id, intent.allow if rule.effect == "allow" else intent.deny)
            answer = self._answers.get(key)
            if answer is None:
                if len(self._answers) >= MEMO_SIZE:
                    self._answers.clear()
                answer = self._answers[key] = AskUserQuestionAnswer(
                    [AskUserQuestionAnswerItem(key[0], (key[1],))]
                )
            return answer
        return AskUserQuestionAnswer(
            [
                AskUserQuestionAnswerItem(
                    question.id, (intent.allow if rule.effect == "allow" else intent.deny,)
                )
                for (question, intent), rule in zip(permissions, chosen, strict=True)
            ]
        )

    async def _take(self, rule: Rule) -> bool:
        return await self.session_rules.take(rule.id) or await self.rules.take(rule.id)

    async def _ask_inner(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        policy = timeout_override() or self.timeout
        if policy is None or policy.seconds is None:
            return await self.inner.ask(request)
        deadline = asyncio.timeout(policy.seconds)
        try:
            async with deadline:
                return await self.inner.ask(request)
        except TimeoutError:
            if not deadline.expired():
                raise
        answer = policy.answer(request)
        report_decision(Decision("timeout"))
        return answer

    async def _remember(
        self, permissions: list[_Permission], answer: AskUserQuestionAnswer, source: str | None
    ) -> None:
        chosen = {item.id: item for item in answer.answers}
        for question, intent in permissions:
            item = chosen.get(question.id)
            if (
                item is None
                or intent.allow_always is None
                or item.custom is not None
                or tuple(item.selected) != (intent.allow_always,)
            ):
                continue
            try:
                rule = new_rule(
                    f"{intent.tool}({exact_pattern(intent.summary)})",
                    source=source,
                    scope=self.always,
                    session=self.session if self.always == "session" else None,
                    created_by=self.answerer,
                )
            except UserInteractionError:  # an input past MAX_SPEC: allowed once, not kept
                continue
            store = self.session_rules if self.always == "session" else self.rules
            await store.add(rule)


def _permissions(request: AskUserQuestionRequest) -> list[_Permission]:
    """The request's questions as permissions, or none unless every one is a permission."""
    found = []
    for question in request.questions:
        intent = question.intent
        if type(intent) is not PermissionIntent or question.multi_select:
            return []
        found.append((question, intent))
    return found
