"""Benchmark: message search (issue 23) over a large history, on SQLite and PostgreSQL.

The corpus: `--messages` messages (default 1,000,000) in 200 channels by 20 people and 4
agents, over one year, their text made by a word-bigram chain trained on the prose of
`bench/quality/docs` (real English: its word frequencies, stems and phrases, new sentences), a
few with links, uploads or in threads. Rows go in through the messages table itself, and the
index is built as the server builds it: SQLite's search backlog indexed after each batch of
rows (`store/search_backlog.py`), PostgreSQL's generated column.

Queries run through the adapter a request uses (`MessageSearch.search`, in one read
transaction: a page of 20 with snippets and the messages loaded), timed in this process, the
HTTP layer aside. Sets: single words (drawn by corpus frequency among all but the 100 most
frequent, which form a set of their own, `common_words`), two- and three-word phrases taken
from the corpus, operator queries
(`from:`, `in:`, `has:`, `is:thread`, dates, alone and with words), and the same words for a
guest who reads 5 channels. Each set is run for both orders (relevance, recent).

    python -m bench.bench_search --messages 100000 --engine sqlite
    python -m bench.bench_search --engine postgresql   # on a pgserver of its own
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import random
import re
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import Engine, create_engine, insert, text

from palaver.search.base import MessageSearch, Viewer
from palaver.search.postgres import PostgresMessageSearch
from palaver.search.query import parse
from palaver.search.sqlite import SqliteMessageSearch
from palaver.store import migrate, search_backlog
from palaver.store.db import _SqliteUnits
from palaver.store.tables.core import agents, channel_members, channels, messages, users
from palaver.store.urls import sync_url

RESULTS = Path(__file__).parent / "results"
DOCS = Path(__file__).parent / "quality" / "docs"
CHANNELS = 200
PEOPLE = 20
AGENTS = ("Researcher", "Writer", "Planner", "Critic")
GUEST_CHANNELS = 5
COMMON = 100
"""The corpus's most frequent words (the, of, and...): a set of their own, since people rarely
search for them; `words` draws from the rest by frequency."""
QUERIES = 200
BATCH = 5000
START = datetime(2025, 11, 1, tzinfo=UTC)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|[0-9]+|[.,;:!?]")


class Chain:
    """A word-bigram chain over real prose: new sentences in its words and frequencies."""

    def __init__(self, corpus: str, rng: random.Random) -> None:
        self.rng = rng
        self.next: dict[str, list[str]] = defaultdict(list)
        tokens = _WORD.findall(corpus)
        for a, b in itertools.pairwise(tokens):
            self.next[a].append(b)
        self.starts = [b for a, b in itertools.pairwise(tokens) if a == "."]
        self.words = Counter(t.lower() for t in tokens if t[0].isalpha())

    def sentence(self, limit: int) -> str:
        word = self.rng.choice(self.starts)
        out = [word]
        while len(out) < limit and word not in (".", "!", "?"):
            following = self.next.get(word)
            if not following:
                break
            word = self.rng.choice(following)
            out.append(word)
        text_ = " ".join(out)
        return re.sub(r" ([.,;:!?])", r"\1", text_)

    def message(self) -> str:
        sentences = [self.sentence(self.rng.randint(6, 28)) for _ in range(self.rng.randint(1, 3))]
        return " ".join(sentences)


def corpus_text() -> str:
    return "\n".join(p.read_text() for p in sorted(DOCS.iterdir()) if p.is_file())


def fill(engine: Engine, total: int, rng: random.Random, chain: Chain) -> dict[str, Any]:
    """The people, agents, channels and `total` messages; answers what the queries need."""
    now = START
    people = [(f"user_p{i:03d}", f"Person {i}") for i in range(PEOPLE)]
    guest = ("user_guest", "Guest")
    agent_ids = [(f"agent_{i}", name) for i, name in enumerate(AGENTS)]
    channel_ids = [f"ch_{i:04d}" for i in range(CHANNELS)]
    with engine.begin() as conn:
        conn.execute(
            insert(users),
            [
                {"id": uid, "name": name, "role": role, "key_hash": None, "created_at": now}
                for uid, name, role in [
                    ("user_owner", "Owner", "owner"),
                    (*guest, "guest"),
                    *[(u, n, "member") for u, n in people],
                ]
            ],
        )
        conn.execute(
            insert(agents),
            [
                {
                    "id": aid,
                    "name": name,
                    "name_key": name.lower(),
                    "avatar": "🤖",
                    "description": "",
                    "model": "builtin/echo",
                    "tools": [],
                    "soul": "",
                    "auto_inject_memory": False,
                    "created_at": now,
                    "updated_at": now,
                }
                for aid, name in agent_ids
            ],
        )
        conn.execute(
            insert(channels),
            [
                {
                    "id": c,
                    "name": f"channel-{i}",
                    "type": "group",
                    "created_at": now,
                    "updated_at": now,
                }
                for i, c in enumerate(channel_ids)
            ],
        )
        members = [
            {"channel_id": c, "user_id": uid, "position": n}
            for c in channel_ids
            for n, uid in enumerate(["user_owner", *(u for u, _ in people)])
        ]
        members += [
            {"channel_id": c, "user_id": guest[0], "position": 99}
            for c in channel_ids[:GUEST_CHANNELS]
        ]
        conn.execute(insert(channel_members), members)
    span = timedelta(days=365).total_seconds()
    started = time.perf_counter()
    roots: list[str] = []
    for start in range(0, total, BATCH):
        rows = []
        for n in range(start, min(start + BATCH, total)):
            created = START + timedelta(seconds=span * n / total)
            content = chain.message()
            kind = "text"
            roll = rng.random()
            if roll < 0.03:
                content += f" https://example.com/{rng.choice(list(chain.words))}"
            elif roll < 0.04:
                content += f" /uploads/2026-01/{rng.choice(list(chain.words))}.png"
                kind = "image"
            thread_id = rng.choice(roots) if roots and rng.random() < 0.1 else None
            by_agent = rng.random() < 0.15
            message_id = f"msg_{n:010d}"
            rows.append(
                {
                    "id": message_id,
                    "channel_id": rng.choice(channel_ids),
                    "agent_id": rng.choice(agent_ids)[0] if by_agent else None,
                    "user_id": None if by_agent else rng.choice(people)[0],
                    "content": content,
                    "type": kind,
                    "metadata": {},
                    "created_at": created,
                    "thread_id": thread_id,
                }
            )
            if rng.random() < 0.02:
                roots = [*roots[-200:], message_id]
        with engine.begin() as conn:
            conn.execute(insert(messages), rows)
            if conn.dialect.name == "sqlite":
                search_backlog.index_all(conn)
        if (start // BATCH) % 20 == 0:
            print(f"  {start + len(rows):,} messages", flush=True)
    filled = time.perf_counter() - started
    return {"fill_seconds": round(filled, 1), "messages": total}


def query_sets(chain: Chain, rng: random.Random) -> dict[str, list[str]]:
    ranked = [w for w, _ in chain.words.most_common() if "'" not in w]
    common, words = ranked[:COMMON], [w for w in ranked[COMMON:] if len(w) > 2]
    weights = [chain.words[w] for w in words]
    single = rng.choices(words, weights=weights, k=QUERIES)
    function_words = rng.choices(common, k=QUERIES)
    phrases = []
    while len(phrases) < QUERIES:
        sentence = chain.sentence(12).rstrip(".!?,;:").split()
        if len(sentence) >= 3:
            at = rng.randrange(0, len(sentence) - 1)
            phrases.append('"' + " ".join(sentence[at : at + rng.choice((2, 3))]) + '"')
    operators = []
    for n in range(QUERIES):
        word = single[n]
        operators.append(
            rng.choice(
                [
                    f"from:@Researcher after:2026-{rng.randint(1, 9):02d}-01",
                    f'from:@"Person {rng.randrange(PEOPLE)}" {word}',
                    f"in:#channel-{rng.randrange(CHANNELS)} {word}",
                    f"in:#channel-{rng.randrange(CHANNELS)}",
                    "has:link",
                    f"has:image {word}",
                    f"is:thread {word}",
                    f"{word} before:2026-03-01",
                    f"{word} -{rng.choice(words[:50])}",
                ]
            )
        )
    return {
        "words": single,
        "common_words": function_words,
        "phrases": phrases,
        "operators": operators,
    }


def timed(
    engine: Engine, adapter: MessageSearch, queries: list[str], viewer: Viewer, sort: str
) -> dict[str, float]:
    took: list[float] = []
    found = 0
    with engine.connect() as conn:
        for q in queries:
            parsed = parse(q)
            started = time.perf_counter()
            with conn.begin():
                page = adapter.search(conn, parsed, viewer, sort, 20, None, q)  # type: ignore[arg-type]
            took.append((time.perf_counter() - started) * 1000)
            found += len(page.hits)
    took.sort()
    return {
        "median_ms": round(statistics.median(took), 2),
        "p99_ms": round(took[min(len(took) - 1, int(len(took) * 0.99))], 2),
        "max_ms": round(took[-1], 2),
        "mean_hits": round(found / len(queries), 1),
    }


def engines(kind: str, folder: Path) -> Iterator[tuple[str, MessageSearch]]:
    if kind == "sqlite":
        yield f"sqlite+aiosqlite:///{folder / 'bench.db'}", SqliteMessageSearch()
        return
    import pgserver

    # Stopped, not deleted, at the end: a kept folder is started again by the next run.
    server: Any = pgserver.get_server(folder / "pgdata", cleanup_mode="stop")  # type: ignore[attr-defined]
    try:
        url: str = server.get_uri("bench")
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'bench'").fetchone():
                conn.execute("CREATE DATABASE bench")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield url, PostgresMessageSearch()
    finally:
        server.cleanup()


def run(kind: str, total: int, seed: int, keep: Path | None) -> dict[str, Any]:
    rng = random.Random(seed)
    chain = Chain(corpus_text(), rng)
    with contextlib.ExitStack() as stack:
        base = keep or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        folder = base / f"{kind}-{total}-{seed}"
        filled = folder / "filled.json"
        if folder.exists() and not filled.exists():
            raise SystemExit(f"{folder} holds a fill that did not finish: remove it first")
        folder.mkdir(parents=True, exist_ok=True)
        for url, adapter in engines(kind, folder):
            migrate.upgrade(url)
            engine = create_engine(sync_url(url))
            if kind == "sqlite":
                with engine.connect() as conn:
                    conn.exec_driver_sql("PRAGMA journal_mode=WAL")
            if filled.exists():
                # The query sets come from the run that filled it: the chain's draws there
                # decide them.
                print(f"reusing the {total:,} messages filled in {folder}", flush=True)
                kept = json.loads(filled.read_text())
                built, sets = kept["built"], kept["sets"]
            else:
                print(f"filling {total:,} messages on {kind}", flush=True)
                built = fill(engine, total, rng, chain)
                if kind == "postgresql":
                    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                        conn.execute(text("VACUUM ANALYZE"))
                sets = query_sets(chain, random.Random(seed + 1))
                filled.write_text(json.dumps({"built": built, "sets": sets}))
            if kind == "postgresql":
                print(f"read into shared buffers in {warm_postgres(engine):.1f} s", flush=True)
            owner = Viewer("user_owner", reads_everything=True)
            guest = Viewer("user_guest", reads_everything=False)
            results: dict[str, Any] = {}
            for sort in ("relevance", "recent"):
                for name, queries in sets.items():
                    timed(engine, adapter, queries[:20], owner, sort)  # warm the caches
                    results[f"{name}/{sort}"] = timed(engine, adapter, queries, owner, sort)
                    print(f"  {name}/{sort}: {results[f'{name}/{sort}']}", flush=True)
                results[f"guest_words/{sort}"] = timed(engine, adapter, sets["words"], guest, sort)
                print(f"  guest_words/{sort}: {results[f'guest_words/{sort}']}", flush=True)
            erased = erasure(url, engine) if kind == "sqlite" and keep is None else None
            engine.dispose()
            return {"engine": kind, **built, "results": results, "erasure": erased}
    raise AssertionError("no engine")


def warm_postgres(engine: Engine) -> float:
    """Reads the messages table and its text index into PostgreSQL's shared buffers, as a
    server that has been answering for a while holds them; answers the seconds it took.

    A sequential scan would not: PostgreSQL reads a table larger than a quarter of its buffers
    through a small ring. A walk of the primary key visits every heap page through the shared
    buffers instead, and a bitmap scan of the GIN index for every lexeme ANALYZE keeps reads the
    most used index pages (`pg_prewarm` is not in pgserver's build)."""
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        conn.exec_driver_sql("SET LOCAL enable_bitmapscan = off")
        conn.exec_driver_sql("SET LOCAL enable_indexonlyscan = off")
        conn.exec_driver_sql("SET LOCAL max_parallel_workers_per_gather = 0")
        conn.exec_driver_sql(
            "SELECT count(*) FROM messages WHERE id >= '' AND deleted_at IS NULL"
        ).scalar()
    with engine.begin() as conn:
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        conn.exec_driver_sql("SET LOCAL enable_indexscan = off")
        conn.exec_driver_sql(
            "SELECT count(*) FROM messages WHERE search_tsv @@ to_tsquery('palaver_search', "
            "(SELECT string_agg(quote_literal(e), ' | ') FROM pg_stats, "
            "unnest(most_common_elems::text::text[]) AS e "
            "WHERE tablename = 'messages' AND attname = 'search_tsv'))"
        ).scalar()
    return time.perf_counter() - started


def erasure(url: str, engine: Engine) -> dict[str, Any]:
    """What a deletion's erasure costs on SQLite: the search index merged in steps on the
    writer's thread, as `Database.erase_freed` does (the longest step is what a post that
    comes meanwhile waits for)."""
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM messages WHERE id = (SELECT max(id) FROM messages)"))
    units = _SqliteUnits(url)
    pages = units.search_index_pages()
    steps: list[float] = []
    start = time.perf_counter()
    while True:
        began = time.perf_counter()
        worked = units.merge_search_index()
        steps.append((time.perf_counter() - began) * 1000)
        if not worked:
            break
    total = time.perf_counter() - start
    units.close()
    result = {
        "index_pages": pages,
        "steps": len(steps),
        "total_s": round(total, 2),
        "longest_step_ms": round(max(steps), 1),
    }
    print(f"  erasure: {result}", flush=True)
    return result


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Message search: {report['messages']:,} messages, {CHANNELS} channels, "
        f"{report['engine']}",
        "",
        f"Measured {report['when']} on {report['machine']}; filled in {report['fill_seconds']} s "
        "(triggers / generated column included). Each set: "
        f"{QUERIES} queries, a page of 20 with snippets; times in ms.",
        "",
        "| set | median | p99 | max | mean hits |",
        "|---|---|---|---|---|",
    ]
    for name, r in report["results"].items():
        lines.append(
            f"| {name} | {r['median_ms']} | {r['p99_ms']} | {r['max_ms']} | {r['mean_hits']} |"
        )
    erased = report.get("erasure")
    if erased:
        lines += [
            "",
            f"Erasing a deletion from the search index: {erased['index_pages']:,} index pages "
            f"merged in {erased['steps']} steps, {erased['total_s']} s in all, the longest step "
            f"(what a post waits for at most) {erased['longest_step_ms']} ms.",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--engine", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument(
        "--keep",
        type=Path,
        help="a folder that keeps the filled database: a later run with the same figures "
        "queries it again instead of filling (the erasure, which deletes, is then left out)",
    )
    args = parser.parse_args()
    report = run(args.engine, args.messages, args.seed, args.keep)
    import platform

    report["when"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    report["machine"] = f"{platform.processor() or platform.machine()}, shared 2 cores"
    stem = f"search_{args.engine}_{args.messages // 1000}k"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    text_ = markdown(report)
    (RESULTS / f"{stem}.md").write_text(text_)
    print(text_)


if __name__ == "__main__":
    main()
