"""The schedules, settings and guests screens and a channel's settings, on a server of their
own with a scene in it: axe finds no serious violation in either theme at desktop and phone
widths, an MCP server shows its state and tools, and the screenshots in docs/screenshots are
taken from them (the settings' prices as well)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from playwright.sync_api import expect

from tests.fakes.mcp_server import stdio_command
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.search_servers import FakeSearchServer
from tests.support import Guest, Server
from tests.web.conftest import DESKTOP, PHONE, Browse, Shot, agent, channel, configure, log_in
from tests.web.test_accessibility import serious


def _check(page: Any, what: str) -> None:
    for viewport in (DESKTOP, PHONE):
        page.set_viewport_size(viewport)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            assert serious(page) == [], (what, viewport, scheme)
    page.set_viewport_size(DESKTOP)
    page.emulate_media(color_scheme="light")


def _shoot(page: Any, shoot: Shot, name: str) -> None:
    page.evaluate("document.querySelector('.content')?.scrollTo(0, 0)")
    page.mouse.move(0, 0)
    page.evaluate("document.fonts.ready")
    page.wait_for_timeout(150)
    shoot(page, f"{name}-desktop-light")
    page.emulate_media(color_scheme="dark")
    page.wait_for_timeout(100)
    shoot(page, f"{name}-desktop-dark")
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(PHONE)
    page.wait_for_timeout(150)
    shoot(page, f"{name}-phone-light")
    page.set_viewport_size(DESKTOP)


def test_the_settings_schedules_and_guests_screens_are_accessible_and_pictured(
    browse: Browse,
    fresh_server: Server,
    fake_model: FakeOpenAI,
    searxng: FakeSearchServer,
    shoot: Shot,
) -> None:
    fresh_server.start()
    owner = fresh_server.login()
    configure(owner, fake_model, searxng)
    command, args = stdio_command()
    owner.ok(
        "PUT",
        "/api/settings",
        json={
            "providers": {
                "anthropic": {"type": "anthropic", "apiKey": "sk-ant-demo-key-for-screens-4f2b"}
            },
            "prices": {
                "anthropic/claude-sonnet-4": {"input": 3, "output": 15, "cachedInput": 0.3},
                "fake/gpt-test": {"input": 1.25, "output": 10},
            },
            "mcpServers": {
                "toolbox": {
                    "command": command,
                    "args": args,
                    "env": {"TOOLBOX_TOKEN": "tb-1234-abcd"},
                }
            },
        },
    )
    researcher = agent(owner, name="Researcher", avatar="🔎")
    writer = agent(owner, name="Writer", avatar="✍️")
    with Guest(fresh_server, owner, name="Maya") as maya, Guest(fresh_server, owner, name="Sam"):
        room = channel(owner, [researcher, writer], name="launch-plan", memberIds=[maya.id])
        channel(owner, [writer], name="Writer", type="dm")
        soon = (datetime.now(UTC) + timedelta(days=2)).replace(hour=15, minute=30, second=0)
        for body in (
            {
                "agentId": researcher["id"],
                "prompt": "Summarise the week's news",
                "schedule": "0 9 * * 1",
            },
            {"agentId": writer["id"], "prompt": "Draft the launch post", "at": soon.isoformat()},
            {"agentId": writer["id"], "prompt": "Check the changelog", "schedule": "30 17 * * 1-5"},
        ):
            owner.ok("POST", "/api/schedules", json={"channelId": room["id"], **body})
        paused = owner.ok("GET", "/api/schedules")["schedules"][-1]
        owner.ok("PATCH", f"/api/schedules/{paused['id']}", json={"active": False})

        page = browse.page(server=fresh_server)
        log_in(page, fresh_server.owner_key, "/admin/schedules")
        expect(page.get_by_role("row").filter(has_text="Check the changelog")).to_contain_text(
            "Paused"
        )
        _check(page, "schedules")
        _shoot(page, shoot, "admin-schedules")

        page.get_by_role("navigation", name="Administration").get_by_role(
            "link", name="Settings"
        ).click()
        toolbox = page.get_by_role("form", name="MCP server toolbox")
        expect(toolbox).to_contain_text("Status: ready", timeout=30_000)
        toolbox.locator("summary").click()
        expect(toolbox).to_contain_text("add")
        expect(toolbox.get_by_label("Environment")).to_have_value("TOOLBOX_TOKEN=••••abcd")
        _check(page, "settings")
        _shoot(page, shoot, "admin-settings")
        prices = page.get_by_role("form", name="Prices")
        expect(prices.get_by_role("group", name="fake/gpt-test")).to_be_visible()
        for viewport, scheme in ((DESKTOP, "light"), (DESKTOP, "dark"), (PHONE, "light")):
            page.set_viewport_size(viewport)
            page.emulate_media(color_scheme=scheme)
            page.evaluate("document.getElementById('prices').scrollIntoView()")
            page.wait_for_timeout(150)
            shoot(
                page,
                f"admin-settings-prices-{'phone' if viewport == PHONE else 'desktop'}-{scheme}",
            )
        page.set_viewport_size(DESKTOP)
        page.emulate_media(color_scheme="light")

        page.get_by_role("navigation", name="Administration").get_by_role(
            "link", name="Guests"
        ).click()
        expect(page.get_by_role("listitem").filter(has_text="Maya")).to_contain_text("launch-plan")
        _check(page, "guests")
        _shoot(page, shoot, "admin-guests")

        page.goto(f"/c/{room['id']}")
        page.get_by_role("button", name="Channel settings").click()
        expect(page.get_by_role("dialog", name="Channel settings")).to_contain_text("Maya")
        _check(page, "channel settings")
        _shoot(page, shoot, "channel-settings")
    owner.close()
