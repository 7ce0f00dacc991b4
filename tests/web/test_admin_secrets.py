"""No screen shows a secret whole: through every screen of settings, schedules, guests and a
channel's settings, neither the page's DOM (input values included) nor any network answer or
WebSocket frame holds the owner's key, a provider's key, the web search key, or a guest's key
once its invite dialog has closed."""

from __future__ import annotations

import contextlib
from typing import Any

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.support import Api, Server, unique
from tests.web.conftest import Browse, agent, channel, log_in

PROVIDER_KEY = "sk-provider-secret-never-shown-whole-91c2"
SEARCH_KEY = "tvly-search-secret-never-shown-whole-5e7d"


def _dom(page: Any) -> str:
    values = page.evaluate(
        "[...document.querySelectorAll('input, textarea, select')].map(e => e.value).join('\\n')"
    )
    return str(page.content()) + "\n" + str(values)


def test_no_screen_shows_a_secret_whole(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    provider = unique("secret")
    web_owner.ok(
        "PUT",
        "/api/settings",
        json={
            "providers": {
                provider: {
                    "type": "openai",
                    "baseUrl": f"{fake_model.url}/v1",
                    "apiKey": PROVIDER_KEY,
                }
            }
        },
    )
    before = web_owner.ok("GET", "/api/settings")["settings"]["webSearch"]
    helper = agent(web_owner, name=unique("Keeper"), avatar="🔐")
    room = channel(web_owner, [helper], name=unique("vault-"))
    page = browse.page()
    bodies: list[str] = []
    frames: list[str] = []

    def record(route: Any) -> None:
        """Every API answer, read as it passes (a navigation would drop unread bodies). A
        request still in flight when the page goes away is let go, not reported later, and
        its route is ended: one left open counts as in flight, and the next page's
        `networkidle` never comes (a recount the page starts as it is left)."""
        try:
            answer = route.fetch()
            bodies.append(answer.text())
            route.fulfill(response=answer)
        except PlaywrightError:
            with contextlib.suppress(PlaywrightError):
                route.abort()

    page.route("**/api/**", record)
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(str(f))))
    try:
        log_in(page, web_server.owner_key, "/admin/settings")
        search = page.get_by_role("form", name="Web search")
        search.get_by_label("Provider").select_option("tavily")
        search.get_by_label("API key").fill(SEARCH_KEY)
        search.get_by_role("button", name="Save web search").click()
        expect(search.get_by_role("status")).to_have_text("Saved.")
        expect(search.get_by_label("API key")).to_have_value(f"••••{SEARCH_KEY[-4:]}")
        card = page.get_by_role("form", name=f"Provider {provider}")
        expect(card.get_by_label("API key")).to_have_value(f"••••{PROVIDER_KEY[-4:]}")
        card.get_by_role("button", name="Test connection").click()
        expect(card.get_by_role("status")).to_contain_text("Connected")
        card.get_by_role("button", name="Save").click()
        expect(
            page.get_by_role("status").filter(has_text=f"Provider {provider} saved.")
        ).to_be_visible()
        assert _dom(page).count(PROVIDER_KEY) == 0

        page.goto("/admin/guests")
        page.get_by_label("Name").fill(unique("Vera "))
        with page.expect_response(
            lambda r: r.url.endswith("/api/guests") and r.request.method == "POST"
        ) as invite:
            page.get_by_role("button", name="Invite").click()
        invite_answer = invite.value.text()
        dialog = page.get_by_role("dialog")
        guest_key = dialog.get_by_label("The guest's key").input_value()
        dialog.get_by_role("button", name="Done").click()
        expect(page.get_by_role("dialog")).to_have_count(0)
        shown_once = len(bodies)

        seen: list[str] = []
        for path in ("/admin/guests", "/admin/schedules", "/admin/settings", f"/c/{room['id']}"):
            page.goto(path)
            page.get_by_role("heading", level=1).first.wait_for()
            page.wait_for_load_state("networkidle")
            seen.append(_dom(page))
        page.get_by_role("button", name="Channel settings").click()
        expect(page.get_by_role("dialog", name="Channel settings")).to_contain_text("Guests")
        seen.append(_dom(page))

        masked = f"••••{PROVIDER_KEY[-4:]}"
        assert any(masked in b for b in bodies[shown_once:]), "the settings answers were read"
        for secret in (web_server.owner_key, PROVIDER_KEY, SEARCH_KEY):
            assert not [d for d in seen if secret in d], "a screen shows a secret whole"
            assert not [b for b in bodies if secret in b], "an answer holds a secret whole"
            assert not [f for f in frames if secret in f], "a frame holds a secret whole"
        assert not [d for d in seen if guest_key in d], "the guest key outlived its dialog"
        assert not [b for b in bodies[shown_once:] if guest_key in b]
        assert guest_key in invite_answer, "the invite answers the key, once"
    finally:
        page.unroute_all(behavior="ignoreErrors")
        web_owner.ok(
            "PUT", "/api/settings", json={"providers": {provider: None}, "webSearch": before}
        )
