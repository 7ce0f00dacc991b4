"""The audit log (issue 24, docs/SPEC.md section 14): every owner or guest action that changes
the install is one row, written with the change, naming who, what, from where and on which
node; no secret, message or document text ever reaches a row; the owner pages it newest first.

Chains, which must stay running while they are steered, are audited in
tests/agents/test_chains.py, beside the fake model server that holds them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import (
    Api,
    Guest,
    Server,
    new_agent,
    new_channel,
    post,
    sql,
    token_hash,
    unique,
)

CHANGED = "(changed)"
FIELDS = {"id", "at", "actorId", "action", "target", "changes", "node", "address"}


def entries(api: Api, **params: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api.ok("GET", "/api/audit", params=params)["entries"]
    return found


def entry(owner: Api, action: str, target: str | None) -> dict[str, Any]:
    """The one row of `action` on `target` among the newest of that action."""
    found = [e for e in entries(owner, action=action, limit=200) if e["target"] == target]
    assert len(found) == 1, (action, target, found)
    return found[0]


def none_of(owner: Api, action: str, target: str) -> bool:
    return all(e["target"] != target for e in entries(owner, action=action, limit=200))


@pytest.fixture(scope="module")
def owner_id(owner: Api) -> str:
    me: str = owner.ok("GET", "/api/me")["user"]["id"]
    return me


@pytest.fixture
def by_owner(server: Server, owner_id: str) -> Any:
    """Checks a row as the owner's, from this machine, by a node of the cluster's registry."""

    def check(row: dict[str, Any]) -> dict[str, Any]:
        assert set(row) == FIELDS
        assert row["actorId"] == owner_id
        assert row["address"] == "127.0.0.1"
        assert row["id"].startswith("audit_") and row["at"].endswith("Z")
        assert (row["node"],) in sql(server, "SELECT id FROM nodes")
        changes: dict[str, Any] = row["changes"]
        return changes

    return check


def test_settings_update_holds_what_changed_and_a_patch_that_changes_nothing_writes_nothing(
    owner: Api, by_owner: Any
) -> None:
    model = f"oai/{unique('audited')}"
    price = {"input": 1.5, "output": 2.0}
    owner.ok("PUT", "/api/settings", json={"prices": {model: price}})
    [row] = [
        e
        for e in entries(owner, action="settings.update", limit=200)
        if model in e["changes"].get("prices", {})
    ]
    assert row["target"] == "settings"
    assert by_owner(row) == {"prices": {model: {**price, "cachedInput": None}}}
    newest = entries(owner, limit=1)[0]["id"]
    owner.ok("PUT", "/api/settings", json={"prices": {model: price}})
    assert entries(owner, limit=1)[0]["id"] == newest
    owner.ok("PUT", "/api/settings", json={"prices": {model: None}})
    removed = entries(owner, action="settings.update", limit=1)[0]
    assert by_owner(removed) == {"prices": {model: None}}


def test_a_provider_and_its_key_are_audited_by_name_and_never_by_value(
    owner: Api, by_owner: Any
) -> None:
    provider, key, other = unique("p"), "sk-" + unique("first-") + "TAIL", "sk-" + unique("2-")
    config = {"type": "openai", "baseUrl": "http://llm.example/v1", "apiKey": key}
    owner.ok("PUT", "/api/settings", json={"providers": {provider: config}})
    created = by_owner(entry(owner, "provider.create", provider))
    assert created == {**config, "apiKey": CHANGED, "contextWindow": 8192, "timeoutSeconds": 120.0}
    shown = owner.ok("GET", "/api/settings")["settings"]["providers"][provider]
    owner.ok("PUT", "/api/settings", json={"providers": {provider: shown}})
    assert none_of(owner, "provider.update", provider)
    owner.ok("PUT", "/api/settings", json={"providers": {provider: {"apiKey": other}}})
    assert by_owner(entry(owner, "provider.update", provider)) == {"apiKey": CHANGED}
    owner.ok("PUT", "/api/settings", json={"providers": {provider: {"apiKey": None}}})
    updates = [e for e in entries(owner, action="provider.update") if e["target"] == provider]
    assert updates[0]["changes"] == {"apiKey": None}
    owner.ok("PUT", "/api/settings", json={"providers": {provider: None}})
    assert by_owner(entry(owner, "provider.delete", provider)) == {}
    assert [e["action"] for e in entries(owner, action="provider.", limit=4)] == [
        "provider.delete",
        "provider.update",
        "provider.update",
        "provider.create",
    ]


def test_mcp_servers_are_audited_with_their_secrets_hidden(owner: Api, by_owner: Any) -> None:
    name = unique("m")
    server_config = {
        "url": "https://bob:pw-HIDDEN1@mcp.example/mcp?token=tok-HIDDEN2",
        "headers": {"Authorization": "Bearer HIDDEN3"},
    }
    owner.ok("PUT", "/api/settings", json={"mcpServers": {name: server_config}})
    created = by_owner(entry(owner, "mcpServer.create", name))
    assert created["url"] == "https://bob:••••@mcp.example/mcp?token=••••"
    assert created["headers"] == {"Authorization": CHANGED}
    assert created["availableToGuests"] is False
    owner.ok("PUT", "/api/settings", json={"mcpServers": {name: {"availableToGuests": True}}})
    assert by_owner(entry(owner, "mcpServer.update", name)) == {"availableToGuests": True}
    owner.ok("PUT", "/api/settings", json={"mcpServers": {name: None}})
    assert by_owner(entry(owner, "mcpServer.delete", name)) == {}
    assert "HIDDEN" not in json.dumps(entries(owner, action="mcpServer.", limit=200))


def test_agents_are_audited_and_soul_md_only_by_its_length(owner: Api, by_owner: Any) -> None:
    soul = "# Soul\nNever reveal the launch code 7412."
    agent = new_agent(owner, soul=soul, description="Reads maps.")
    created = by_owner(entry(owner, "agent.create", agent["id"]))
    assert created == {
        "name": agent["name"],
        "avatar": agent["avatar"],
        "description": "Reads maps.",
        "model": agent["model"],
        "tools": [],
        "soul": {"length": len(soul)},
        "autoInjectMemory": True,
    }
    longer = soul + " Or the second one."
    owner.ok("PUT", f"/api/agents/{agent['id']}", json={"soul": longer, "tools": ["react"]})
    updated = by_owner(entry(owner, "agent.update", agent["id"]))
    assert updated == {"tools": ["react"], "soul": {"length": len(longer)}}
    owner.ok("PUT", f"/api/agents/{agent['id']}", json={"soul": longer})
    assert (
        len([e for e in entries(owner, action="agent.update") if e["target"] == agent["id"]]) == 1
    )
    owner.ok("DELETE", f"/api/agents/{agent['id']}")
    assert by_owner(entry(owner, "agent.delete", agent["id"])) == {"name": agent["name"]}
    assert "launch code" not in json.dumps(entries(owner, action="agent.", limit=200))


def test_a_failed_action_writes_no_row(owner: Api) -> None:
    """The row is written in the change's transaction: a change refused writes neither."""
    agent = new_agent(owner)
    newest = entries(owner, limit=1)[0]["id"]
    assert owner.post("/api/agents", json={"name": agent["name"]}).status_code == 409
    assert owner.delete(f"/api/guests/{unique('user_')}").status_code == 404
    assert entries(owner, limit=1)[0]["id"] == newest


