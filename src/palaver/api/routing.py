"""The route classes of every router: built when first used; request bodies parsed as strict
JSON."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import get_name

from palaver import strict_json


class DeferredRoute(APIRoute):
    """An `APIRoute` built as FastAPI builds it, but when first used rather than when declared.

    Building a route (its dependencies, its body and response fields, one pydantic schema
    each) costs about 2 ms, most of start-up's import of the route modules. And FastAPI builds
    each route of an included router again for the app, when that router is first matched or
    the OpenAPI document made. So the route keeps its arguments, and the first attribute it
    lacks (`dependant`, `methods`, ...) builds it: a first login builds the auth routes alone;
    the rest are built by their first request, or a request no router takes, or the document.
    What including a router reads without a request, `path` and `name`, is set at once.

    A route declared wrongly therefore fails when first used, not at import: the OpenAPI
    tests build every route."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **options: Any) -> None:
        self.path = path
        self.endpoint = endpoint
        self.name = get_name(endpoint) if options.get("name") is None else options["name"]
        self._deferred = options

    def __getattr__(self, name: str) -> Any:
        options = self.__dict__.pop("_deferred", None)
        if options is None:  # built, or being built: a missing attribute, as on an APIRoute
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        try:
            super().__init__(self.path, self.endpoint, **options)
        except BaseException:
            self._deferred = options  # the next use fails the same way
            raise
        return getattr(self, name)


class StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = await strict_json.loads_off_loop(await self.body())
        return self._json


class StrictJsonRoute(DeferredRoute):
    """Refuses `NaN`, `Infinity` and runaway nesting with a 400, before validation."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict
