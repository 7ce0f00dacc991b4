"""The owner's screens hang off one layout reached from the sidebar, every section in reach on a
phone too; a guest never sees it."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.support import Api, Guest, Server, unique
from tests.web.conftest import Browse, Shot, log_in
from tests.web.test_accessibility import serious

SECTIONS = ("Agents", "Schedules", "Settings", "Guests", "Usage", "Audit log", "Backups")
PHONE_390 = {"width": 390, "height": 844}


def test_owner_reaches_the_admin_screens_from_the_sidebar(
    browse: Browse, web_server: Server
) -> None:
    page = browse.page()
    log_in(page, web_server.owner_key)
    page.get_by_role("link", name="Agents & settings").click()
    page.wait_for_url("**/admin/agents")
    admin = page.get_by_role("navigation", name="Administration")
    expect(page.get_by_role("heading", level=1, name="Agents")).to_be_focused()
    for section in (*SECTIONS[1:], SECTIONS[0]):
        admin.get_by_role("link", name=section).click()
        expect(admin.get_by_role("link", name=section)).to_have_attribute("aria-current", "page")
        expect(page.get_by_role("heading", level=1, name=section)).to_be_focused()


def test_guest_typing_an_admin_address_gets_nothing(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    with Guest(web_server, web_owner, name=unique("Gus ")) as guest:
        page = browse.page()
        log_in(page, guest.key)
        expect(page.get_by_role("link", name="Agents & settings")).to_have_count(0)
        for path in (
            "/admin/agents",
            "/admin/agents/new",
            "/admin/settings",
            "/admin/guests",
            "/admin/usage",
            "/admin/audit",
            "/admin/backups",
        ):
            page.goto(path)
            expect(page.get_by_role("heading", name="Nothing here")).to_be_visible()
            expect(page.get_by_role("navigation", name="Administration")).to_have_count(0)


def test_on_a_phone_every_admin_section_is_in_view_and_reached_by_touch_or_keyboard(
    browse: Browse, web_server: Server, shoot: Shot
) -> None:
    page = browse.page()
    log_in(page, web_server.owner_key, "/admin/agents")
    page.set_viewport_size(PHONE_390)
    admin = page.get_by_role("navigation", name="Administration")
    links = admin.get_by_role("link")
    expect(links).to_have_count(len(SECTIONS))
    for section in SECTIONS:
        expect(admin.get_by_role("link", name=section)).to_be_in_viewport(ratio=1)
    for section in (*SECTIONS[1:], SECTIONS[0]):
        admin.get_by_role("link", name=section).click()
        expect(admin.get_by_role("link", name=section)).to_have_attribute("aria-current", "page")
        expect(page.get_by_role("heading", level=1, name=section)).to_be_focused()
    assert serious(page) == []
    page.mouse.move(0, 0)
    shoot(page, "admin-nav-phone-light")

    admin.get_by_role("link", name=SECTIONS[0]).focus()
    for _ in SECTIONS[1:]:
        page.keyboard.press("Tab")
    expect(admin.get_by_role("link", name=SECTIONS[-1])).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1, name=SECTIONS[-1])).to_be_focused()