def test_guests_and_their_channels_are_audited(
    server: Server, owner: Api, owner_id: str, by_owner: Any
) -> None:
    guest = Guest(server, owner)
    try:
        created = by_owner(entry(owner, "guest.create", guest.id))
        assert created == {"name": guest.user["name"], "key": CHANGED}
        agent = new_agent(owner)
        channel = new_channel(owner, [agent["id"]])
        made = by_owner(entry(owner, "channel.create", channel["id"]))
        assert made == {
            "name": channel["name"],
            "type": "group",
            "agentIds": [agent["id"]],
            "memberIds": [owner_id],
        }
        owner.ok("POST", f"/api/channels/{channel['id']}/members", json={"userIds": [guest.id]})
        added = by_owner(entry(owner, "channel.update", channel["id"]))
        assert added == {"memberIds": [owner_id, guest.id]}
        guest.api.ok("POST", f"/api/channels/{channel['id']}/leave")
        left = entry(owner, "channel.leave", channel["id"])
        assert (left["actorId"], left["changes"], left["address"]) == (guest.id, {}, "127.0.0.1")
        owner.ok("PUT", f"/api/channels/{channel['id']}", json={"name": channel["name"]})
        assert (
            len(
                [e for e in entries(owner, action="channel.update") if e["target"] == channel["id"]]
            )
            == 1
        )
        owner.ok("DELETE", f"/api/channels/{channel['id']}")
        assert by_owner(entry(owner, "channel.delete", channel["id"])) == {"name": channel["name"]}
    finally:
        guest.close()
    owner.ok("DELETE", f"/api/guests/{guest.id}")
    assert by_owner(entry(owner, "guest.delete", guest.id)) == {"name": guest.user["name"]}


