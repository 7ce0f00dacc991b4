"""The `MessageSearch` port: one page of a parsed search, visibility filtered in the query.

Adapters (`sqlite.py`: FTS5; `postgres.py`: tsvector with GIN) compile a `Query` to their
engine; what every engine shares (the operators, who may read which channel, the cursor and
the snippet's form) lives here and in `narrowing.py`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from dataclasses import dataclass
from typing import Literal, Protocol

from sqlalchemy import Connection

from palaver.domain import Message
from palaver.errors import Invalid
from palaver.search.query import Query

Sort = Literal["relevance", "recent"]
RANKED_CANDIDATES = 1000
"""`relevance` ranks the newest this many matches (of the whole history when fewer match):
ranking every match of a common word among a million messages would cost far more than a
search may, and a chat's useful answers are rarely the oldest of thousands."""
SNIPPET_TOKENS = 24
"""Words around the match a snippet shows (FTS5's `snippet`, PostgreSQL's `MaxWords`)."""
PLAIN_SNIPPET_CHARS = 200
"""A snippet without a matched word (a search of operators only): the message's start."""
START, STOP = "\x01", "\x02"
"""What the engines put around a matched word, before escaping turns them into `<mark>`."""


@dataclass(frozen=True)
class Viewer:
    """Who searches: the owner reads every channel, anyone else the channels it is in."""

    user_id: str
    reads_everything: bool


@dataclass(frozen=True)
class Hit:
    message: Message
    channel_id: str
    channel_name: str
    channel_type: str
    snippet: str


@dataclass(frozen=True)
class Found:
    hits: list[Hit]
    next_cursor: str | None


@dataclass(frozen=True)
class Position:
    """Where a page starts: after `key` (an engine's own order key) for `recent`, at
    `offset` for `relevance`."""

    key: str | int | None = None
    offset: int = 0


class MessageSearch(Protocol):
    def search(
        self,
        conn: Connection,
        query: Query,
        viewer: Viewer,
        sort: Sort,
        limit: int,
        cursor: str | None,
        query_text: str,
    ) -> Found:
        """One page, best first (`relevance`) or newest first (`recent`)."""
        ...


def _fingerprint(query_text: str, sort: str) -> str:
    return hashlib.sha256(f"{sort}\0{query_text}".encode()).hexdigest()[:12]


def encode_cursor(query_text: str, sort: str, position: Position) -> str:
    body = {"q": _fingerprint(query_text, sort), "k": position.key, "o": position.offset}
    raw = json.dumps(body, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, query_text: str, sort: str) -> Position:
    """The position a cursor of this very search (same `q` and `sort`) names; `Invalid` for
    anything else, so that a cursor cannot be carried to another search."""
    if cursor is None:
        return Position()
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        body = json.loads(raw)
        key, offset = body["k"], body["o"]
        ok = (
            isinstance(body, dict)
            and body.get("q") == _fingerprint(query_text, sort)
            and (key is None or isinstance(key, str | int))
            and isinstance(offset, int)
            and offset >= 0
        )
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise Invalid("The cursor is not one this search answered.", field="cursor")
    return Position(key=key, offset=offset)


def escape_html(text: str) -> str:
    """`&`, `<`, `>` and `"` as entities: what PostgreSQL's adapter escapes before
    `ts_headline` too, so that both engines give the same snippet text."""
    return html.escape(text, quote=False).replace('"', "&quot;")


def marked(text: str, escaped: bool = False) -> str:
    """An engine's highlighted text as HTML: everything escaped (unless the engine was given
    escaped text already), each matched stretch (between `START` and `STOP`) in `<mark>`; a
    stray marker (the text's own) is dropped."""
    escape = (lambda t: t) if escaped else escape_html
    out: list[str] = []
    open_ = False
    for piece in _MARKERS.split(text):
        if piece == START:
            if not open_:
                out.append("<mark>")
                open_ = True
        elif piece == STOP:
            if open_:
                out.append("</mark>")
                open_ = False
        elif piece:
            out.append(escape(piece))
    if open_:
        out.append("</mark>")
    return "".join(out)


_MARKERS = re.compile(f"([{START}{STOP}])")


def plain_snippet(content: str) -> str:
    """The start of a message, escaped: the snippet of a search with no word to mark."""
    text = " ".join(content.split())
    if len(text) > PLAIN_SNIPPET_CHARS:
        text = text[:PLAIN_SNIPPET_CHARS].rstrip() + "…"
    return escape_html(text.replace(START, "").replace(STOP, ""))
