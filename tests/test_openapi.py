"""The OpenAPI schema documents every endpoint with its error statuses; the docs are served."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic._internal._docs_extraction import extract_docstrings_from_cls

from palaver.api.schemas import Shape, attribute_docstrings
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
    faults = {503} if endpoint.method == "GET" else {503, 507}
    assert documented == {400, 401, 500} | faults | endpoint.successes | endpoint.errors
    for code in documented - endpoint.successes:
        content = operation["responses"][str(code)]["content"]["application/json"]
        assert content["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
        assert operation["responses"][str(code)]["description"]


def test_login_documents_the_wrong_password_and_throttling(schema: dict[str, Any]) -> None:
    responses = schema["paths"]["/api/login"]["post"]["responses"]
    assert {"200", "400", "401", "429", "500", "503", "507"} == set(responses)


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


@pytest.mark.parametrize(
    ("path", "required"), [("/api/upload", ["file"]), ("/api/rag/upload", ["file", "agentId"])]
)
def test_uploads_declare_their_multipart_form(
    schema: dict[str, Any], path: str, required: list[str]
) -> None:
    body = schema["paths"][path]["post"]["requestBody"]["content"]["multipart/form-data"]
    assert body["schema"]["required"] == required
    assert body["schema"]["properties"]["file"] == {"type": "string", "format": "binary"}


def test_request_models_carry_their_real_constraints(schema: dict[str, Any]) -> None:
    models = schema["components"]["schemas"]
    name = models["CreateAgent"]["properties"]["name"]
    assert (name["minLength"], name["maxLength"]) == (1, 64)
    assert "agent_" in name["pattern"]
    message = models["PostMessage"]["properties"]
    assert message["type"]["enum"] == ["text", "image", "file", "tool_call", "tool_result"]
    assert message["content"]["pattern"] == r"\S"
    assert models["CreateGuest"]["properties"]["name"]["maxLength"] == 128
    settings = schema["paths"]["/api/settings"]["put"]["requestBody"]["content"]
    limits = settings["application/json"]["schema"]["properties"]["limits"]["properties"]
    assert limits["messagesPerMinute"]["maximum"] == 100_000


def _resolve(schema: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    """The component a `{"$ref": ...}` names."""
    found: dict[str, Any] = schema["components"]["schemas"][ref["$ref"].rsplit("/", 1)[-1]]
    return found


def _answer(schema: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    """The declared shape of an operation's 200 answer."""
    response = schema["paths"][path][method]["responses"]["200"]
    return _resolve(schema, response["content"]["application/json"]["schema"])


def test_success_answers_declare_their_fields(schema: dict[str, Any]) -> None:
    listing = _answer(schema, "/api/messages", "get")
    message = _resolve(schema, listing["properties"]["messages"]["items"])
    assert {"id", "channelId", "agentId", "userId", "content", "type", "metadata"} <= set(
        message["required"]
    )
    assert message["properties"]["type"]["enum"] == [
        "text",
        "image",
        "file",
        "tool_call",
        "tool_result",
    ]
    assert message["properties"]["agentId"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert message.get("additionalProperties", True) is True
    assert set(_answer(schema, "/api/messages", "post")["required"]) == {"id", "ok"}
    agents = _answer(schema, "/api/agents", "get")
    agent = _resolve(schema, agents["properties"]["agents"]["items"])
    assert {"id", "name", "avatar", "model", "tools", "status"} <= set(agent["required"])
    channels = _answer(schema, "/api/channels", "get")
    channel = _resolve(schema, channels["properties"]["channels"]["items"])
    assert channel["properties"]["type"]["enum"] == ["dm", "group"]
    assert {"agentIds", "memberIds"} <= set(channel["required"])


def _shapes(cls: type[Shape]) -> list[type[Shape]]:
    return [cls, *(shape for sub in cls.__subclasses__() for shape in _shapes(sub))]


def test_answer_fields_are_described_by_their_docstrings_as_pydantic_reads_them() -> None:
    """`Shape` reads attribute docstrings itself (start-up time); pydantic's own reading of the
    same classes is the reference."""
    import palaver.api.channel_transfer  # noqa: F401 - its shapes too

    shapes = _shapes(Shape)[1:]
    assert len(shapes) > 50
    for shape in shapes:
        assert attribute_docstrings(shape) == extract_docstrings_from_cls(shape, use_inspect=True)
        docs = {name: field.description for name, field in shape.model_fields.items()}
        own = {name: doc for name, doc in docs.items() if name in attribute_docstrings(shape)}
        assert own == attribute_docstrings(shape), shape.__qualname__