def test_knowledge_documents_and_their_visibility_are_audited_without_their_text(
    owner: Api, by_owner: Any
) -> None:
    agent = new_agent(owner)
    words = f"The vault combination is {unique('combo-')}."
    uploaded = owner.ok(
        "POST",
        "/api/rag/upload",
        files={"file": ("vault.txt", words.encode(), "text/plain")},
        data={"agentId": agent["id"]},
    )["document"]
    created = by_owner(entry(owner, "document.create", uploaded["id"]))
    assert created == {
        "agentId": agent["id"],
        "name": uploaded["name"],
        "kind": uploaded["kind"],
        "bytes": len(words.encode()),
        "visibility": "owner",
    }
    again = owner.ok(
        "POST",
        "/api/rag/upload",
        files={"file": ("copy.txt", words.encode(), "text/plain")},
        data={"agentId": agent["id"]},
    )
    assert again["duplicate"] is True
    assert (
        len(
            [
                e
                for e in entries(owner, action="document.create")
                if e["changes"]["agentId"] == agent["id"]
            ]
        )
        == 1
    )
    owner.ok("PUT", f"/api/rag/documents/{uploaded['id']}", json={"visibility": "members"})
    assert by_owner(entry(owner, "document.update", uploaded["id"])) == {"visibility": "members"}
    owner.ok("DELETE", f"/api/rag/documents/{uploaded['id']}")
    deleted = by_owner(entry(owner, "document.delete", uploaded["id"]))
    assert deleted == {"agentId": agent["id"], "name": uploaded["name"]}
    assert "combination" not in json.dumps(entries(owner, action="document.", limit=200))


def test_memories_the_owner_writes_are_audited_by_their_length(owner: Api, by_owner: Any) -> None:
    agent = new_agent(owner)
    path = f"/api/agents/{agent['id']}/memories"
    content = "The owner keeps the spare key under the blue flowerpot."
    memory = owner.ok("POST", path, json={"content": content})["memory"]
    created = by_owner(entry(owner, "memory.create", memory["id"]))
    assert created == {
        "agentId": agent["id"],
        "type": "semantic",
        "content": {"length": len(content)},
        "channelId": None,
    }
    newer = "The owner moved the spare key to the red flowerpot."
    owner.ok("PUT", f"{path}/{memory['id']}", json={"content": newer, "type": "episodic"})
    updated = by_owner(entry(owner, "memory.update", memory["id"]))
    assert updated == {
        "agentId": agent["id"],
        "type": "episodic",
        "content": {"length": len(newer)},
    }
    owner.ok("POST", f"{path}/{memory['id']}/restore", json={"version": 1})
    restored = by_owner(entry(owner, "memory.restore", memory["id"]))
    assert restored == {
        "agentId": agent["id"],
        "version": 1,
        "type": "semantic",
        "content": {"length": len(content)},
    }
    owner.ok("DELETE", f"{path}/{memory['id']}")
    assert by_owner(entry(owner, "memory.delete", memory["id"])) == {"agentId": agent["id"]}
    assert "flowerpot" not in json.dumps(entries(owner, action="memory.", limit=200))


