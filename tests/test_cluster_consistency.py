"""Two real `palaver serve` nodes on one database and one Redis: what one node changes, the
other applies within a second, the memory write rule holds across both, and collaboration
runs on either node and is seen live from the other.

Most cases run on PostgreSQL (the cluster as deployed). Those that touch the search index run
on a shared SQLite file too, whose nodes each keep vector matrices in memory and must be told
of the other's writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.mcp_server import stdio_command
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text, tool_call, tool_calls
from tests.pg_server import PgServer
from tests.redis_server import RedisServer
from tests.support import Api, Guest, Ws, new_agent, new_channel, post, unique, wait_until
from tests.test_redis_nodes import Nodes

IN_FORCE_WITHIN = 1.0
"""Seconds: issue 14's bound for a change made on one node to hold on every node."""

SAME_FACT = [
    "The owner's favourite programming language is Python.",
    "The owner's favourite programming language is Python!",
    "the owner's favourite programming language is python.",
    "The owner's favourite programming language is Python, they said.",
    "The owner\u2019s favourite programming language is Python.",
    "Remember: the owner's favourite programming language is Python.",
    "The owner's favorite programming language is Python.",
    "The owner's favourite programming language is Python (noted).",
]
"""Pairwise cosine 0.95 or more with the local model: any one of them makes the others
duplicates (above the 0.85 threshold), whichever is stored first."""


class Pair(Nodes):
    """Node A and node B, with the owner logged in on each, on the database given."""

    def __init__(self, folder: Path, database_url: str, redis_url: str) -> None:
        super().__init__(folder, redis_url)
        for node in (self.a, self.b):
            node.env["DATABASE_URL"] = node.database_url = database_url


def _pair(folder: Path, database_url: str, redis_url: str) -> Iterator[Pair]:
    pair = Pair(folder, database_url, redis_url)
    try:
        pair.start()
        yield pair
    finally:
        pair.stop()


@pytest.fixture(scope="module")
def on_postgresql(
    tmp_path_factory: pytest.TempPathFactory, pg: PgServer, redis_server: RedisServer
) -> Iterator[Pair]:
    folder = tmp_path_factory.mktemp("pg-pair")
    yield from _pair(folder, pg.new_database("consistency"), redis_server.url())


@pytest.fixture(scope="module")
def on_sqlite(
    tmp_path_factory: pytest.TempPathFactory, redis_server: RedisServer
) -> Iterator[Pair]:
    folder = tmp_path_factory.mktemp("sqlite-pair")
    yield from _pair(folder, f"sqlite:///{folder / 'data' / 'palaver.db'}", redis_server.url())


@pytest.fixture(params=["postgresql", "sqlite"])
def pair(request: pytest.FixtureRequest) -> Pair:
    found: Pair = request.getfixturevalue(f"on_{request.param}")
    return found


def in_force(holds: Callable[[], bool], what: str) -> None:
    """`holds` must become true within `IN_FORCE_WITHIN` seconds of now."""
    deadline = time.monotonic() + IN_FORCE_WITHIN
    while not holds():
        assert time.monotonic() < deadline, f"{what}: not in force after {IN_FORCE_WITHIN} s"
        time.sleep(0.02)


# Locks.


