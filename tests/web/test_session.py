"""Logging in and out, the sidebar, new channels, and messages arriving in another browser."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import expect

from tests.support import Api, Guest, Server, post, unique
from tests.web.conftest import Browse, agent, channel, log_in, open_channel


def test_the_page_is_served_at_the_root_and_at_deep_links(web_server: Server) -> None:
    with web_server.client() as anonymous:
        for path in ("/", "/c/ch_missing", "/some/deep/link"):
            response = anonymous.get(path)
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/html")
            assert response.headers["cache-control"] == "no-cache"
            csp = response.headers["content-security-policy"]
            assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
            assert "unsafe-inline" not in csp.split("style-src")[0]
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["referrer-policy"] == "same-origin"
            assert '<div id="app">' in response.text


def test_hashed_assets_are_cached_for_good_and_reserved_paths_are_not_the_page(
    web_server: Server,
) -> None:
    with web_server.client() as anonymous:
        page = anonymous.get("/").text
        script = page.split('src="', 1)[1].split('"', 1)[0]
        assert script.startswith("/assets/")
        asset = anonymous.get(script, headers={"accept-encoding": "gzip"})
        assert asset.status_code == 200
        assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert asset.headers["content-encoding"] == "gzip"
        again = anonymous.get(script, headers={"if-none-match": asset.headers["etag"]})
        assert again.status_code == 304
        for path in ("/api/nothing", "/uploads/2020-01/none.png", "/ws", "/api"):
            response = anonymous.get(path)
            assert response.status_code in (401, 404), path
            assert "error" in response.json()


def test_the_api_docs_need_no_network(web_server: Server) -> None:
    with web_server.client() as anonymous:
        page = anonymous.get("/api/docs")
        assert page.status_code == 200
        assert "http" not in page.text.replace("/api/openapi.json", "")
        for src in ("/api/docs/swagger-ui-bundle.js", "/api/docs/swagger-ui.css"):
            assert anonymous.get(src).status_code == 200


def test_the_api_docs_render_the_operations_under_their_csp(browse: Browse) -> None:
    """The vendored Swagger UI runs with the docs page's CSP: no script or console error."""
    page = browse.page()
    page.goto("/api/docs")
    expect(page.locator(".opblock-summary-path", has_text="/api/messages").first).to_be_visible()


def test_a_wrong_password_shows_the_servers_error_then_the_owner_logs_in_and_out(
    browse: Browse, web_server: Server
) -> None:
    page = browse.page()
    page.goto("/")
    expect(page).to_have_url(f"{web_server.base_url}/login")
    page.get_by_label("Password or guest key").fill("not-the-password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_have_text("Wrong password.")
    page.get_by_label("Password or guest key").fill(web_server.owner_key)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("navigation", name="Channels")).to_be_visible()
    assert page.evaluate("document.cookie") == "", "the session cookie is HttpOnly"
    assert page.evaluate("JSON.stringify(localStorage)").find("session") == -1
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_label("Password or guest key")).to_be_visible()
    page.goto("/")
    expect(page).to_have_url(f"{web_server.base_url}/login")


def test_answers_of_a_session_that_ended_reach_nothing_in_the_next_one(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    """The owner's channel list and agents, asked for as the owner logs in, land after the
    owner logged out and a guest logged in on the same page: the guest sees neither the owner's
    channels nor is sent back to the login screen by the 401 of the owner's ended session."""
    secret = channel(web_owner, [], name=unique("owners-only-"))
    with Guest(web_server, web_owner, name=unique("Gus ")) as guest:
        lobby = channel(web_owner, [], name=unique("lobby-"), memberIds=[guest.id])
        page = browse.page()
        held: dict[str, Any] = {}

        def hold_first(route: Any) -> None:
            path = urlsplit(route.request.url).path
            if route.request.method != "GET" or path in held:
                route.continue_()
            elif path == "/api/channels":
                # Read now, while the owner's session stands: the owner's list.
                held[path] = (route, route.fetch())
            else:
                held[path] = (route, None)

        # Held from the login on: the page asks for both before it, to learn there is no session.
        page.goto("/login")
        password = page.get_by_label("Password or guest key")
        expect(password).to_be_visible()
        page.route("**/api/channels", hold_first)
        page.route("**/api/agents", hold_first)
        password.fill(web_server.owner_key)
        page.get_by_role("button", name="Log in").click()
        logout = page.get_by_role("button", name="Log out")
        expect(logout).to_be_visible()
        for _ in range(100):
            if len(held) == 2:
                break
            page.wait_for_timeout(50)
        assert set(held) == {"/api/channels", "/api/agents"}
        logout.click()
        expect(page.get_by_label("Password or guest key")).to_be_visible()
        # Read after the logout: what the server answers the ended session.
        agents_route, _ = held["/api/agents"]
        ended = agents_route.fetch()
        assert ended.status == 401
        held["/api/agents"] = (agents_route, ended)

        # On the same page, with no load between: the owner's requests are still on their way.
        password.fill(guest.key)
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("link", name=lobby["name"])).to_be_visible()
        # The owner's channel list lands, and then the owner's 401.
        for path in ("/api/channels", "/api/agents"):
            route, answer = held[path]
            with page.expect_event("requestfinished", lambda r, p=path: r.url.endswith(p)):
                route.fulfill(response=answer)
            page.wait_for_timeout(500)
            expect(page.get_by_role("link", name=lobby["name"])).to_be_visible()
            expect(page.get_by_role("link", name=secret["name"])).to_have_count(0)
        expect(page.get_by_role("button", name="Log out")).to_be_visible()
        assert page.get_by_label("Password or guest key").count() == 0


