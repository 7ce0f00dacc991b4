"""What each admin screen's browser test ends with: axe in both themes at both widths, then
the screenshots docs/screenshots keeps of it."""

from __future__ import annotations

from typing import Any

from tests.web.conftest import DESKTOP, PHONE, Shot
from tests.web.test_accessibility import serious


def accessible_and_pictured(page: Any, shoot: Shot, name: str) -> None:
    """No serious axe violation in light and dark at desktop and phone widths; then
    `<name>-desktop-light`, `<name>-desktop-dark` and `<name>-phone-light`, from the top."""
    for viewport in (DESKTOP, PHONE):
        page.set_viewport_size(viewport)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            assert serious(page) == [], (viewport, scheme)
    page.set_viewport_size(DESKTOP)
    page.emulate_media(color_scheme="light")
    page.evaluate("document.querySelector('.content')?.scrollTo(0, 0)")
    page.mouse.move(0, 0)
    page.wait_for_timeout(150)
    shoot(page, f"{name}-desktop-light")
    page.emulate_media(color_scheme="dark")
    page.wait_for_timeout(100)
    shoot(page, f"{name}-desktop-dark")
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(PHONE)
    page.wait_for_timeout(150)
    shoot(page, f"{name}-phone-light")
