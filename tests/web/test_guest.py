"""A guest sees its own channels only, and none of the owner's controls."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text
from tests.support import Api, Guest, Server, post, unique
from tests.web.conftest import Browse, agent, channel, log_in


def test_a_guest_sees_only_its_channels_and_no_owner_controls(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    helper = agent(web_owner, name=unique("Guide"), avatar="🧭")
    with Guest(web_server, web_owner, name=unique("Gus ")) as guest:
        mine = channel(web_owner, [helper], name=unique("ac-guests-"), memberIds=[guest.id])
        hidden = channel(web_owner, [], name=unique("ac-private-"))
        post(web_owner, hidden["id"], "owner-only secret")
        page = browse.page()
        log_in(page, guest.key)
        nav = page.get_by_role("navigation", name="Channels")
        expect(nav.get_by_role("link", name=mine["name"])).to_be_visible()
        expect(nav.get_by_role("link", name=hidden["name"])).to_have_count(0)
        expect(page.get_by_role("button", name="New channel")).to_have_count(0)
        expect(nav).to_contain_text("Guest")

        nav.get_by_role("link", name=mine["name"]).click()
        fake_model.enqueue(text("Happy to help."))
        page.get_by_role("textbox", name="Message").fill(f"@{helper['name']} hello")
        page.keyboard.press("Enter")
        expect(page.locator("article", has_text="Happy to help.")).to_have_attribute(
            "aria-busy", "false"
        )

        page.goto(f"/c/{hidden['id']}")
        expect(
            page.get_by_text("This channel does not exist, or you are not a member")
        ).to_be_visible()
        expect(page.get_by_text("owner-only secret")).to_have_count(0)
        expect(page.get_by_role("textbox", name="Message")).to_have_count(0)
