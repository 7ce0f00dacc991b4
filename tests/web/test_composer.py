"""The composer: mentions by keyboard, attachments with progress, and text never lost."""

from __future__ import annotations

import base64
from typing import Any

from playwright.sync_api import expect

from tests.support import Api, Server, unique
from tests.web.conftest import Browse, agent, channel, open_channel

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def messages(api: Api, channel_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api.ok(
        "GET", "/api/messages", params={"channelId": channel_id, "limit": 200}
    )["messages"]
    return found


def test_at_opens_the_agents_and_the_keyboard_picks_one(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    tag = unique("")[-5:]
    alpha = agent(web_owner, name=f"Code{tag}", avatar="💻")
    beta = agent(web_owner, name=f"Code Reviewer{tag}", avatar="🔍")
    gamma = agent(web_owner, name=f"Planner{tag}", avatar="🗺️")
    room = channel(web_owner, [alpha, beta, gamma])
    page = browse.page()
    open_channel(page, web_server, room["id"])
    box = page.get_by_role("textbox", name="Message")
    box.click()
    box.type("ask @co")
    menu = page.get_by_role("listbox", name="Agents")
    expect(menu.get_by_role("option")).to_have_count(2)
    expect(menu.get_by_role("option", selected=True)).to_contain_text(beta["name"])
    box.press("ArrowDown")
    expect(menu.get_by_role("option", selected=True)).to_have_text(f"💻 {alpha['name']}")
    box.press("ArrowDown")
    box.press("ArrowUp")
    box.press("ArrowUp")
    expect(menu.get_by_role("option", selected=True)).to_contain_text(beta["name"])
    box.press("Enter")
    expect(menu).to_be_hidden()
    expect(box).to_have_value(f"ask @{beta['name']} ")
    box.type("and @PLA")
    expect(menu.get_by_role("option")).to_have_count(1)
    box.press("Tab")
    expect(box).to_have_value(f"ask @{beta['name']} and @{gamma['name']} ")
    box.type("mail@co")
    expect(menu).to_be_hidden()
    box.press("Escape")
    box.type(" @c")
    expect(menu).to_be_visible()
    box.press("Escape")
    expect(menu).to_be_hidden()
    expect(box).to_have_value(f"ask @{beta['name']} and @{gamma['name']} mail@co @c")


def test_files_attached_by_button_paste_and_drop_upload_with_progress_and_post(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    room = channel(web_owner, [])
    page = browse.page()
    open_channel(page, web_server, room["id"])
    cdp = page.context.new_cdp_session(page)
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 200_000},
    )
    page.locator("input[type=file]").set_input_files(
        {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"n" * 600_000}
    )
    progress = page.get_by_role("progressbar", name="Uploading notes.txt")
    expect(progress).to_be_visible()
    page.wait_for_function(
        "() => { const p = document.querySelector('progress'); return p && p.value > 0.05; }"
    )
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    link = page.get_by_role("link", name="notes.txt")
    expect(link).to_be_visible(timeout=20_000)
    expect(progress).to_have_count(0)
    assert link.get_attribute("href", timeout=1000).startswith("/uploads/")  # type: ignore[union-attr]

    page.get_by_role("textbox", name="Message").evaluate(
        """(box, png) => {
            const bytes = Uint8Array.from(atob(png), c => c.charCodeAt(0));
            const data = new DataTransfer();
            data.items.add(new File([bytes], "dot.png", {type: "image/png"}));
            box.dispatchEvent(new ClipboardEvent("paste", {clipboardData: data, bubbles: true}));
        }""",
        base64.b64encode(PNG).decode(),
    )
    image = page.get_by_role("img", name="dot.png")
    expect(image).to_be_visible()
    page.wait_for_function(
        "() => [...document.images].some(i => i.alt === 'dot.png' && i.naturalWidth === 1)"
    )

    page.get_by_role("region", name=f"Channel {room['name']}").evaluate(
        """section => {
            const data = new DataTransfer();
            data.items.add(new File(["<svg onload=alert(1)></svg>"], "evil.svg",
                                    {type: "image/svg+xml"}));
            for (const type of ["dragenter", "dragover", "drop"]) {
                section.dispatchEvent(new DragEvent(type, {dataTransfer: data, bubbles: true,
                                                           cancelable: true}));
            }
        }"""
    )
    expect(page.get_by_role("link", name="evil.svg")).to_be_visible()
    stored = [(m["type"], m["metadata"].get("name")) for m in messages(web_owner, room["id"])]
    assert stored == [("file", "notes.txt"), ("image", "dot.png"), ("file", "evil.svg")]


def test_a_send_refused_for_speed_shows_when_to_retry_and_keeps_the_text(
    browse: Browse, fresh_server: Server
) -> None:
    fresh_server.start()
    with fresh_server.login() as owner:
        owner.ok(
            "PUT", "/api/settings", json={"limits": {"messagesPerMinute": 1, "messageBurst": 1}}
        )
        room = channel(owner, [])
        page = browse.page(server=fresh_server)
        open_channel(page, fresh_server, room["id"])
        box = page.get_by_role("textbox", name="Message")
        box.fill("first")
        box.press("Enter")
        expect(page.locator("article", has_text="first")).to_have_count(1)
        box.fill("second, too soon")
        box.press("Enter")
        alert = page.get_by_role("alert")
        expect(alert).to_contain_text("too fast")
        expect(alert).to_contain_text("Try again in")
        expect(box).to_have_value("second, too soon")
        assert [m["content"] for m in messages(owner, room["id"])] == ["first"]


def test_a_send_that_fails_on_the_network_keeps_the_text(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    room = channel(web_owner, [])
    page = browse.page()
    open_channel(page, web_server, room["id"])
    page.route("**/api/messages", lambda route: route.abort())
    box = page.get_by_role("textbox", name="Message")
    box.fill("do not lose me")
    box.press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("could not be reached")
    expect(box).to_have_value("do not lose me")
    page.unroute("**/api/messages")
    box.press("Enter")
    expect(page.locator("article", has_text="do not lose me")).to_have_count(1)
    expect(box).to_have_value("")
    assert [m["content"] for m in messages(web_owner, room["id"])] == ["do not lose me"]
