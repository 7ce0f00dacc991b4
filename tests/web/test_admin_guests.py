"""The guests screen and a channel's settings: a guest invited in the page logs in with the key
shown once, sees only the channels it was added to, and is logged out when deleted."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.support import Api, Server, unique
from tests.web.conftest import Browse, agent, channel, log_in, open_channel
from tests.web.test_accessibility import serious


def test_a_guest_invited_in_the_page_sees_only_its_channels_and_is_logged_out_when_deleted(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    helper = agent(web_owner, name=unique("Host"), avatar="🛎️")
    shared = channel(web_owner, [helper], name=unique("lobby-"))
    private = channel(web_owner, [helper], name=unique("backroom-"))
    name = unique("Dana ")

    owner = browse.page()
    owner.context.grant_permissions(["clipboard-read", "clipboard-write"])
    log_in(owner, web_server.owner_key, "/admin/guests")
    owner.get_by_label("Name").fill(name)
    owner.get_by_role("button", name="Invite").click()
    dialog = owner.get_by_role("dialog", name=f"{name} is invited")
    expect(dialog).to_contain_text("This key will not be shown again")
    key = dialog.get_by_label("The guest's key").input_value()
    assert len(key) >= 20
    dialog.get_by_role("button", name="Copy").click()
    expect(dialog.get_by_role("button", name="Copied")).to_be_visible()
    assert owner.evaluate("navigator.clipboard.readText()") == key
    assert serious(owner) == []
    dialog.get_by_role("button", name="Done").click()
    expect(owner.get_by_role("dialog")).to_have_count(0)
    expect(owner.get_by_text(key)).to_have_count(0)
    expect(owner.get_by_role("listitem").filter(has_text=name)).to_contain_text("channels: none")

    owner.get_by_role("navigation", name="Channels").get_by_role(
        "link", name=shared["name"]
    ).click()
    owner.get_by_role("button", name="Channel settings").click()
    settings = owner.get_by_role("dialog", name="Channel settings")
    settings.get_by_role("checkbox", name=name).check()
    settings.get_by_role("button", name="Save").click()
    expect(owner.get_by_role("dialog")).to_have_count(0)
    [guest_id] = [
        g["id"] for g in web_owner.ok("GET", "/api/guests")["guests"] if g["name"] == name
    ]
    assert guest_id in web_owner.ok("GET", f"/api/channels/{shared['id']}")["channel"]["memberIds"]

    guest = browse.page()
    log_in(guest, key)
    nav = guest.get_by_role("navigation", name="Channels")
    expect(nav.get_by_role("link", name=shared["name"])).to_be_visible()
    expect(nav.get_by_role("link", name=private["name"])).to_have_count(0)

    owner.goto("/admin/guests")
    owner.get_by_role("button", name=f"Delete guest {name}").click()
    confirm = owner.get_by_role("dialog", name=f"Delete {name}?")
    expect(confirm).to_contain_text("logged out at once")
    confirm.get_by_role("button", name="Delete guest").click()
    expect(owner.get_by_role("listitem").filter(has_text=name)).to_have_count(0)
    expect(guest.get_by_label("Password or guest key")).to_be_visible()
    with web_server.client() as anyone:
        assert anyone.post("/api/login", json={"password": key}).status_code == 401


def test_a_channel_is_renamed_and_a_dm_given_another_agent_in_its_settings(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    first = agent(web_owner, name=unique("First"), avatar="🥇")
    second = agent(web_owner, name=unique("Second"), avatar="🥈")
    dm = web_owner.ok(
        "POST",
        "/api/channels",
        json={"name": unique("dm-"), "type": "dm", "agentIds": [first["id"]]},
    )["channel"]
    page = browse.page()
    open_channel(page, web_server, dm["id"])
    page.get_by_role("button", name="Channel settings").click()
    settings = page.get_by_role("dialog", name="Channel settings")
    expect(settings).to_contain_text("a direct message has exactly one")
    assert serious(page) == []
    new_name = unique("renamed-")
    settings.get_by_label("Name").fill(new_name)
    settings.get_by_role("radio", name=second["name"]).check()
    settings.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", level=1, name=new_name)).to_be_visible()
    expect(page.get_by_role("navigation", name="Channels")).to_contain_text(new_name)
    stored = web_owner.ok("GET", f"/api/channels/{dm['id']}")["channel"]
    assert stored["name"] == new_name and stored["agentIds"] == [second["id"]]


def test_a_guest_sees_no_channel_settings(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    invited = web_owner.ok("POST", "/api/guests", json={"name": unique("Gil ")})
    room = channel(web_owner, [], memberIds=[invited["user"]["id"]])
    page = browse.page()
    open_channel(page, web_server, room["id"], invited["key"])
    expect(page.get_by_role("heading", level=1, name=room["name"])).to_be_visible()
    expect(page.get_by_role("button", name="Channel settings")).to_have_count(0)