def memory_search(api: Api, agent_id: str, query: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api.ok(
        "GET", f"/api/agents/{agent_id}/memories", params={"q": query}
    )["memories"]
    return found


def test_near_identical_memories_written_at_once_through_both_nodes_are_stored_once(
    pair: Pair,
) -> None:
    agent = new_agent(pair.owner_a)
    path = f"/api/agents/{agent['id']}/memories"
    owners = [pair.owner_a, pair.owner_b]
    for owner in owners:  # Both nodes ready: the embedding model loaded, no vectors yet.
        assert memory_search(owner, agent["id"], SAME_FACT[0]) == []
    writes = [(owners[n % 2], SAME_FACT[n % len(SAME_FACT)]) for n in range(16)]
    with ThreadPoolExecutor(len(writes)) as pool:
        answers = list(pool.map(lambda w: w[0].ok("POST", path, json={"content": w[1]}), writes))
    stored = pair.owner_b.ok("GET", path)["memories"]
    assert len(stored) == 1, [m["content"] for m in stored]
    assert sorted(a["action"] for a in answers) == ["inserted"] + ["skipped"] * 15
    assert {a["memory"]["id"] for a in answers} == {stored[0]["id"]}


# Caches.


def test_a_memory_written_edited_and_deleted_through_a_is_searched_accordingly_on_b(
    pair: Pair,
) -> None:
    agent = new_agent(pair.owner_a)
    path = f"/api/agents/{agent['id']}/memories"
    pair.owner_a.ok("POST", path, json={"content": "The owner's cat is called Miso."})
    # B searches first, so that a node keeping vectors in memory holds them from now on.
    wait_until(lambda: bool(memory_search(pair.owner_b, agent["id"], "cat")), what="a first search")
    written = pair.owner_a.ok("POST", path, json={"content": "The team meets on Tuesdays."})
    memory_id = written["memory"]["id"]

    def top(query: str) -> dict[str, Any] | None:
        found = memory_search(pair.owner_b, agent["id"], query)
        return found[0] if found else None

    def found_on_b(query: str, content: str) -> bool:
        hit = top(query)
        return hit is not None and hit["id"] == memory_id and hit["content"] == content

    in_force(lambda: found_on_b("When does the team meet?", "The team meets on Tuesdays."), "write")
    edited = "The owner's favourite food is ramen."
    pair.owner_a.ok("PUT", f"{path}/{memory_id}", json={"content": edited})
    in_force(lambda: found_on_b("What food does the owner like?", edited), "the edit")
    hit = top("What food does the owner like?")
    assert hit is not None and hit["similarity"] > 0.5, "B still ranks the old content's vector"
    pair.owner_a.ok("DELETE", f"{path}/{memory_id}")
    in_force(
        lambda: all(m["id"] != memory_id for m in memory_search(pair.owner_b, agent["id"], "food")),
        "the deletion",
    )


def test_a_document_uploaded_through_a_is_found_by_a_query_through_b(pair: Pair) -> None:
    agent = new_agent(pair.owner_a)

    def upload(name: str, content: str) -> str:
        response = pair.owner_a.post(
            "/api/rag/upload",
            files={"file": (name, content.encode(), "text/plain")},
            data={"agentId": agent["id"]},
        )
        assert response.status_code == 200, response.text
        document_id: str = response.json()["document"]["id"]
        return document_id

    def query(words: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = pair.owner_b.ok(
            "POST", "/api/rag/query", json={"agentId": agent["id"], "query": words, "topK": 3}
        )["results"]
        return found

    upload("garden.txt", "The greenhouse tomatoes are watered every morning at seven.")
    # B queries first, so that a node keeping vectors in memory holds them from now on.
    wait_until(lambda: bool(query("tomatoes watering")), what="a first query")
    document_id = upload(
        "boat.txt", "The sailing boat is moored at the north harbour, berth twelve."
    )
    in_force(
        lambda: any(
            r["documentId"] == document_id and r["vectorRank"] is not None
            for r in query("where is the boat kept")
        ),
        "the new document, found by its meaning",
    )


# Agents, channels and settings changed on one node, in force on the other.


@pytest.fixture(scope="module")
def fake(on_postgresql: Pair) -> Iterator[FakeOpenAI]:
    """A fake model server, a provider `oai` of both nodes."""
    with FakeOpenAI() as server:
        provider = {"type": "openai", "baseUrl": f"{server.url}/v1", "apiKey": "sk-test"}
        on_postgresql.owner_a.ok("PUT", "/api/settings", json={"providers": {"oai": provider}})
        in_force(lambda: "oai" in settings(on_postgresql.owner_b)["providers"], "the provider")
        yield server


@pytest.fixture
def model(fake: FakeOpenAI) -> Iterator[FakeOpenAI]:
    fake.reset()
    yield fake
    fake.release()


def settings(api: Api) -> dict[str, Any]:
    found: dict[str, Any] = api.ok("GET", "/api/settings")["settings"]
    return found


def test_an_agent_edited_through_a_answers_on_b_with_its_new_name_soul_model_and_tools(
    on_postgresql: Pair, model: FakeOpenAI
) -> None:
    pair = on_postgresql
    agent = new_agent(pair.owner_a, model="oai/gpt-fake", soul="You answer plainly.")
    channel = new_channel(pair.owner_a, agent_ids=[agent["id"]])
    name = unique("Renamed")
    change = {
        "name": name,
        "soul": "You answer like a lighthouse keeper.",
        "model": "oai/gpt-fake-mini",
        "tools": ["memory_search"],
    }
    pair.owner_a.ok("PUT", f"/api/agents/{agent['id']}", json=change)
    model.enqueue(text("Ahoy."))
    with Ws(pair.b, pair.owner_b.token) as ws:
        ws.subscribe(channel["id"])
        post(pair.owner_b, channel["id"], f"@{name} hello")
        ws.expect("message", agentId=agent["id"], content="Ahoy.")
    asked = model.model_requests[-1].body
    assert asked["model"] == "gpt-fake-mini"
    system = asked["messages"][0]["content"]
    assert system.startswith(f"You are {name}.")
    assert "You answer like a lighthouse keeper." in system
    assert [t["function"]["name"] for t in asked["tools"]] == ["memory_search"]


def test_an_agent_deleted_through_a_is_gone_on_b(on_postgresql: Pair) -> None:
    pair = on_postgresql
    agent = new_agent(pair.owner_a)
    channel = new_channel(pair.owner_a, agent_ids=[agent["id"]])

    def agents_on_b() -> list[str]:
        found: list[str] = pair.owner_b.ok("GET", f"/api/channels/{channel['id']}")["channel"][
            "agentIds"
        ]
        return found

    assert agents_on_b() == [agent["id"]]  # B now holds the channel in its cache
    pair.owner_a.ok("DELETE", f"/api/agents/{agent['id']}")
    in_force(lambda: agents_on_b() == [], "the channel without the agent")
    assert pair.owner_b.get(f"/api/agents/{agent['id']}").status_code == 404


def test_a_channels_agents_changed_through_a_are_its_agents_on_b(on_postgresql: Pair) -> None:
    pair = on_postgresql
    kept, removed = new_agent(pair.owner_a), new_agent(pair.owner_a)
    channel = new_channel(pair.owner_a, agent_ids=[kept["id"], removed["id"]])
    path = f"/api/channels/{channel['id']}"
    assert len(pair.owner_b.ok("GET", path)["channel"]["agentIds"]) == 2  # cached on B now
    pair.owner_a.ok("PUT", path, json={"agentIds": [kept["id"]]})
    in_force(
        lambda: pair.owner_b.ok("GET", path)["channel"]["agentIds"] == [kept["id"]],
        "the channel's agents",
    )


def test_a_guest_removed_from_a_channel_through_a_loses_access_on_b(on_postgresql: Pair) -> None:
    pair = on_postgresql
    with Guest(pair.b, pair.owner_a) as guest:
        channel = new_channel(pair.owner_a, member_ids=[guest.id])
        path = f"/api/messages?channelId={channel['id']}"
        assert guest.api.get(path).status_code == 200  # B now holds the channel in its cache
        with Ws(pair.b, guest.api.token) as guest_ws, Ws(pair.b, pair.owner_b.token) as owner_ws:
            guest_ws.subscribe(channel["id"])
            owner_ws.subscribe(channel["id"])
            pair.owner_a.ok("PUT", f"/api/channels/{channel['id']}", json={"memberIds": []})
            in_force(lambda: guest.api.get(path).status_code != 200, "the guest's refusal")
            refused = guest.api.get(path)
            assert refused.status_code in (403, 404) and refused.json()["error"]
            sent = post(pair.owner_a, channel["id"], "members only from now on")
            owner_ws.expect("message", id=sent)
            guest_ws.send({"type": "ping"})
            guest_ws.expect("pong")
            assert all(e["type"] != "message" for e in guest_ws.seen)


def test_an_mcp_server_added_and_removed_through_a_is_in_bs_tool_list(on_postgresql: Pair) -> None:
    pair = on_postgresql
    command, args = stdio_command()
    server = unique("fake")

    def tools_on_b() -> list[str]:
        return [t["name"] for t in pair.owner_b.ok("GET", "/api/tools")["tools"]]

    added = {"mcpServers": {server: {"command": command, "args": args}}}
    pair.owner_a.ok("PUT", "/api/settings", json=added)
    in_force(lambda: server in pair.owner_b.ok("GET", "/api/tools")["mcpServers"], "the server")
    assert f"mcp:{server}:add" in tools_on_b()
    pair.owner_a.ok("PUT", "/api/settings", json={"mcpServers": {server: None}})
    in_force(lambda: not any(n.startswith(f"mcp:{server}:") for n in tools_on_b()), "removal")


# Collaboration runs on one node and is seen live on the other.


def completed(event: dict[str, Any]) -> bool:
    return event["type"] == "collab_status" and event["data"]["status"] == "completed"


def read_until(ws: Ws, wanted: Callable[[dict[str, Any]], bool], timeout: float = 20) -> None:
    """Read events until one that `wanted` accepts has been seen, whether already or now."""
    deadline = time.monotonic() + timeout
    while not any(wanted(e) for e in ws.seen):
        ws.recv(deadline - time.monotonic())


def two_agents_in_a_channel(owner: Api) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Two agents on the fake model, and a channel with both."""
    first = new_agent(owner, model="oai/gpt-fake")
    second = new_agent(owner, model="oai/gpt-fake")
    return first, second, new_channel(owner, agent_ids=[first["id"], second["id"]])


def test_a_chain_started_through_b_reports_and_streams_to_a_socket_on_a_which_can_join_mid_reply(
    on_postgresql: Pair, model: FakeOpenAI
) -> None:
    pair = on_postgresql
    first, second, channel = two_agents_in_a_channel(pair.owner_a)
    pieces = ("One", " step", " at", " a", " time", " here.")
    model.enqueue(text("First step."), text(*pieces, delay=0.15))
    with Ws(pair.a, pair.owner_a.token) as ws:
        ws.subscribe(channel["id"])
        body = {
            "channelId": channel["id"],
            "agentIds": [first["id"], second["id"]],
            "content": "go",
        }
        chain = pair.owner_b.ok("POST", "/api/chains", json=body)["chain"]
        start = ws.expect("stream_start", 20, agentId=second["id"])
        ws.expect("stream_chunk", 20, messageId=start["data"]["messageId"])
        with Ws(pair.a, pair.owner_a.token) as late:
            late.subscribe(channel["id"])
            late_start = late.expect("stream_start", messageId=start["data"]["messageId"])
            late.expect("stream_end", 20, messageId=start["data"]["messageId"])
        read_until(ws, completed)
        read_until(ws, lambda e: e["type"] == "message" and e["data"]["agentId"] == second["id"])
    statuses = [
        (e["data"]["status"], e["data"]["step"], e["data"]["currentAgent"])
        for e in ws.seen
        if e["type"] == "collab_status" and e["data"]["chainId"] == chain["id"]
    ]
    assert statuses == [
        ("running", 1, first["id"]),
        ("running", 2, second["id"]),
        ("completed", 2, second["id"]),
    ]
    joined = "".join(
        e["data"]["content"]
        for e in late.seen
        if e["type"] == "stream_chunk" and e["data"]["messageId"] == late_start["data"]["messageId"]
    )
    assert joined == "".join(pieces), "the late socket got the reply so far, then the rest"
    reply = next(
        e for e in ws.seen if e["type"] == "message" and e["data"]["agentId"] == second["id"]
    )
    assert reply["data"]["content"] == "".join(pieces)


def test_a_hand_off_started_through_b_reports_to_a_socket_on_a(
    on_postgresql: Pair, model: FakeOpenAI
) -> None:
    pair = on_postgresql
    first, second, channel = two_agents_in_a_channel(pair.owner_a)
    model.enqueue(text(f"Over to you, @{second['name']}."), text("Done."))
    with Ws(pair.a, pair.owner_a.token) as ws:
        ws.subscribe(channel["id"])
        post(pair.owner_b, channel["id"], f"@{first['name']} start")
        read_until(ws, lambda e: e["type"] == "message" and e["data"]["content"] == "Done.")
        read_until(ws, completed)
    assert [
        (e["data"]["status"], e["data"]["currentAgent"])
        for e in ws.seen
        if e["type"] == "collab_status"
    ] == [("running", second["id"]), ("completed", second["id"])]


def test_a_call_agent_started_through_b_streams_both_replies_to_a_socket_on_a(
    on_postgresql: Pair, model: FakeOpenAI
) -> None:
    pair = on_postgresql
    asker = new_agent(pair.owner_a, model="oai/gpt-fake", tools=["call_agent"])
    expert = new_agent(pair.owner_a, model="oai/gpt-fake")
    channel = new_channel(pair.owner_a, agent_ids=[asker["id"], expert["id"]])
    model.enqueue(
        tool_calls(tool_call("call_agent", {"agent": expert["name"], "message": "6x7?"})),
        text("Forty", "-two.", delay=0.05),
        text("The expert says forty-two."),
    )
    with Ws(pair.a, pair.owner_a.token) as ws:
        ws.subscribe(channel["id"])
        post(pair.owner_b, channel["id"], f"@{asker['name']} ask the expert")
        expert_start = ws.expect("stream_start", 20, agentId=expert["id"])
        expert_reply = ws.expect("message", 20, id=expert_start["data"]["messageId"])
        ws.expect("message", 20, agentId=asker["id"], content="The expert says forty-two.")
    assert expert_reply["data"]["content"] == "Forty-two."
    assert any(e["type"] == "tool_result" for e in ws.seen)


# Messages that change (issue 22).


@pytest.fixture
def wide_limits(pair: Pair) -> None:
    limits = {"messagesPerMinute": 10_000, "messageBurst": 10_000}
    pair.owner_a.ok("PUT", "/api/settings", json={"limits": limits})


def _history(api: Api, channel_id: str, **params: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api.ok(
        "GET", "/api/messages", params={"channelId": channel_id, **params}
    )["messages"]
    return found


def test_edits_deletes_and_reactions_reach_the_other_nodes_sockets_and_caches(
    pair: Pair,
    wide_limits: None,
) -> None:
    channel = new_channel(pair.owner_a)["id"]
    root = post(pair.owner_a, channel, "first draft")
    gone = post(pair.owner_a, channel, "a pasted secret")
    assert [m["content"] for m in _history(pair.owner_b, channel)] == [
        "first draft",
        "a pasted secret",
    ]  # B caches both messages' JSON now
    with Ws(pair.b, pair.owner_b.token) as ws:
        ws.subscribe(channel)
        pair.owner_a.ok("PATCH", f"/api/messages/{root}", json={"content": "final"})
        assert ws.expect("message_updated", id=root)["data"]["content"] == "final"
        in_force(lambda: _history(pair.owner_b, channel)[0]["content"] == "final", "edit")
        pair.owner_a.ok("POST", f"/api/messages/{root}/reactions", json={"emoji": "👍"})
        ws.expect("reaction_added", messageId=root)
        in_force(lambda: bool(_history(pair.owner_b, channel)[0]["reactions"]), "reaction")
        pair.owner_a.ok("DELETE", f"/api/messages/{gone}")
        ws.expect("message_deleted", id=gone)
        in_force(lambda: len(_history(pair.owner_b, channel)) == 1, "delete")
        post(pair.owner_a, channel, "a reply", threadId=root)
        ws.expect("message_updated", id=root)
        in_force(
            lambda: (_history(pair.owner_b, channel)[0]["thread"] or {}).get("replyCount") == 1,
            "thread summary",
        )


def test_the_same_reaction_at_once_through_both_nodes_counts_two(
    pair: Pair, wide_limits: None
) -> None:
    with Guest(pair.a, pair.owner_a) as guest:
        channel = new_channel(pair.owner_a, member_ids=[guest.id])["id"]
        guest_b = pair.b.login(guest.key)
        for _ in range(5):
            message_id = post(pair.owner_a, channel, "react at once")
            path = f"/api/messages/{message_id}/reactions"
            with ThreadPoolExecutor(2) as pool:
                list(
                    pool.map(
                        lambda api, path=path: api.ok("POST", path, json={"emoji": "🎉"}),
                        [pair.owner_a, guest_b],
                    )
                )
            [reaction] = _history(pair.owner_b, channel)[-1]["reactions"]
            assert reaction["count"] == 2, reaction
        guest_b.close()


def test_an_edit_racing_a_delete_leaves_the_message_deleted(pair: Pair, wide_limits: None) -> None:
    channel = new_channel(pair.owner_a)["id"]
    for _ in range(5):
        message_id = post(pair.owner_a, channel, "racing")
        path = f"/api/messages/{message_id}"
        with ThreadPoolExecutor(2) as pool:
            edit = pool.submit(pair.owner_a.patch, path, json={"content": "edited"})
            gone = pool.submit(pair.owner_b.delete, path)
            assert gone.result().status_code == 200
            assert edit.result().status_code in (200, 404)
        assert message_id not in [m["id"] for m in _history(pair.owner_a, channel)]
        assert message_id not in [m["id"] for m in _history(pair.owner_b, channel)]
        assert pair.owner_a.get(f"{path}/versions").status_code == 404


def test_the_same_change_at_once_through_both_nodes_is_applied_once_or_in_turn(
    pair: Pair, wide_limits: None
) -> None:
    """A double click landing on two nodes: the same reaction counts once; two edits both
    succeed, one after the other, each keeping the version before it."""
    channel = new_channel(pair.owner_a)["id"]
    owners = [pair.owner_a, pair.owner_b]
    for n in range(3):
        message_id = post(pair.owner_a, channel, f"edit me {n}")
        path = f"/api/messages/{message_id}"
        with ThreadPoolExecutor(2) as pool:
            reacted = list(
                pool.map(
                    lambda api, path=path: api.post(f"{path}/reactions", json={"emoji": "👍"}),
                    owners,
                )
            )
            edited = list(
                pool.map(
                    lambda pair_, path=path: pair_[0].patch(path, json={"content": pair_[1]}),
                    [(pair.owner_a, "from A"), (pair.owner_b, "from B")],
                )
            )
        assert [r.status_code for r in reacted + edited] == [200] * 4, [
            r.text for r in reacted + edited
        ]
        [message] = [m for m in _history(pair.owner_b, channel) if m["id"] == message_id]
        assert message["reactions"][0]["count"] == 1
        versions = pair.owner_a.ok("GET", f"{path}/versions")["versions"]
        assert versions[0]["content"] == f"edit me {n}"
        assert sorted(v["content"] for v in versions[1:]) == ["from A", "from B"]
        assert message["content"] == versions[-1]["content"]


def test_many_posts_at_once_into_one_channel_through_both_nodes_all_land_once(
    pair: Pair, wide_limits: None
) -> None:
    """On PostgreSQL a post waited for the other node's post to the channel inside its own
    transaction, after its snapshot: it could not see that commit, lost the race to it every
    time and ran again, and under wrk's 64 connections some ran out of attempts (a 500)."""
    owners = [pair.owner_a, pair.owner_b]
    with Guest(pair.a, pair.owner_a) as first, Guest(pair.a, pair.owner_a) as second:
        # Each post counts as unread for the others: the rows the racing posts both write.
        channel = new_channel(pair.owner_a, member_ids=[first.id, second.id])["id"]
        posters = [pair.owner_a, pair.b.login(first.key), first.api, pair.b.login(second.key)]
        _post_at_once(pair, channel, posters, owners)
        for api in posters[1::2]:
            api.close()


def _post_at_once(pair: Pair, channel: str, posters: list[Api], owners: list[Api]) -> None:
    count = 240

    def send(n: int) -> tuple[int, str]:
        answer = posters[n % len(posters)].post(
            "/api/messages", json={"channelId": channel, "content": f"at once {n}"}
        )
        return answer.status_code, answer.text

    def retries() -> int:
        return sum(api.ok("GET", "/api/debug/db-counts")["retries"] for api in owners)

    retried = retries()
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(send, range(count)))
    assert [a for a in answers if a[0] != 200] == []
    # Losing a race now and then is normal (a post can meet a read marker moving); each post
    # losing to the other node's, as before, is not.
    assert retries() - retried < count // 20
    stored: list[dict[str, Any]] = []
    before: dict[str, str] = {}
    while page := _history(pair.owner_b, channel, limit=200, **before):
        stored = page + stored
        before = {"before": page[0]["id"]}
    assert sorted(m["content"] for m in stored) == sorted(f"at once {n}" for n in range(count))


def test_channel_list_mentions_and_read_state_reach_a_persons_socket_on_the_other_node(
    pair: Pair, wide_limits: None
) -> None:
    with Guest(pair.b, pair.owner_a) as guest, Ws(pair.b, guest.api.token) as ws:
        channel = new_channel(pair.owner_a, member_ids=[guest.id])["id"]
        assert ws.expect("channel_created", id=channel)["data"]["unreadCount"] == 0
        sent = post(pair.owner_a, channel, f"@{guest.user['name']} over here")
        assert ws.expect("mention", messageId=sent)["data"]["channelId"] == channel
        reader = pair.a.login(guest.key)
        reader.ok("POST", f"/api/channels/{channel}/read", json={"messageId": sent})
        ws.expect("read_updated", channelId=channel, lastReadId=sent, unreadCount=0)
        pair.owner_a.ok("DELETE", f"/api/channels/{channel}")
        ws.expect("channel_removed", id=channel)
        reader.close()
