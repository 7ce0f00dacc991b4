"""The Backups screen (issue 25): the owner sets the schedule in the page, sees the backups the
server makes by itself appear with their sizes, and a folder that cannot be written shown as
a failure with its reason; a period that is no period is refused before it is sent; a guest
sees no Backups screen. axe finds no serious violation in either theme at either width, and
the screenshots in docs/screenshots are taken from it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support import Api, Guest, Server, wait_until
from tests.web.admin_pictures import accessible_and_pictured
from tests.web.conftest import Browse, Shot, log_in

SLOW = 20_000
"""Milliseconds to wait for what the screen shows after a backup: it looks every 5 s."""


@pytest.fixture(scope="module")
def backups_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of this module's own: its backups are those these tests asked for."""
    srv = Server(tmp_path_factory.mktemp("backups") / "data")
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def owner(backups_server: Server) -> Iterator[Api]:
    api = backups_server.login()
    yield api
    api.ok("PUT", "/api/settings", json={"backups": {"every": None, "keep": 7, "dir": None}})
    api.close()


def files(page: Any) -> Any:
    return page.get_by_role("table").locator("tbody tr")


def test_the_owner_sets_the_schedule_and_sees_backups_then_a_failure(
    browse: Browse, backups_server: Server, owner: Api, tmp_path: Path, shoot: Shot
) -> None:
    page = browse.page(server=backups_server)
    log_in(page, backups_server.owner_key, "/admin/backups")
    expect(page.get_by_role("heading", level=1, name="Backups")).to_be_focused()
    expect(page.get_by_text("None: there is no schedule.")).to_be_visible()

    every = page.get_by_label("Every")
    every.fill("2 weeks")
    expect(every).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#backup-every-hint")).to_contain_text("A whole number and a unit")
    page.get_by_role("button", name="Save schedule").click()
    expect(page.get_by_role("alert")).to_contain_text("How often")
    assert owner.ok("GET", "/api/backups")["settings"]["every"] is None, "nothing was sent"

    kept = tmp_path / "kept"
    every.fill("2s")
    expect(page.locator("#backup-every-hint")).to_have_text("A backup every 2 seconds.")
    page.get_by_label("Backups kept").fill("2")
    page.get_by_label("Folder").fill(str(kept))
    page.get_by_role("button", name="Save schedule").click()
    expect(page.get_by_role("status")).to_have_text("Saved: a backup every 2 seconds.")
    expect(files(page)).to_have_count(2, timeout=SLOW)
    expect(page.locator(".result .chip").last).to_have_text("Made")
    expect(page.locator(".where")).to_contain_text(f"2 of at most 2, in {kept}")
    for name in files(page).locator("td.name").all_inner_texts():
        assert re.fullmatch(r"palaver-\d{4}-\d\d-\d\dT\d{6}Z\.zip", name), name

    blocker = tmp_path / "a-file"
    blocker.write_text("a file where the folder should be")
    page.get_by_label("Folder").fill(str(blocker / "backups"))
    page.get_by_role("button", name="Save schedule").click()
    expect(page.locator(".result .chip").last).to_have_text("Failed", timeout=SLOW)
    why = f"Why: cannot make the folder {blocker / 'backups'}: Not a directory"
    expect(page.locator(".result .reason")).to_have_text(why)
    page.mouse.move(0, 0)
    page.evaluate("document.querySelector('.content')?.scrollTo(0, 0)")
    shoot(page, "admin-backups-failed-desktop-light")

    every.fill("")
    page.get_by_role("button", name="Save schedule").click()
    expect(page.get_by_role("status")).to_have_text("Saved: no scheduled backups.")
    expect(page.get_by_text("None: there is no schedule.")).to_be_visible()


def test_a_guest_sees_no_backups_screen(browse: Browse, backups_server: Server, owner: Api) -> None:
    with Guest(backups_server, owner, name="Rui") as rui:
        page = browse.page(server=backups_server)
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url))
        log_in(page, rui.key, "/admin/backups")
        expect(page.get_by_role("heading", name="Nothing here")).to_be_visible()
        assert not [u for u in asked if "/api/backups" in u], asked
        assert rui.api.get("/api/backups").status_code == 403


def test_the_backups_screen_is_accessible_and_pictured(
    browse: Browse, backups_server: Server, owner: Api, shoot: Shot
) -> None:
    owner.ok("PUT", "/api/settings", json={"backups": {"every": "2s", "keep": 3}})
    wait_until(
        lambda: len(owner.ok("GET", "/api/backups")["files"]) == 3,
        timeout=30,
        what="three backups",
    )
    owner.ok("PUT", "/api/settings", json={"backups": {"every": "1d"}})
    wait_until(lambda: owner.ok("GET", "/api/backups")["running"] is None, what="the last one")
    page = browse.page(server=backups_server)
    log_in(page, backups_server.owner_key, "/admin/backups")
    expect(files(page)).to_have_count(3)
    expect(page.get_by_label("Every")).to_have_value("1d")
    accessible_and_pictured(page, shoot, "admin-backups")
