"""Finding the agents and people a message addresses.

`@Name` matches a member's name (an agent's or a person's) ignoring case, longest name first,
so `@Code Reviewer` wins over `@Code`; `@agent_...` or `@user_...` matches an id. A mention
ends at a non-word character. Anything else after `@` is plain text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, TypeVar

from palaver.domain import Agent, User

_WORD = re.compile(r"\w")


class _Named(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=_Named)


def mentioned(content: str, members: Sequence[N]) -> list[N]:
    """Members mentioned in `content`, in the order of their first mention, once each."""
    by_id = {a.id: a for a in members}
    names = sorted(members, key=lambda a: -len(a.name))
    found: list[N] = []
    i = content.find("@")
    while i != -1:
        start = i + 1
        if i > 0 and _WORD.match(content[i - 1]):
            i = content.find("@", start)
            continue
        match = _match_id(content, start, by_id) or _match_name(content, start, names)
        if match is not None and match not in found:
            found.append(match)
        i = content.find("@", start)
    return found


def _ends_word(text: str, end: int) -> bool:
    return end >= len(text) or _WORD.match(text[end]) is None


def _match_id(content: str, start: int, by_id: dict[str, N]) -> N | None:
    if not content.startswith(("agent_", "user_"), start):
        return None
    end = start
    while end < len(content) and _WORD.match(content[end]):
        end += 1
    return by_id.get(content[start:end])


def _match_name(content: str, start: int, members: list[N]) -> N | None:
    for member in members:
        end = _folded_end(content, start, member.name.casefold())
        if end is not None and _ends_word(content, end):
            return member
    return None


def _folded_end(content: str, start: int, folded_name: str) -> int | None:
    """Where `folded_name` ends in `content` from `start`, comparing case-folded text.

    Folding can change lengths ("ß" is "ss", as is "SS"), so the text is folded a character at
    a time until it is as long as the name."""
    folded = ""
    end = start
    while end < len(content) and len(folded) < len(folded_name):
        folded += content[end].casefold()
        end += 1
    return end if folded == folded_name else None


def mentioned_members(
    content: str, agents: Sequence[Agent], people: Sequence[User]
) -> tuple[list[Agent], list[User]]:
    """The agents and the people `content` mentions, in one pass, so that the longest name
    wins whoever bears it (`@Ada Lovelace` the person over `@Ada` the agent)."""
    members: list[Agent | User] = [*agents, *people]
    found = mentioned(content, members)
    return (
        [m for m in found if isinstance(m, Agent)],
        [m for m in found if isinstance(m, User)],
    )


def mentions_metadata(agents: Sequence[Agent], people: Sequence[User]) -> dict[str, list[str]]:
    """The `mentions` a message's metadata carries: who it names, in order."""
    return {"userIds": [p.id for p in people], "agentIds": [a.id for a in agents]}