def test_schedules_are_audited_and_their_prompt_only_by_its_length(
    owner: Api, by_owner: Any
) -> None:
    agent = new_agent(owner)
    channel = new_channel(owner, [agent["id"]])
    prompt = "Remind me of the anniversary dinner."
    body = {"agentId": agent["id"], "channelId": channel["id"], "prompt": prompt}
    schedule = owner.ok("POST", "/api/schedules", json={**body, "schedule": "0 9 * * 1"})
    schedule_id = schedule["schedule"]["id"]
    created = by_owner(entry(owner, "schedule.create", schedule_id))
    assert created == {
        "agentId": agent["id"],
        "channelId": channel["id"],
        "schedule": "0 9 * * 1",
        "at": None,
        "prompt": {"length": len(prompt)},
    }
    owner.ok("PATCH", f"/api/schedules/{schedule_id}", json={"active": False})
    assert by_owner(entry(owner, "schedule.update", schedule_id)) == {"active": False}
    owner.ok("PATCH", f"/api/schedules/{schedule_id}", json={"active": False})
    assert (
        len([e for e in entries(owner, action="schedule.update") if e["target"] == schedule_id])
        == 1
    )
    owner.ok("DELETE", f"/api/schedules/{schedule_id}")
    deleted = by_owner(entry(owner, "schedule.delete", schedule_id))
    assert deleted == {"agentId": agent["id"], "channelId": channel["id"]}
    assert "anniversary" not in json.dumps(entries(owner, action="schedule.", limit=200))


def test_a_chain_a_guest_starts_is_the_guests(server: Server, owner: Api) -> None:
    with Guest(server, owner) as guest:
        agents = [new_agent(owner)["id"], new_agent(owner)["id"]]
        channel = new_channel(owner, agents, [guest.id])
        body = {"channelId": channel["id"], "agentIds": agents, "content": "Plan the party."}
        chain = guest.api.ok("POST", "/api/chains", json=body)["chain"]
        row = entry(owner, "chain.create", chain["id"])
        assert (row["actorId"], row["address"]) == (guest.id, "127.0.0.1")
        assert row["changes"] == {"channelId": channel["id"], "agentIds": agents}
    assert "party" not in json.dumps(entries(owner, action="chain.", limit=200))


def test_the_owner_deleting_someone_elses_message_is_audited_without_its_text(
    server: Server, owner: Api, by_owner: Any
) -> None:
    with Guest(server, owner) as guest:
        channel = new_channel(owner, member_ids=[guest.id])
        theirs = post(guest.api, channel["id"], "my bank pin is 9921")
        own = post(guest.api, channel["id"], "delete me myself")
        mine = post(owner, channel["id"], "the owner's own words")
        owner.ok("DELETE", f"/api/messages/{theirs}")
        deleted = by_owner(entry(owner, "message.delete", theirs))
        assert deleted == {"channelId": channel["id"], "authorId": guest.id}
        guest.api.ok("DELETE", f"/api/messages/{own}")
        owner.ok("DELETE", f"/api/messages/{mine}")
        assert none_of(owner, "message.delete", own)
        assert none_of(owner, "message.delete", mine)
    assert "9921" not in json.dumps(entries(owner, action="message.", limit=200))


def test_a_channel_import_is_audited_by_its_name_and_size_not_its_text(
    owner: Api, by_owner: Any
) -> None:
    name = unique("imported")
    document = {
        "format": "palaver.channel",
        "version": 1,
        "channel": {"name": name, "type": "group"},
        "people": [],
        "files": [],
        "messages": [
            {
                "id": "msg_old1",
                "content": "the vault code is quokka-vault",
                "createdAt": "2025-01-02T03:04:05Z",
            }
        ],
    }
    response = owner.post(
        "/api/channels/import",
        files={"file": ("channel.json", json.dumps(document).encode(), "application/json")},
    )
    assert response.status_code == 200, response.text
    [made] = response.json()["channels"]
    changes = by_owner(entry(owner, "channel.import", made["id"]))
    assert changes == {"name": name, "agentIds": [], "messages": 1}
    # Letters no id holds (ids are hex or upper-case base 32), so no id can contain them.
    assert "quokka" not in json.dumps(entries(owner, action="channel.", limit=200))


