"""The message search grammar, parsed once in Python into a `Query` that each engine compiles.

Words must all match (stemmed by the engine), `"an exact phrase"`, `-word` and `-"a phrase"`
exclude, and operators narrow: `from:@Name` (a person or an agent, by display name; quotes
for names with spaces), `in:#channel`, `has:file|image|link`, `is:thread`,
`before:YYYY-MM-DD`, `after:YYYY-MM-DD`. User text never reaches an engine as syntax: each
word and phrase is handed over as a quoted string or a bound parameter, so FTS5's own syntax
(`NEAR(`, `*`, `^`, `content:`, `AND`) is taken literally. Whatever does not parse raises
`Invalid` naming the part at fault.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date

from palaver.errors import Invalid

MAX_QUERY_CHARS = 500
MAX_TERMS = 16
"""Words and phrases together, excluded ones included: enough for any search a person types."""

HAS_VALUES = ("file", "image", "link")
IS_VALUES = ("thread",)
OPERATORS = ("from", "in", "has", "is", "before", "after")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Terms:
    """A word (one entry) or a quoted phrase (its words in order), as the user typed them."""

    words: tuple[str, ...]
    phrase: bool = False

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class Query:
    """A parsed search: `required` must all match, no `excluded` may; the operators narrow."""

    required: tuple[Terms, ...] = ()
    excluded: tuple[Terms, ...] = ()
    authors: tuple[str, ...] = ()
    """Display names (any of them); a person's or an agent's."""
    channels: tuple[str, ...] = ()
    """Channel names (any of them)."""
    has: frozenset[str] = field(default_factory=frozenset)
    """Each of `file`, `image`, `link` named must hold."""
    in_thread: bool = False
    before: date | None = None
    """Messages created before this day (UTC) began."""
    after: date | None = None
    """Messages created on this day (UTC) or later."""

    @property
    def has_text(self) -> bool:
        return bool(self.required)


def searchable(word: str) -> bool:
    """Whether the word holds a character the engines index (a letter, digit or private-use
    character, as FTS5's unicode61 tokenizer keeps): `*`, `(` or `-` alone are not."""
    return any(c.isalnum() or unicodedata.category(c) == "Co" for c in word)


def parse(text: str) -> Query:
    """The query `text` as a `Query`; `Invalid` for anything malformed, naming it."""
    if len(text) > MAX_QUERY_CHARS:
        raise Invalid(f"The query is longer than {MAX_QUERY_CHARS} characters.", field="q")
    # NUL ends a string for FTS5 and is refused by PostgreSQL; invisible format characters
    # (a zero-width space, a soft hyphen) separate words for FTS5 and join them for
    # PostgreSQL: all are separators here, so that both engines read the same words.
    text = "".join(" " if c == "\x00" or unicodedata.category(c) == "Cf" else c for c in text)
    parts = _Parts()
    pos = 0
    n = len(text)
    while pos < n:
        if text[pos].isspace():
            pos += 1
            continue
        start = pos
        negated = text[pos] == "-"
        if negated:
            pos += 1
            if pos >= n or text[pos].isspace():
                raise Invalid(
                    "A lone '-' excludes nothing: write it before a word, as in -draft.",
                    field="q",
                )
        if text[pos] == '"':
            phrase, pos = _quoted(text, pos, start)
            words = tuple(phrase.split())
            if any(searchable(w) for w in words):
                parts.add(Terms(words, phrase=True), negated)
            continue
        end = pos
        while end < n and not text[end].isspace() and text[end] != '"':
            end += 1
        token = text[pos:end]
        name, colon, value = token.partition(":")
        if colon and name.lower() in OPERATORS:
            if negated:
                raise Invalid(
                    f"'{text[start:end]}': only words and phrases can be excluded with '-'.",
                    field="q",
                )
            if not value and end < n and text[end] == '"':
                value, end = _quoted(text, end, start)
            elif value and end < n and text[end] == '"':
                # `from:@"Ada Lovelace"`: the quote starts after the operator's sigil.
                quoted, end = _quoted(text, end, start)
                value += quoted
            parts.operator(name.lower(), value, text[start:end])
            pos = end
            continue
        if end < n and text[end] == '"':
            # A quote inside a word (`say"hi"`) opens a phrase of its own; the word ends here.
            pass
        if searchable(token):
            parts.add(Terms((token,)), negated)
        pos = end
    return parts.query()


def _quoted(text: str, pos: int, start: int) -> tuple[str, int]:
    """The text between the quote at `pos` and the next one, and the position after it."""
    close = text.find('"', pos + 1)
    if close < 0:
        shown = text[start:][:40]
        raise Invalid(f"Unbalanced quote: '{shown}' has no closing '\"'.", field="q")
    return text[pos + 1 : close], close + 1


class _Parts:
    def __init__(self) -> None:
        self.required: list[Terms] = []
        self.excluded: list[Terms] = []
        self.authors: list[str] = []
        self.channels: list[str] = []
        self.has: set[str] = set()
        self.in_thread = False
        self.before: date | None = None
        self.after: date | None = None
        self.operators = 0

    def add(self, terms: Terms, negated: bool) -> None:
        (self.excluded if negated else self.required).append(terms)
        if len(self.required) + len(self.excluded) > MAX_TERMS:
            raise Invalid(f"A query holds at most {MAX_TERMS} words and phrases.", field="q")

    def operator(self, name: str, value: str, shown: str) -> None:
        value = value.strip()
        self.operators += 1
        if name == "from":
            who = value.removeprefix("@").strip()
            if not who:
                raise Invalid(f"'{shown}' needs a name, as in from:@Ada.", field="q")
            self.authors.append(who)
        elif name == "in":
            where = value.removeprefix("#").strip()
            if not where:
                raise Invalid(f"'{shown}' needs a channel, as in in:#general.", field="q")
            self.channels.append(where)
        elif name == "has":
            if value.lower() not in HAS_VALUES:
                raise Invalid(f"'{shown}': has: takes {', '.join(HAS_VALUES)}.", field="q")
            self.has.add(value.lower())
        elif name == "is":
            if value.lower() not in IS_VALUES:
                raise Invalid(f"'{shown}': is: takes {', '.join(IS_VALUES)}.", field="q")
            self.in_thread = True
        else:
            day = _day(value, shown)
            if getattr(self, name) is not None:
                raise Invalid(f"'{shown}': {name}: is given twice.", field="q")
            setattr(self, name, day)

    def query(self) -> Query:
        if not self.required and not self.excluded and not self.operators:
            raise Invalid("The query has no word or operator to search for.", field="q")
        if not self.required and not self.operators:
            raise Invalid(
                "The query only excludes: add a word or an operator, as in report -draft.",
                field="q",
            )
        if self.before is not None and self.after is not None and self.after >= self.before:
            raise Invalid("after: must be a day earlier than before:.", field="q")
        return Query(
            required=tuple(self.required),
            excluded=tuple(self.excluded),
            authors=tuple(dict.fromkeys(self.authors)),
            channels=tuple(dict.fromkeys(self.channels)),
            has=frozenset(self.has),
            in_thread=self.in_thread,
            before=self.before,
            after=self.after,
        )


def _day(value: str, shown: str) -> date:
    if _DATE.fullmatch(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise Invalid(f"'{shown}': a day is written YYYY-MM-DD, as in 2026-11-01.", field="q")
