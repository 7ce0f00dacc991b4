"""Routes are built when first used (`api/routing.py`), and a page of the web client builds
none of the API's (`web_client.ClientPages`): start-up time (issue 26)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient

from palaver.api import web_client
from palaver.api.routing import DeferredRoute, StrictJsonRoute


def _app(dist: Path) -> tuple[FastAPI, DeferredRoute]:
    api = APIRouter(prefix="/api/things", route_class=StrictJsonRoute)

    @api.get("/{thing_id}")
    async def get_thing(thing_id: str) -> dict[str, str]:
        return {"id": thing_id}

    route = api.routes[0]
    assert isinstance(route, DeferredRoute)
    app = FastAPI(openapi_url="/api/openapi.json")  # as Palaver: under /api
    app.include_router(api)
    client = web_client.build_router(dist)
    app.include_router(client)
    app.router.routes.insert(0, web_client.ClientPages(client))
    return app, route


def _built(route: DeferredRoute) -> bool:
    return "_deferred" not in vars(route)


def test_a_route_is_built_by_its_first_request_as_fastapi_builds_it(tmp_path: Path) -> None:
    app, route = _app(tmp_path)
    assert not _built(route)
    assert route.path == "/api/things/{thing_id}" and route.name == "get_thing"
    with TestClient(app) as http:
        assert http.get("/api/things/a1").json() == {"id": "a1"}
        assert _built(route)
        assert route.methods == {"GET"} and route.response_model == dict[str, str]


def test_a_page_builds_no_api_route_and_the_document_builds_them(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<!doctype html><title>t</title>")
    app, route = _app(tmp_path)
    with TestClient(app) as http:
        page = http.get("/c/some-channel")
        assert page.status_code == 200 and "<title>t</title>" in page.text
        assert not _built(route)
        # Another method at a page's path still looks through every route for its own.
        assert http.post("/c/some-channel").status_code == 405
        assert "/api/things/{thing_id}" in http.get("/api/openapi.json").json()["paths"]
        assert _built(route)
