"""Following what happens (issue 23, the web client): unread counts and mention badges from the
server, kept in step across a person's pages; the read marker moving only when the person saw
the messages; mentions of people (autocomplete, highlight, badge, notification); and the channel
list changing live."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from tests.support import Api, Guest, Server, post, unique
from tests.web.conftest import Browse, Shot, channel, log_in, open_channel
from tests.web.test_accessibility import serious

HIDE = """(hidden) => {
  Object.defineProperty(document, "visibilityState", {
    configurable: true, get: () => (hidden ? "hidden" : "visible"),
  });
  Object.defineProperty(document, "hidden", { configurable: true, get: () => hidden });
  document.dispatchEvent(new Event("visibilitychange"));
}"""

# Every `new Notification(...)` the page makes is recorded (and its object kept, to click it);
# the permission and its request stay the browser's own, counted.
NOTIFICATIONS = """(() => {
  const Real = window.Notification;
  window.__notes = [];
  window.__asked = 0;
  class Recorded {
    static get permission() { return Real.permission; }
    static requestPermission(...args) {
      window.__asked += 1;
      return Real.requestPermission(...args);
    }
    constructor(title, options = {}) {
      this.title = title;
      this.body = options.body;
      this.onclick = null;
      window.__notes.push(this);
    }
    close() {}
  }
  window.Notification = Recorded;
})();"""


def unread(n: int) -> re.Pattern[str]:
    return re.compile(rf"^{n}\s*unread$")


def badge(page: Any, name: str) -> Any:
    return page.get_by_role("link", name=re.compile(re.escape(name))).get_by_test_id("unread-badge")


def mention_badge(page: Any, name: str) -> Any:
    return page.get_by_role("link", name=re.compile(re.escape(name))).get_by_test_id(
        "mention-badge"
    )


def state_of(api: Api, channel_id: str) -> dict[str, Any]:
    listed = api.ok("GET", "/api/channels")["channels"]
    found: dict[str, Any] = next(c for c in listed if c["id"] == channel_id)
    return found


def joined(owner: Api, guest: Guest, *rooms: dict[str, Any]) -> None:
    for room in rooms:
        owner.ok("POST", f"/api/channels/{room['id']}/members", json={"userIds": [guest.id]})


def test_unread_counts_clear_on_a_second_page_of_the_same_person_and_not_while_hidden(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    landing = channel(web_owner, [], name=unique("ba-0-landing-"))
    room = channel(web_owner, [], name=unique("ba-room-"))
    with Guest(web_server, web_owner, name=unique("Rhea")) as guest:
        joined(web_owner, guest, landing, room)
        first = browse.page()
        open_channel(first, web_server, landing["id"], password=guest.key)
        second = browse.page()
        open_channel(second, web_server, landing["id"], password=guest.key)
        for i in range(3):
            post(web_owner, room["id"], f"news {i}")
        for page in (first, second):
            expect(badge(page, room["name"])).to_have_text(unread(3))
            expect(page).to_have_title(re.compile(r"^\(3\) "))
        # Nothing was fetched per channel: the counts are the server's.
        assert state_of(guest.api, room["id"])["unreadCount"] == 3

        # Opened while the tab is hidden: the messages show, but nobody has seen them.
        reads: list[str] = []
        first.on("request", lambda r: reads.append(r.url) if r.url.endswith("/read") else None)
        first.evaluate(HIDE, True)
        first.get_by_role("link", name=re.compile(re.escape(room["name"]))).click()
        expect(first.locator("article", has_text="news 2")).to_be_visible()
        first.wait_for_timeout(1500)
        assert state_of(guest.api, room["id"])["unreadCount"] == 3
        expect(badge(second, room["name"])).to_have_text(unread(3))
        assert reads == []

        # Seen: the marker moves, and the other page's badge and title clear.
        first.evaluate(HIDE, False)
        expect(badge(first, room["name"])).to_have_count(0)
        expect(badge(second, room["name"])).to_have_count(0)
        expect(second).not_to_have_title(re.compile(r"^\("))
        assert state_of(guest.api, room["id"])["lastReadId"] is not None

        # Messages arriving while the person watches are read in a batch, not one post each.
        reads.clear()
        for i in range(5):
            post(web_owner, room["id"], f"burst {i}")
        expect(first.locator("article", has_text="burst 4")).to_be_visible()
        expect(badge(second, room["name"])).to_have_count(0, timeout=10_000)
        first.wait_for_timeout(500)
        assert 1 <= len(reads) <= 3, reads
        assert state_of(guest.api, room["id"])["unreadCount"] == 0


def test_a_mention_of_a_guest_shows_its_badge_live_with_the_line_and_the_highlight(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    landing = channel(web_owner, [], name=unique("bb-0-landing-"))
    room = channel(web_owner, [], name=unique("bb-room-"))
    with Guest(web_server, web_owner, name=unique("Nia")) as guest:
        joined(web_owner, guest, landing, room)
        page = browse.page()
        open_channel(page, web_server, landing["id"], password=guest.key)
        post(web_owner, room["id"], "before the mention")
        post(web_owner, room["id"], f"@{guest.user['name']} can you look?")
        expect(mention_badge(page, room["name"])).to_have_text(re.compile(r"^@1\s*mention$"))
        expect(badge(page, room["name"])).to_have_text(unread(2))

        page.get_by_role("link", name=re.compile(re.escape(room["name"]))).click()
        line = page.get_by_test_id("new-messages-line")
        expect(line).to_be_visible()
        # The line sits above the first unread message.
        row = page.locator("[data-id]", has=line)
        expect(row.locator("article")).to_contain_text("before the mention")
        mentioned = page.locator("article.mentions-me")
        expect(mentioned).to_contain_text("can you look?")
        expect(mentioned.locator(".mention-me")).to_have_text(f"@{guest.user['name']}")
        expect(mention_badge(page, room["name"])).to_have_count(0)
        assert serious(page) == []

        # The owner's box offers the guest among the channel's people.
        owner = browse.page()
        open_channel(owner, web_server, room["id"])
        box = owner.get_by_role("textbox", name="Message")
        box.fill(f"@{guest.user['name'][:3]}")
        listbox = owner.get_by_role("listbox", name="People and agents")
        expect(listbox.get_by_role("option", name=re.compile(guest.user["name"]))).to_be_visible()
        box.press("Enter")
        expect(box).to_have_value(f"@{guest.user['name']} ")


def test_channels_appear_change_and_go_live_in_a_guests_sidebar(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    landing = channel(web_owner, [], name=unique("bc-0-landing-"))
    with Guest(web_server, web_owner, name=unique("Oto")) as guest:
        joined(web_owner, guest, landing)
        page = browse.page()
        open_channel(page, web_server, landing["id"], password=guest.key)
        nav = page.get_by_role("navigation", name="Channels")

        added = channel(web_owner, [], name=unique("bc-added-"), memberIds=[guest.id])
        expect(nav.get_by_role("link", name=added["name"])).to_be_visible()
        renamed = unique("bc-renamed-")
        web_owner.ok(
            "PUT",
            f"/api/channels/{added['id']}",
            json={"name": renamed, "agentIds": [], "memberIds": [guest.id]},
        )
        expect(nav.get_by_role("link", name=renamed)).to_be_visible()
        # A message there counts live: the page subscribed to the channel it was told of.
        post(web_owner, added["id"], "welcome")
        expect(badge(page, renamed)).to_have_text(unread(1))

        # Removed while looking at it: taken to the first channel left, told why.
        nav.get_by_role("link", name=renamed).click()
        expect(page.locator("article", has_text="welcome")).to_be_visible()
        web_owner.ok(
            "PUT",
            f"/api/channels/{added['id']}",
            json={"name": renamed, "agentIds": [], "memberIds": []},
        )
        expect(nav.get_by_role("link", name=renamed)).to_have_count(0)
        expect(page).to_have_url(re.compile(f"/c/{landing['id']}$"))
        expect(page.get_by_test_id("channel-notice")).to_contain_text(renamed)

        # Leaving from the channel's header, after a confirmation.
        left = channel(web_owner, [], name=unique("bc-left-"), memberIds=[guest.id])
        nav.get_by_role("link", name=left["name"]).click()
        page.get_by_role("button", name="Leave channel").click()
        dialog = page.get_by_role("dialog", name=f"Leave #{left['name']}?")
        expect(dialog).to_be_visible()
        assert serious(page) == []
        dialog.get_by_role("button", name=f"Leave #{left['name']}").click()
        expect(nav.get_by_role("link", name=left["name"])).to_have_count(0)
        expect(page.get_by_test_id("channel-notice")).to_contain_text(f"You left #{left['name']}")
        assert (
            guest.id
            not in web_owner.ok("GET", f"/api/channels/{left['id']}")["channel"]["memberIds"]
        )

        # The owner deletes one from its settings; it goes from the guest's list too.
        doomed = channel(web_owner, [], name=unique("bc-doomed-"), memberIds=[guest.id])
        expect(nav.get_by_role("link", name=doomed["name"])).to_be_visible()
        owner = browse.page()
        open_channel(owner, web_server, doomed["id"])
        owner.get_by_role("button", name="Channel settings").click()
        owner.get_by_role("button", name="Delete channel").click()
        confirm = owner.get_by_role("dialog", name=f"Delete #{doomed['name']}?")
        expect(confirm).to_be_visible()
        assert serious(owner) == []
        confirm.get_by_role("button", name=f"Delete #{doomed['name']}").click()
        expect(owner.get_by_test_id("channel-notice")).to_contain_text(
            f"#{doomed['name']} was deleted"
        )
        expect(owner.get_by_role("link", name=doomed["name"])).to_have_count(0)
        expect(nav.get_by_role("link", name=doomed["name"])).to_have_count(0)
        assert web_owner.request("GET", f"/api/channels/{doomed['id']}").status_code == 404


def test_a_notification_for_a_mention_while_the_tab_is_hidden_opens_the_message(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    landing = channel(web_owner, [], name=unique("bd-0-landing-"))
    room = channel(web_owner, [], name=unique("bd-room-"))
    with Guest(web_server, web_owner, name=unique("Pia")) as guest:
        joined(web_owner, guest, landing, room)
        page = browse.page()
        page.context.grant_permissions(["notifications"], origin=web_server.base_url)
        page.add_init_script(NOTIFICATIONS)
        open_channel(page, web_server, landing["id"], password=guest.key)
        # Nothing is asked on load; the person turns them on from the button.
        assert page.evaluate("window.__asked") == 0
        page.get_by_role("button", name="Turn on notifications").click()
        expect(page.get_by_role("button", name="Turn off notifications")).to_be_visible()
        # The browser had granted it already (as the test did): nothing more to ask.
        assert page.evaluate("window.__asked") == 0

        # While the tab is seen, a mention notifies nobody.
        post(web_owner, room["id"], f"@{guest.user['name']} while you look")
        expect(mention_badge(page, room["name"])).to_be_visible()
        page.wait_for_timeout(300)
        assert page.evaluate("window.__notes.length") == 0

        page.evaluate(HIDE, True)
        post(web_owner, room["id"], f"@{guest.user['name']} while you are away")
        page.wait_for_function("window.__notes.length === 1")
        note = page.evaluate("({title: window.__notes[0].title, body: window.__notes[0].body})")
        assert note["title"] == f"Owner mentioned you in #{room['name']}", note
        assert note["body"] == f"@{guest.user['name']} while you are away"

        # Clicking it opens the message itself, however much was written after it: in view
        # and flashed, as a search result opens.
        for n in range(120):
            post(web_owner, room["id"], f"later message {n}")
        page.evaluate("window.__notes[0].onclick()")
        expect(page).to_have_url(re.compile(f"/c/{room['id']}$"))
        flashed = page.get_by_test_id("message-list").locator(".row.flash")
        expect(flashed).to_contain_text("while you are away")
        expect(flashed).to_be_in_viewport()

        # A browser not asked yet is asked by the button, and only then.
        other = browse.page()
        other.add_init_script(NOTIFICATIONS)
        log_in(other, guest.key, f"/c/{landing['id']}")
        expect(other.get_by_role("button", name="Turn on notifications")).to_be_visible()
        assert other.evaluate("window.__asked") == 0
        other.get_by_role("button", name="Turn on notifications").click()
        other.wait_for_function("window.__asked === 1")

        # Turned off, nothing more.
        page.evaluate(HIDE, False)
        page.get_by_role("button", name="Turn off notifications").click()
        page.evaluate(HIDE, True)
        post(web_owner, room["id"], f"@{guest.user['name']} once more")
        page.wait_for_timeout(500)
        assert page.evaluate("window.__notes.length") == 1


def test_screenshot_of_the_sidebar_with_unread_and_mention_badges(
    browse: Browse, web_server: Server, web_owner: Api, shoot: Shot
) -> None:
    names = ["design", "general", "launch", "research"]
    rooms = {n: channel(web_owner, [], name=n) for n in names}
    with Guest(web_server, web_owner, name="Mina") as guest:
        joined(web_owner, guest, *rooms.values())
        page = browse.page()
        log_in(page, guest.key, f"/c/{rooms['general']['id']}")
        page.locator("[data-testid=message-list][aria-busy=false]").wait_for()
        page.evaluate(HIDE, True)
        post(web_owner, rooms["general"]["id"], "Morning! The release checklist is up.")
        post(
            web_owner, rooms["general"]["id"], "@Mina could you check the copy on the landing page?"
        )
        post(web_owner, rooms["general"]["id"], "No rush, end of day is fine.")
        for i in range(4):
            post(web_owner, rooms["launch"]["id"], f"launch note {i}")
        post(web_owner, rooms["research"]["id"], "@Mina the survey results are in")
        post(web_owner, rooms["research"]["id"], "Summary in the thread below.")
        expect(badge(page, rooms["launch"]["name"])).to_have_text(unread(4))
        expect(mention_badge(page, rooms["research"]["name"])).to_be_visible()
        page.reload()
        page.locator("[data-testid=message-list][aria-busy=false]").wait_for()
        expect(page.get_by_test_id("new-messages-line")).to_be_visible()
        expect(page.locator(".mention-me")).to_be_visible()
        expect(badge(page, rooms["research"]["name"])).to_have_text(unread(2))
        # The open channel is read once seen; its line stays for the visit.
        expect(badge(page, rooms["general"]["name"])).to_have_count(0)
        page.mouse.move(900, 20)
        shoot(page, "sidebar-unread-mentions-light")


def test_a_reply_in_an_old_thread_of_the_person_counts_live_whose_root_the_page_does_not_hold(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    landing = channel(web_owner, [], name=unique("be-0-landing-"))
    room = channel(web_owner, [], name=unique("be-room-"))
    scrolled = channel(web_owner, [], name=unique("be-scrolled-"))
    secret = channel(web_owner, [], name=unique("be-secret-"))
    with Guest(web_server, web_owner, name=unique("Ines")) as guest:
        joined(web_owner, guest, landing, room, scrolled)
        # Long ago: the guest started a thread in each room, the owner one the guest never
        # joined; more than a page of messages came after them, all read since.
        mine = post(guest.api, room["id"], "my old question")
        theirs = post(web_owner, room["id"], "the owner's own topic")
        mine_far = post(guest.api, scrolled["id"], "my old plan")
        theirs_far = post(web_owner, scrolled["id"], "the owner's far topic")
        last = ""
        for i in range(55):
            last = post(web_owner, scrolled["id"], f"filler {i}")
        secret_root = post(web_owner, secret["id"], "nobody else's business")
        read_to = post(web_owner, room["id"], "read up to here")
        guest.api.ok("POST", f"/api/channels/{room['id']}/read", json={"messageId": read_to})
        guest.api.ok("POST", f"/api/channels/{scrolled['id']}/read", json={"messageId": last})

        page = browse.page()
        urls: list[str] = []
        listings: list[Any] = []
        frames: list[str] = []
        page.on("request", lambda r: urls.append(r.url))
        page.on(
            "response", lambda r: listings.append(r) if r.url.endswith("/api/channels") else None
        )
        page.on(
            "websocket",
            lambda ws: ws.on(
                "framereceived", lambda f: frames.append(f if isinstance(f, str) else "")
            ),
        )
        open_channel(page, web_server, landing["id"], password=guest.key)
        expect(badge(page, room["name"])).to_have_count(0)
        page.wait_for_timeout(800)  # the list asked for again once the subscriptions are confirmed
        asked_before = len([u for u in urls if u.endswith("/api/channels")])

        # A reply in the owner's thread does not count for the guest; one in the guest's old
        # thread (in a channel not open) does, within moments and without a reload.
        post(web_owner, room["id"], "not your thread", threadId=theirs)
        post(web_owner, secret["id"], "a secret reply", threadId=secret_root)
        post(web_owner, room["id"], "an answer to your old question", threadId=mine)
        expect(badge(page, room["name"])).to_have_text(unread(1), timeout=5_000)
        page.wait_for_timeout(800)
        expect(badge(page, room["name"])).to_have_text(unread(1))
        assert state_of(guest.api, room["id"])["unreadCount"] == 1

        # Several at once are asked for together; a mention among them counts once.
        more = [
            post(web_owner, room["id"], f"more on your question {i}", threadId=mine)
            for i in range(3)
        ]
        post(web_owner, room["id"], f"@{guest.user['name']} see above", threadId=mine)
        post(web_owner, room["id"], "still not your thread", threadId=theirs)
        expect(badge(page, room["name"])).to_have_text(unread(5), timeout=5_000)
        expect(mention_badge(page, room["name"])).to_have_text(re.compile(r"^@1\s*mention$"))
        page.wait_for_timeout(1000)
        expect(badge(page, room["name"])).to_have_text(unread(5))
        assert state_of(guest.api, room["id"])["unreadCount"] == 5
        asked = len([u for u in urls if u.endswith("/api/channels")]) - asked_before
        assert 1 <= asked <= 4, asked  # never one per reply

        # An edit naming the guest in one of those replies is a mention: it counts as one, not
        # as one more unread message (the server's answer already holds the reply).
        web_owner.ok(
            "PATCH",
            f"/api/messages/{more[0]}",
            json={"content": f"@{guest.user['name']} more on your question 0"},
        )
        expect(mention_badge(page, room["name"])).to_have_text(
            re.compile(r"^@2\s*mentions?$"), timeout=5_000
        )
        page.wait_for_timeout(2_500)
        expect(badge(page, room["name"])).to_have_text(unread(5))
        state = state_of(guest.api, room["id"])
        assert (state["unreadCount"], state["mentionCount"]) == (5, 2)

        # Open, with the root far above the loaded page: the same.
        page.get_by_role("link", name=re.compile(re.escape(scrolled["name"]))).click()
        expect(page.locator("article", has_text="filler 54")).to_be_visible()
        expect(page.locator("article", has_text="my old plan")).to_have_count(0)
        post(web_owner, scrolled["id"], "not yours either", threadId=theirs_far)
        post(web_owner, scrolled["id"], "about your old plan", threadId=mine_far)
        expect(badge(page, scrolled["name"])).to_have_text(unread(1), timeout=5_000)
        page.wait_for_timeout(800)
        expect(badge(page, scrolled["name"])).to_have_text(unread(1))
        assert state_of(guest.api, scrolled["id"])["unreadCount"] == 1

        # Nothing of the channel the guest is not in was fetched, told or shown.
        nav = page.get_by_role("navigation", name="Channels")
        expect(nav.get_by_role("link", name=re.compile(re.escape(secret["name"])))).to_have_count(0)
        assert not [u for u in urls if secret["id"] in u or secret_root in u]
        assert not [f for f in frames if secret["id"] in f or "secret" in f]
        for listing in listings:
            assert secret["id"] not in listing.text()
