"""The mention parser, checked on generated names and texts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from palaver.agents.mentions import mentioned
from palaver.domain import Agent

NOW = datetime(2026, 1, 1, tzinfo=UTC)
names = (
    st.text(
        alphabet=st.characters(categories=("L", "N"), include_characters=" -"),
        min_size=1,
        max_size=20,
    )
    .map(str.strip)
    .filter(lambda n: n and n[-1].isalnum())
)
filler = st.text(alphabet=st.characters(exclude_characters="@"), max_size=30)


def agent(agent_id: str, name: str) -> Agent:
    return Agent(agent_id, name, "🤖", "", "builtin/echo", [], "", True, NOW, NOW)


@given(name=names, before=filler, after=st.sampled_from(["", " ", ", ", "! ", ".\n"]))
def test_a_member_mentioned_by_name_is_found_whatever_the_case(
    name: str, before: str, after: str
) -> None:
    variant = name.swapcase()
    assume(variant.casefold() == name.casefold())
    member = agent("agent_1", name)
    text = f"{before} @{variant}{after}"
    assert mentioned(text, [member]) == [member]


@given(name=names, suffix=st.sampled_from(["x", "1", "_z"]))
def test_a_mention_must_end_at_a_non_word_character(name: str, suffix: str) -> None:
    member = agent("agent_1", name)
    assert mentioned(f"@{name}{suffix} hi", [member]) == []


@given(short=names, extra=names)
def test_the_longest_matching_name_wins(short: str, extra: str) -> None:
    long_name = f"{short} {extra}"
    small, large = agent("agent_1", short), agent("agent_2", long_name)
    assert mentioned(f"hey @{long_name} there", [small, large]) == [large]


@given(text=filler)
def test_text_without_at_signs_addresses_nobody(text: str) -> None:
    assert mentioned(text, [agent("agent_1", "Bob")]) == []


def test_ids_match_exactly_and_order_follows_first_mention() -> None:
    a, b = agent("agent_01AAA", "Ann"), agent("agent_01BBB", "Ben")
    assert mentioned("@agent_01BBB then @ann and @Ben again", [a, b]) == [b, a]
    assert mentioned("@agent_01BB partial id", [a, b]) == []
    assert mentioned("mail me at ann@Ben.com", [a, b]) == []


CASES = json.loads((Path(__file__).parent / "mention_cases.json").read_text(encoding="utf-8"))
"""The table the browser's parser is checked on too (web/src/lib/mentions.test.ts)."""


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: repr(c["text"]))
def test_the_shared_mention_cases(case: dict[str, Any]) -> None:
    members = [agent(f"agent_{key}", CASES["agents"][key]) for key in case["members"]]
    found = [a.id.removeprefix("agent_") for a in mentioned(case["text"], members)]
    assert found == case["want"]