def test_logins_failed_logins_and_logouts_carry_the_client_address(
    server: Server, owner: Api
) -> None:
    """The shared server trusts its proxy: the address is the last X-Forwarded-For entry."""
    address = "198.51.100.24"
    forwarded = {"X-Forwarded-For": f"10.9.9.9, {address}"}
    with Guest(server, owner) as guest, server.client(headers=forwarded) as client:
        wrong = "wrong-" + unique()
        assert client.post("/api/login", json={"password": wrong}).status_code == 401
        failed = entries(owner, action="login.failed", limit=1)[0]
        assert failed["actorId"] is None and failed["target"] is None
        assert (failed["address"], failed["changes"]) == (address, {})
        response = client.post("/api/login", json={"password": guest.key})
        assert response.status_code == 200
        logged = entries(owner, actor=guest.id, action="login.succeeded", limit=1)[0]
        assert (logged["target"], logged["address"]) == (guest.id, address)
        client.ok("POST", "/api/logout")
        out = entries(owner, actor=guest.id, action="logout.succeeded", limit=1)[0]
        assert (out["target"], out["address"]) == (guest.id, address)
        token = response.cookies["session"]
        text_of_rows = json.dumps(entries(owner, action="login.", limit=200))
        assert wrong not in text_of_rows and guest.key not in text_of_rows
        assert token not in text_of_rows and token_hash(token) not in text_of_rows


SECRET = "Kq~9Z~xW~v7~Rt~3L~m5~Pz~Y8~Hd~4N"
"""Every run of four characters of it holds a `~`, which nothing else the suite writes does:
no part of it longer than the mask's four shown characters can appear in a row by chance."""


def _secrets(tag: str) -> list[str]:
    return [f"{SECRET}~{tag}{n}" for n in range(7)]


def _leaks(text: str, secret: str) -> list[str]:
    """Every part of `secret` of four characters or more that `text` holds."""
    return sorted({secret[i : i + 4] for i in range(len(secret) - 3) if secret[i : i + 4] in text})


def test_no_secret_value_ever_appears_in_an_audit_row(server: Server, owner: Api) -> None:
    provider, mcp = unique("p"), unique("m")
    api, env, header, url_pw, url_token, arg_pw, search = _secrets("a")
    patch = {
        "providers": {provider: {"type": "openai", "baseUrl": "http://x/v1", "apiKey": api}},
        "mcpServers": {
            mcp: {
                "args": ["--db", f"postgresql://bob:{arg_pw}@db.example/app"],
                "env": {"TOKEN": env},
                "url": f"https://bob:{url_pw}@mcp.example/mcp?api_key={url_token}",
                "headers": {"Authorization": f"Bearer {header}"},
            }
        },
        "webSearch": {"provider": "brave", "apiKey": search},
    }
    try:
        owner.ok("PUT", "/api/settings", json=patch)
        changed = {
            "providers": {provider: {"apiKey": _secrets("b")[0]}},
            "mcpServers": {mcp: {"env": {"TOKEN": _secrets("b")[1], "MORE": _secrets("b")[2]}}},
            "webSearch": {"apiKey": _secrets("b")[3]},
        }
        owner.ok("PUT", "/api/settings", json=changed)
    finally:
        owner.ok(
            "PUT",
            "/api/settings",
            json={
                "providers": {provider: None},
                "mcpServers": {mcp: None},
                "webSearch": {"provider": None, "apiKey": None},
            },
        )
    shown = entry(owner, "mcpServer.create", mcp)["changes"]
    assert shown["env"] == {"TOKEN": CHANGED}
    assert shown["args"] == ["--db", "postgresql://bob:••••@db.example/app"]
    assert entry(owner, "mcpServer.update", mcp)["changes"] == {
        "env": {"TOKEN": CHANGED, "MORE": CHANGED}
    }
    assert entry(owner, "provider.update", provider)["changes"] == {"apiKey": CHANGED}
    searched = [e["changes"].get("webSearch") for e in entries(owner, action="settings.update")]
    assert {"apiKey": CHANGED} in searched and {"provider": None, "apiKey": None} in searched
    rows: list[dict[str, Any]] = []
    before = None
    while True:
        page = entries(owner, limit=200, **({"before": before} if before else {}))
        rows += page
        if len(page) < 200:
            break
        before = page[-1]["id"]
    assert len(rows) == sql(server, "SELECT count(*) FROM audit_log")[0][0]
    text_of_rows = json.dumps(rows, ensure_ascii=False)
    stored = json.dumps(sql(server, "SELECT * FROM audit_log"), ensure_ascii=False, default=str)
    for secret in [*_secrets("a"), *_secrets("b")[:4]]:
        assert _leaks(text_of_rows, secret) == [], secret
        assert _leaks(stored, secret) == [], secret


