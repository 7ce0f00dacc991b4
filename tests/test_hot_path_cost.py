"""What the paths every client hits all day ask of the database, once the caches are warm:
the same person, in the same channel, a second time. An N+1 query or a lost cache fails here,
not in a benchmark.

Counted in the server by its debug hooks: SQL statements (a transaction's `BEGIN` is one) and
round trips to the database (on SQLite, hops to the threads that hold its connections).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from tests.support import Api, Server, Ws, db_counts, history, new_channel, post

pytestmark = pytest.mark.sqlite_only
"""The figures are SQLite's: its units' thread hops and group commit."""

POST = {"statements": 3, "roundTrips": 1}
"""BEGIN IMMEDIATE, the insert and the readers' unread counts (one update, whatever the number
of members), run whole on the database's writer thread."""
HISTORY = {"statements": 2, "roundTrips": 1}
"""BEGIN and the page's select, run whole on a reader thread."""
SOCKET = {"statements": 0, "roundTrips": 0}


@pytest.fixture(scope="module")
def quiet_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of this module's own: nothing else runs on it while it is measured."""
    srv = Server(tmp_path_factory.mktemp("cost"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def owner(quiet_server: Server) -> Iterator[Api]:
    with quiet_server.login() as api:
        limits = {"messagesPerMinute": 10_000, "messageBurst": 10_000}
        api.ok("PUT", "/api/settings", json={"limits": limits})
        yield api


@pytest.fixture(scope="module")
def channel(quiet_server: Server, owner: Api) -> str:
    channel_id = str(new_channel(owner)["id"])
    for _ in range(3):
        post(owner, channel_id, "a few messages to page through")
    history(owner, channel_id)
    with Ws(quiet_server, owner.token) as ws:
        ws.subscribe(channel_id)
    time.sleep(0.5)
    return channel_id


def _cost(server: Server, action: Callable[[], object]) -> dict[str, int]:
    before = db_counts(server)
    action()
    after = db_counts(server)
    return {key: after[key] - before[key] for key in ("statements", "roundTrips")}


def test_a_post_costs_one_write_transaction_and_nothing_else(
    quiet_server: Server, owner: Api, channel: str
) -> None:
    cost = _cost(quiet_server, lambda: post(owner, channel, "steady state"))
    assert cost["statements"] <= POST["statements"], cost
    assert cost["roundTrips"] <= POST["roundTrips"], cost


def test_a_history_page_costs_one_read_of_the_page(
    quiet_server: Server, owner: Api, channel: str
) -> None:
    cost = _cost(quiet_server, lambda: history(owner, channel, limit=50))
    assert cost["statements"] <= HISTORY["statements"], cost
    assert cost["roundTrips"] <= HISTORY["roundTrips"], cost


def test_a_socket_authenticating_and_subscribing_asks_the_database_nothing(
    quiet_server: Server, owner: Api, channel: str
) -> None:
    def connect_and_subscribe() -> None:
        with Ws(quiet_server, owner.token) as ws:
            ws.subscribe(channel)

    assert _cost(quiet_server, connect_and_subscribe) == SOCKET


def test_a_socket_authenticated_by_its_cookie_asks_the_database_nothing(
    quiet_server: Server, owner: Api, channel: str
) -> None:
    def connect_and_subscribe() -> None:
        cookie = {"Cookie": f"session={owner.token}"}
        with Ws(quiet_server, additional_headers=cookie) as ws:
            ws.expect("auth_ok")
            ws.subscribe(channel)

    assert _cost(quiet_server, connect_and_subscribe) == SOCKET


def test_a_full_page_costs_no_more_than_a_short_one(
    quiet_server: Server, owner: Api, channel: str
) -> None:
    for i in range(60):
        post(owner, channel, f"more history {i}")
    cost = _cost(quiet_server, lambda: history(owner, channel, limit=50))
    assert cost["statements"] <= HISTORY["statements"], cost
    assert cost["roundTrips"] <= HISTORY["roundTrips"], cost


EDIT = {"roundTrips": 2}
"""A read of the message (whose channel decides who may change it), then one write unit."""


def test_a_page_with_reactions_and_threads_is_still_one_read(
    quiet_server: Server, owner: Api
) -> None:
    """Reactions and a root's thread summary live on the message's row: a page whose messages
    all changed since they were cached reads them in the same one unit, with no query per
    message."""
    channel = str(new_channel(owner)["id"])
    roots = [post(owner, channel, f"root {i}") for i in range(20)]
    for root in roots:
        owner.ok("POST", f"/api/messages/{root}/reactions", json={"emoji": "👍"})
        owner.ok("POST", f"/api/messages/{root}/reactions", json={"emoji": "🎉"})
        post(owner, channel, "in the thread", threadId=root)
    cold = _cost(quiet_server, lambda: history(owner, channel, limit=50))
    assert cold["roundTrips"] <= HISTORY["roundTrips"], cold
    assert cold["statements"] <= HISTORY["statements"] + 1, cold
    page = history(owner, channel, limit=50)
    assert all(m["thread"]["replyCount"] == 1 and len(m["reactions"]) == 2 for m in page)
    warm = _cost(quiet_server, lambda: history(owner, channel, limit=50))
    assert warm["statements"] <= HISTORY["statements"], warm
    assert warm["roundTrips"] <= HISTORY["roundTrips"], warm
    thread = _cost(quiet_server, lambda: history(owner, channel, threadId=roots[0]))
    assert thread["roundTrips"] <= HISTORY["roundTrips"], thread


def test_a_reply_in_a_thread_costs_one_write_unit(
    quiet_server: Server, owner: Api, channel: str
) -> None:
    root = post(owner, channel, "a root")
    cost = _cost(quiet_server, lambda: post(owner, channel, "a reply", threadId=root))
    assert cost["roundTrips"] <= POST["roundTrips"], cost


def test_an_edit_and_a_reaction_cost_a_read_and_one_write_unit(
    quiet_server: Server, owner: Api, channel: str
) -> None:
    message_id = post(owner, channel, "to change")
    edit = _cost(
        quiet_server,
        lambda: owner.ok("PATCH", f"/api/messages/{message_id}", json={"content": "changed"}),
    )
    assert edit["roundTrips"] <= EDIT["roundTrips"], edit
    react = _cost(
        quiet_server,
        lambda: owner.ok("POST", f"/api/messages/{message_id}/reactions", json={"emoji": "👍"}),
    )
    assert react["roundTrips"] <= EDIT["roundTrips"], react
