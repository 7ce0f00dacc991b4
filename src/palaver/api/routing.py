"""The route class of every router: request bodies are parsed as strict JSON."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from palaver import strict_json


class StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = await strict_json.loads_off_loop(await self.body())
        return self._json


class StrictJsonRoute(APIRoute):
    """Refuses `NaN`, `Infinity` and runaway nesting with a 400, before validation."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict
