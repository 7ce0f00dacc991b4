"""The audit screen (issue 24): the owner's and a guest's real actions, and a failed login, show
newest first with names in place of ids; filters by actor and by action (one, or every action
of a resource) ask the server; "Load older" pages back with `before` to the end; a guest sees
no audit screen. axe finds no serious violation, and the screenshots in docs/screenshots are
taken from it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.search_servers import FakeSearchServer
from tests.support import Api, Guest, Server, unique
from tests.web.admin_pictures import accessible_and_pictured
from tests.web.conftest import Browse, Shot, agent, configure, log_in


@pytest.fixture(scope="module")
def audit_server(
    tmp_path_factory: pytest.TempPathFactory, fake_model: FakeOpenAI, searxng: FakeSearchServer
) -> Iterator[Server]:
    """A server of this module's own: its audit log holds what these tests did."""
    srv = Server(tmp_path_factory.mktemp("audit"))
    srv.start()
    with srv.login() as owner:
        configure(owner, fake_model, searxng)
    yield srv
    srv.stop()


@pytest.fixture
def owner(audit_server: Server) -> Iterator[Api]:
    api = audit_server.login()
    yield api
    api.close()


def entries(owner: Api, **params: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = owner.ok("GET", "/api/audit", params=params)["entries"]
    return found


def rows(page: Any) -> Any:
    return page.get_by_role("table").locator("tbody tr")


def test_the_audit_log_shows_who_changed_what_and_filters_by_actor_and_action(
    browse: Browse, audit_server: Server, owner: Api
) -> None:
    scribe = agent(owner, name=unique("Scribe"))
    renamed = unique("Archivist")
    owner.ok("PUT", f"/api/agents/{scribe['id']}", json={"name": renamed})
    with httpx.Client(base_url=audit_server.base_url) as stranger:
        assert stranger.post("/api/login", json={"password": "wrong"}).status_code == 401
    with Guest(audit_server, owner, name=unique("Noor ")) as noor:
        page = browse.page(server=audit_server)
        log_in(page, audit_server.owner_key, "/admin/audit")
        expect(page.get_by_role("heading", level=1, name="Audit log")).to_be_focused()

        # Newest first: the owner's own login for this page leads.
        first = rows(page).first
        expect(first).to_contain_text("login.succeeded")
        expect(first).to_contain_text("127.0.0.1")
        newest = entries(owner, limit=50)
        expect(rows(page)).to_have_count(len(newest))
        assert [e["id"] for e in newest] == sorted((e["id"] for e in newest), reverse=True)

        update = rows(page).filter(has_text="agent.update")
        expect(update).to_contain_text(f"{renamed} (agent)")
        expect(update).to_contain_text(f"name: {renamed}")
        failed = rows(page).filter(has_text="login.failed")
        expect(failed).to_contain_text("Nobody known")
        expect(failed).to_contain_text("127.0.0.1")
        invited = rows(page).filter(has_text="guest.create")
        expect(invited).to_contain_text(f"{noor.user['name']} (guest)")
        expect(invited).to_contain_text("key: (changed)")
        assert noor.key not in page.content()

        page.get_by_label("Actor").select_option(label=noor.user["name"])
        expect(rows(page)).to_have_count(1)
        expect(rows(page).first).to_contain_text("login.succeeded")
        expect(rows(page).first).to_contain_text(f"{noor.user['name']} (guest)")

        page.get_by_label("Actor").select_option(label="Anyone")
        action = page.get_by_label("Action")
        action.fill("agent")
        expect(rows(page)).to_have_count(len(entries(owner, action="agent.", limit=50)))
        for text in rows(page).locator("code").all_inner_texts():
            assert text.startswith("agent."), text
        action.fill("agent.update")
        expect(rows(page)).to_have_count(1)

        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url) if "/api/audit" in r.url else None)
        action.fill("agent.up date")
        expect(action).to_have_attribute("aria-invalid", "true")
        expect(page.locator("#audit-action-hint")).to_contain_text("An action is resource.verb")
        page.wait_for_timeout(600)
        assert asked == []
        action.fill("nothing.here")
        expect(page.get_by_text("No entries match.")).to_be_visible()


def test_load_older_pages_back_to_the_first_entry(
    browse: Browse, audit_server: Server, owner: Api
) -> None:
    for n in range(60):
        owner.ok("PUT", "/api/settings", json={"limits": {"messagesPerMinute": 90_000 + n}})
    everything = []
    before = None
    while True:
        page_of = entries(owner, limit=200, **({"before": before} if before else {}))
        everything += page_of
        if len(page_of) < 200:
            break
        before = page_of[-1]["id"]

    page = browse.page(server=audit_server)
    log_in(page, audit_server.owner_key, "/admin/audit")
    expect(rows(page)).to_have_count(50)
    newest = rows(page).filter(has_text="settings.update").first
    expect(newest).to_contain_text("limits.messagesPerMinute: 90059")
    older = page.get_by_role("button", name="Load older")
    while older.count():
        shown = rows(page).count()
        older.click()
        expect(rows(page)).not_to_have_count(shown)
    ids = [r.get_attribute("data-entry") for r in rows(page).all()]
    # Everything once, newest first, down to the first entry (this page's own login is newer).
    assert len(ids) == len(set(ids)) == len(everything) + 1
    assert ids[1:] == [e["id"] for e in everything]


def test_a_guest_sees_no_audit_screen(browse: Browse, audit_server: Server, owner: Api) -> None:
    with Guest(audit_server, owner, name=unique("Rui ")) as rui:
        page = browse.page(server=audit_server)
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url))
        log_in(page, rui.key, "/admin/audit")
        expect(page.get_by_role("heading", name="Nothing here")).to_be_visible()
        expect(page.get_by_role("navigation", name="Administration")).to_have_count(0)
        expect(page.get_by_role("link", name="Agents & settings")).to_have_count(0)
        assert not [u for u in asked if "/api/audit" in u], asked
        assert rui.api.get("/api/audit").status_code == 403


def test_the_audit_screen_is_accessible_and_pictured(
    browse: Browse, audit_server: Server, owner: Api, shoot: Shot
) -> None:
    researcher = agent(owner, name="Researcher", avatar="🔎")
    owner.ok(
        "PUT",
        f"/api/agents/{researcher['id']}",
        json={"soul": "You dig up sources and cite them.", "tools": ["web_search"]},
    )
    owner.ok(
        "PUT",
        "/api/settings",
        json={"budgets": {"agents": {researcher["id"]: {"monthlyTokens": 500_000}}}},
    )
    with Guest(audit_server, owner, name="Maya"):
        page = browse.page(server=audit_server)
        log_in(page, audit_server.owner_key, "/admin/audit")
        expect(rows(page).first).to_contain_text("login.succeeded")
        accessible_and_pictured(page, shoot, "admin-audit")
