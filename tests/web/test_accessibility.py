"""axe-core, injected into the page: no serious or critical violation on the login page and
the channel view, in the light and the dark theme, at desktop and phone widths."""

from __future__ import annotations

from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text, tool_call, tool_calls
from tests.support import Api, Server, post, unique
from tests.web.conftest import DESKTOP, PHONE, Browse, agent, channel, open_channel

AXE = Axe()


def serious(page: Any) -> list[str]:
    found = AXE.run(page).response["violations"]
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:5]}"
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_login_page_has_no_serious_violation(browse: Browse, scheme: str) -> None:
    page = browse.page(color_scheme=scheme)
    page.goto("/login")
    page.get_by_label("Password or guest key").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_be_visible()
    for viewport in (DESKTOP, PHONE):
        page.set_viewport_size(viewport)
        assert serious(page) == [], viewport


def test_the_channel_view_has_no_serious_violation_in_either_theme(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    scout = agent(web_owner, name=unique("Seer"), avatar="🔭", tools=["web_search"])
    room = channel(web_owner, [scout])
    post(web_owner, room["id"], "# Heading\n\n- a list\n- [a link](https://example.org/)\n\n`code`")
    fake_model.enqueue(
        tool_calls(tool_call("web_search", {"query": "x"})), text("Done, see **above**.")
    )
    post(web_owner, room["id"], f"@{scout['name']} search")
    page = browse.page()
    open_channel(page, web_server, room["id"])
    expect(page.locator("article", has_text="Done, see above.")).to_have_attribute(
        "aria-busy", "false", timeout=30_000
    )
    page.get_by_test_id("tool-card").get_by_role("button").click()
    for viewport in (DESKTOP, PHONE):
        page.set_viewport_size(viewport)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            assert serious(page) == [], (viewport, scheme)
    page.get_by_role("button", name="Open the channel list").click()
    assert serious(page) == []