def test_guests_cannot_read_the_audit_log(server: Server, owner: Api) -> None:
    with Guest(server, owner) as guest:
        refused = guest.api.get("/api/audit")
        assert refused.status_code == 403 and refused.json()["error"]
    with server.client() as anonymous:
        assert anonymous.get("/api/audit").status_code == 401


def test_pages_go_back_with_before_and_filter_by_actor_and_action(
    server: Server, owner: Api, owner_id: str
) -> None:
    with Guest(server, owner) as guest:
        for _ in range(4):
            server.login(guest.key).close()
        logins = entries(owner, actor=guest.id)
        assert [e["action"] for e in logins] == ["login.succeeded"] * 5
        assert [e["id"] for e in logins] == sorted((e["id"] for e in logins), reverse=True)
        assert [e["at"] for e in logins] == sorted((e["at"] for e in logins), reverse=True)
        first = entries(owner, actor=guest.id, limit=2)
        second = entries(owner, actor=guest.id, limit=2, before=first[-1]["id"])
        third = entries(owner, actor=guest.id, limit=2, before=second[-1]["id"])
        assert [e["id"] for e in first + second + third] == [e["id"] for e in logins]
        assert entries(owner, actor=guest.id, before=logins[-1]["id"]) == []
        assert entries(owner, actor=guest.id, action="login.") == logins
        assert entries(owner, actor=guest.id, action="login.succeeded") == logins
        assert entries(owner, actor=guest.id, action="login.failed") == []
        assert entries(owner, actor=guest.id, action="logi.") == []
        mine = entries(owner, actor=owner_id, action="guest.", limit=200)
        assert {e["actorId"] for e in mine} == {owner_id}
        assert any(e["target"] == guest.id and e["action"] == "guest.create" for e in mine)
        assert all(e["action"].startswith("guest.") for e in mine)
        newest = entries(owner, limit=3)
        assert len(newest) == 3 and len(entries(owner)) <= 50
        assert [e["id"] for e in newest] == sorted((e["id"] for e in newest), reverse=True)
        assert entries(owner, actor="user_NOBODY") == []


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": 201},
        {"limit": "many"},
        {"before": "msg_01J0000000000000000000000"},
        {"before": "audit_" + "u" * 26},
        {"actor": "user_1 OR 1=1"},
        {"actor": "x" * 41},
        {"action": "agent"},
        {"action": "agent.create.more"},
        {"action": ".create"},
        {"action": "agent.cre ate"},
    ],
)
def test_bad_queries_are_400_with_an_error(owner: Api, params: dict[str, Any]) -> None:
    response = owner.get("/api/audit", params=params)
    assert response.status_code == 400, response.text
    assert response.json()["error"]


def test_rows_cannot_be_changed_or_deleted(server: Server, owner: Api) -> None:
    newest = entries(owner, limit=1)[0]
    for statement in (
        "UPDATE audit_log SET action = 'x.y' WHERE id = ?",
        "DELETE FROM audit_log WHERE id = ?",
    ):
        with pytest.raises(Exception, match="append-only"):
            sql(server, statement, newest["id"])
    assert sql(server, "SELECT action FROM audit_log WHERE id = ?", newest["id"]) == [
        (newest["action"],)
    ]


def test_rows_are_read_from_the_database_each_time(server: Server, owner: Api) -> None:
    """Nothing caches them: a row another node wrote is seen at once (here, written by SQL,
    with an id older than any the server makes, so that it is not the newest)."""
    entries(owner, action="node.")
    row_id = "audit_0000000000000000" + unique("").upper()
    sql(
        server,
        "INSERT INTO audit_log (id, at, actor_id, action, resource, target, changes, node, "
        "address) VALUES (?, ?, NULL, 'node.test', 'node', NULL, '{}', 'node_OTHER', NULL)",
        row_id,
        "2020-01-01 00:00:00.000000",
    )
    found = [e for e in entries(owner, action="node.", limit=200) if e["id"] == row_id]
    assert found == [
        {
            "id": row_id,
            "at": "2020-01-01T00:00:00.000Z",
            "actorId": None,
            "action": "node.test",
            "target": None,
            "changes": {},
            "node": "node_OTHER",
            "address": None,
        }
    ]
