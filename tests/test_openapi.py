"""The OpenAPI schema documents every endpoint with its error statuses; the docs are served."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.endpoints import ENDPOINTS, Endpoint, openapi_template
from tests.support import Server


@pytest.fixture(scope="module")
def schema(server: Server) -> dict[str, Any]:
    with server.client() as anonymous:
        response = anonymous.get("/api/openapi.json")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.id)
def test_every_endpoint_is_documented_with_its_error_statuses(
    schema: dict[str, Any], endpoint: Endpoint
) -> None:
    operation = schema["paths"][openapi_template(endpoint)][endpoint.method.lower()]
    documented = {int(code) for code in operation["responses"]}
    assert documented == {200, 400, 401, 500} | endpoint.errors
    for code in documented - {200}:
        content = operation["responses"][str(code)]["content"]["application/json"]
        assert content["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
        assert operation["responses"][str(code)]["description"]


def test_login_documents_the_wrong_password_and_throttling(schema: dict[str, Any]) -> None:
    responses = schema["paths"]["/api/login"]["post"]["responses"]
    assert {"200", "400", "401", "429", "500"} == set(responses)


def test_the_schema_never_promises_a_422(schema: dict[str, Any]) -> None:
    assert '"422"' not in json.dumps(schema)
    assert "HTTPValidationError" not in json.dumps(schema)
    error_body = schema["components"]["schemas"]["ErrorBody"]
    assert error_body["required"] == ["error"]


def test_interactive_docs_are_served(server: Server) -> None:
    with server.client() as anonymous:
        response = anonymous.get("/api/docs")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "/api/openapi.json" in response.text