def test_too_many_failed_logins_show_when_to_try_again(
    browse: Browse, fresh_server: Server
) -> None:
    fresh_server.start()
    page = browse.page(server=fresh_server)
    page.goto("/login")
    for _ in range(10):
        page.get_by_label("Password or guest key").fill("wrong")
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("alert")).to_be_visible()
    page.get_by_label("Password or guest key").fill("wrong again")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("Try again in")
    expect(page.get_by_role("button", name="Log in")).to_be_disabled()


def test_the_owner_creates_a_channel_with_an_agent_and_a_guest(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    helper = agent(web_owner, name=unique("Helper"), avatar="🦉")
    with Guest(web_server, web_owner, name=unique("Gwen ")) as guest:
        page = browse.page()
        log_in(page, web_server.owner_key)
        page.get_by_role("button", name="New channel").first.click()
        dialog = page.get_by_role("dialog", name="New channel")
        name = unique("plans-")
        dialog.get_by_label("Name").fill(name)
        dialog.get_by_label(helper["name"]).check()
        dialog.get_by_label(guest.user["name"]).check()
        dialog.get_by_role("button", name="Create channel").click()
        expect(dialog).to_be_hidden()
        expect(page.get_by_role("heading", level=1)).to_have_text(name)
        created = next(
            c for c in web_owner.ok("GET", "/api/channels")["channels"] if c["name"] == name
        )
        assert created["agentIds"] == [helper["id"]]
        assert guest.id in created["memberIds"]
        expect(page).to_have_url(f"{web_server.base_url}/c/{created['id']}")
        expect(page.get_by_role("link", name=name)).to_have_attribute("aria-current", "page")


def test_a_message_posted_in_one_browser_arrives_in_another_and_unread_counts_move(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    room = channel(web_owner, [], name=unique("aa-talk-"))
    other = channel(web_owner, [], name=unique("aa-other-"))
    with Guest(web_server, web_owner, name=unique("Vera ")) as guest:
        web_owner.ok("POST", f"/api/channels/{room['id']}/members", json={"userIds": [guest.id]})
        web_owner.ok("POST", f"/api/channels/{other['id']}/members", json={"userIds": [guest.id]})
        writer = browse.page()
        open_channel(writer, web_server, room["id"])
        reader = browse.page()
        open_channel(reader, web_server, other["id"], password=guest.key)

        box = writer.get_by_role("textbox", name="Message")
        box.fill("Hello **there**")
        box.press("Shift+Enter")
        box.type("second line")
        box.press("Enter")
        expect(box).to_have_value("")
        mine = writer.locator("article", has_text="second line")
        expect(mine).to_have_count(1)
        expect(mine.locator("strong")).to_have_text("there")

        link = reader.get_by_role("link", name=room["name"])
        expect(link).to_contain_text("1")
        link.click()
        arrived = reader.locator("article", has_text="second line")
        expect(arrived).to_have_count(1)
        expect(arrived).to_contain_text("Owner")
        expect(link).not_to_contain_text("unread")

        post(guest.api, room["id"], "a reply from the guest")
        expect(writer.locator("article", has_text="a reply from the guest")).to_contain_text(
            guest.user["name"]
        )


def test_a_draft_stays_with_its_channel(browse: Browse, web_server: Server, web_owner: Api) -> None:
    first = channel(web_owner, [], name=unique("ab-first-"))
    second = channel(web_owner, [], name=unique("ab-second-"))
    page = browse.page()
    open_channel(page, web_server, first["id"])
    page.get_by_role("textbox", name="Message").fill("half a thought")
    page.get_by_role("link", name=second["name"]).click()
    expect(page.get_by_role("textbox", name="Message")).to_have_value("")
    page.get_by_role("link", name=first["name"]).click()
    expect(page.get_by_role("textbox", name="Message")).to_have_value("half a thought")


def test_a_reloaded_channel_shows_from_what_the_page_carried(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    """The first screen's data comes in the page (`api/first_screen.py`): a reload of a channel
    shows it whole with the four requests it would have made refused, and then the channel
    lives on as usual."""
    room = channel(web_owner, [])
    for i in range(3):
        post(web_owner, room["id"], f"carried {i}")
    page = browse.page()
    open_channel(page, web_server, room["id"])
    first = {"/api/me", "/api/channels", "/api/agents"}
    latest = {"channelId": [room["id"]], "limit": ["50"]}
    refused: list[str] = []

    def is_first(url: str) -> bool:
        parts = urlsplit(url)
        return parts.path in first or (
            parts.path == "/api/messages" and parse_qs(parts.query) == latest
        )

    def refuse(route: Any) -> None:
        refused.append(route.request.url)
        route.abort()

    page.route(is_first, refuse)
    page.reload()
    feed = page.get_by_role("feed")
    expect(feed.get_by_text("carried 2")).to_be_visible()
    sidebar = page.get_by_role("navigation", name="Channels")
    expect(sidebar.get_by_text(room["name"])).to_be_visible()
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    page.get_by_role("textbox", name="Message").fill("after the reload")
    page.keyboard.press("Enter")
    expect(feed.get_by_text("after the reload")).to_be_visible()
    # Only the counts' refresh once the socket confirms its subscriptions may have been refused
    # (channels.svelte.ts): the page itself asked for none of its first screen.
    assert all(urlsplit(url).path == "/api/channels" for url in refused), refused
    # A message posted elsewhere still arrives: the socket took over from the carried page.
    post(web_owner, room["id"], "from elsewhere")
    expect(feed.get_by_text("from elsewhere")).to_be_visible()
