"""The settings record: what the owner changes at run time, stored in the database.

Secrets live here in full; every copy that leaves the service goes through `masked()`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

SECRET_MASK = "••••"  # noqa: S105 - the mask shown in place of a secret, not a secret
SHOWN_TAIL = 4
"""Characters of a secret shown after the mask; only secrets at least 3 times as long show any."""


def whole_numbers(model: type[BaseModel], data: Any) -> Any:
    """Whole JSON numbers such as 5.0 given for integer fields, as 5: JSON Schema counts them
    integers, and strict validation (which refuses "5" and true) would refuse them too."""
    if not isinstance(data, dict):
        return data
    fields = model.model_fields
    return {
        key: int(value)
        if key in fields
        and fields[key].annotation is int
        and isinstance(value, float)
        and value.is_integer()
        else value
        for key, value in data.items()
    }


class _Strict(BaseModel):
    """Strict, as the API schema is: a number is not a string nor a boolean a number."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _whole_numbers(cls, data: Any) -> Any:
        return whole_numbers(cls, data)


class ProviderConfig(_Strict):
    type: Literal["openai", "anthropic", "builtin"]
    baseUrl: str | None = None
    apiKey: str | None = None
    contextWindow: int = Field(default=8192, ge=256, le=2_000_000)
    timeoutSeconds: float = Field(default=120.0, gt=0, le=3600)


class EmbeddingConfig(_Strict):
    provider: str = "local"
    model: str = "all-MiniLM-L6-v2-int8"
    """The local model with int8 weights on ONNX Runtime; `all-MiniLM-L6-v2` is the float one
    on torch (the `torch` extra). Both score alike on the quality set (bench/results/quality.md)."""


class WebSearchConfig(_Strict):
    provider: Literal["searxng", "brave", "tavily"] | None = None
    baseUrl: str | None = None
    apiKey: str | None = None


class McpServerConfig(_Strict):
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeoutSeconds: float = Field(default=30.0, gt=0, le=600)
    availableToGuests: bool = False
    """An MCP server acts with the owner's access; in channels with guests its tools are
    offered only when the owner says they are safe to share."""


class Limits(_Strict):
    messagesPerMinute: int = Field(default=30, ge=1, le=100_000)
    messageBurst: int = Field(default=10, ge=1, le=100_000)
    maxMessageChars: int = Field(default=32_000, ge=1, le=1_000_000)
    maxUploadBytes: int = Field(default=25 * 1024 * 1024, ge=1, le=10 * 1024**3)
    guestSchedules: int = Field(default=5, ge=0, le=1000)
    """Active schedules agents may keep for one guest (made in answer to that guest)."""


class AgentLimits(_Strict):
    """How far one reply may go: tool rounds, tool time, and chain/hand-off guards."""

    toolRounds: int = Field(default=8, ge=1, le=64)
    toolTimeoutSeconds: float = Field(default=60.0, gt=0, le=3600)
    replyTokens: int = Field(default=1024, ge=16, le=100_000)
    replySeconds: int = Field(default=300, ge=1, le=3600)
    """The whole reply, tool calls included: a provider that never ends is cut off."""
    maxHandoffs: int = Field(default=4, ge=0, le=64)
    maxChainSteps: int = Field(default=10, ge=1, le=100)


class MemoryConfig(_Strict):
    duplicateThreshold: float = Field(default=0.85, ge=0, le=1)
    updateThreshold: float = Field(default=0.7, ge=0, le=1)
    injectTopK: int = Field(default=5, ge=0, le=50)
    injectFloor: float = Field(default=0.3, ge=-1, le=1)


class Price(_Strict):
    """What a model costs per million tokens, in the currency the owner counts in."""

    input: float = Field(ge=0, le=1_000_000)
    output: float = Field(ge=0, le=1_000_000)
    cachedInput: float | None = Field(default=None, ge=0, le=1_000_000)
    """Input tokens the provider served from its cache; the input price when not given."""


class Cap(_Strict):
    """A monthly cap (calendar month, UTC); a cap left out or null is no cap."""

    monthlyTokens: int | None = Field(default=None, ge=1, le=10**15)
    monthlyCost: float | None = Field(default=None, ge=0, le=10**12)


class Budgets(_Strict):
    agents: dict[str, Cap] = Field(default_factory=dict)
    """Per agent id."""
    guests: dict[str, Cap] = Field(default_factory=dict)
    """Per guest's user id: what replies caused by that guest may use."""
    total: Cap | None = None
    """The whole install."""


EVERY_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_EVERY = re.compile(r"^([1-9][0-9]{0,6})([smhd])$")
MAX_EVERY_SECONDS = 366 * 86400
EVERY_PATTERN = (
    "^([1-9][0-9]{0,6}s|[1-9][0-9]{0,4}m|[1-9][0-9]{0,2}h|([1-9][0-9]?|[12][0-9]{2}|3[0-5][0-9]"
    "|36[0-6])d)$"
)
"""What the OpenAPI schema promises of `every`: the periods within `MAX_EVERY_SECONDS` a client
can write without counting (the validator's own messages say what else is wrong)."""


def _string_pattern(pattern: str) -> Callable[[dict[str, Any]], None]:
    """Puts `pattern` into the schema's string branch only: the validators check the value
    with messages of their own, and a fuzzer given the schema writes only values they take."""

    def put(schema: dict[str, Any]) -> None:
        for branch in schema.get("anyOf", []):
            if branch.get("type") == "string":
                branch["pattern"] = pattern

    return put


def every_seconds(every: str) -> int:
    """The seconds of a backup period such as "6h" (a whole number and one of s, m, h, d)."""
    match = _EVERY.match(every)
    assert match is not None, every
    return int(match.group(1)) * EVERY_UNITS[match.group(2)]


class BackupSchedule(_Strict):
    """The backups one node of the install makes by itself (docs/BACKUP.md)."""

    every: str | None = Field(
        default=None, max_length=16, json_schema_extra=_string_pattern(EVERY_PATTERN)
    )
    """How often: a whole number and a unit, `30m`, `6h`, `1d`; null is no schedule."""
    keep: int = Field(default=7, ge=1, le=1000)
    """How many of the scheduled backups to keep: the oldest beyond it are removed."""
    dir: str | None = Field(
        default=None, max_length=4096, json_schema_extra=_string_pattern("^/[^\\u0000]*$")
    )
    """An absolute folder; null is `<data dir>/backups`."""

    @field_validator("every")
    @classmethod
    def _period(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if _EVERY.match(value) is None:
            raise PydanticCustomError(
                "backup_every",
                "a whole number and a unit: s, m, h or d (30m, 6h, 1d), or null for none",
            )
        if every_seconds(value) > MAX_EVERY_SECONDS:
            raise PydanticCustomError("backup_every", "at most 366 days")
        return value

    @field_validator("dir")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith("/") or "\0" in value:
            raise PydanticCustomError("backup_dir", "an absolute folder, such as /var/backups")
        return value


class Settings(_Strict):
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    defaultModel: str = "builtin/echo"
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    webSearch: WebSearchConfig = Field(default_factory=WebSearchConfig)
    mcpServers: dict[str, McpServerConfig] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    agents: AgentLimits = Field(default_factory=AgentLimits)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    sessionIdleDays: int = Field(default=30, ge=1, le=3650)
    prices: dict[str, Price] = Field(default_factory=dict)
    """Per model, as agents name it (`<provider id>/<model name>`)."""
    budgets: Budgets = Field(default_factory=Budgets)
    backups: BackupSchedule = Field(default_factory=BackupSchedule)


_MODEL = re.compile(r"^([A-Za-z0-9_.-]+)/(\S.*)$")


def well_formed_model(model: str) -> bool:
    return _MODEL.match(model) is not None


def model_problem(settings: Settings, model: str) -> str | None:
    """Why `model` ("<provider id>/<model name>") cannot be used with these settings, or None."""
    match = _MODEL.match(model)
    if match is None:
        return "The model must look like '<provider id>/<model name>'."
    provider = match.group(1)
    if provider != "builtin" and provider not in settings.providers:
        return f"No model provider '{provider}' is configured."
    return None


def mask_secret(value: str | None) -> str | None:
    """Keep the last four characters so an owner can tell keys apart without seeing them;
    a short secret shows none, or its tail would be most of it."""
    if not value:
        return value
    if len(value) < 3 * SHOWN_TAIL:
        return SECRET_MASK
    return SECRET_MASK + value[-SHOWN_TAIL:]


_SECRET_PARAM = re.compile(
    r"(?i)^(.*[-_])?(key|apikey|token|secret|password|passwd|pass|pwd|auth|authorization|"
    r"sig|signature|credential|credentials|session)$"
)


def mask_url(url: str | None) -> str | None:
    """A URL with the credentials it carries masked: the password of `user:pass@`, and the
    values of query parameters named like secrets (`api_key`, `token`, `sig`...)."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return SECRET_MASK
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        netloc = f"{user}:{SECRET_MASK}@{hostport}" if colon else f"{SECRET_MASK}@{hostport}"
    query = "&".join(_mask_param(pair) for pair in parts.query.split("&")) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _mask_param(pair: str) -> str:
    name = pair.partition("=")[0]
    return f"{name}={SECRET_MASK}" if _SECRET_PARAM.match(unquote_plus(name)) else pair


def _is_url_path(path: tuple[str, ...]) -> bool:
    return bool(path) and path[-1] in ("baseUrl", "url")


def _is_string_map_path(path: tuple[str, ...]) -> bool:
    """An MCP server's `env` or `headers`: free-form names, every value a secret."""
    return len(path) == 3 and path[0] == "mcpServers" and path[2] in ("env", "headers")


def _is_secret_path(path: tuple[str, ...]) -> bool:
    if not path:
        return False
    if path[-1] == "apiKey":
        return True
    return _is_string_map_path(path[:-1])


def _walk(value: Any, path: tuple[str, ...], fn: Any) -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, (*path, k), fn) for k, v in value.items()}
    return fn(path, value)


def masked(settings: Settings) -> dict[str, Any]:
    """The settings as any client may see them: every secret cut to its last four characters."""
    raw = settings.model_dump(mode="json")
    return dict(_walk(raw, (), _mask_value))


def _is_args_path(path: tuple[str, ...]) -> bool:
    return len(path) == 3 and path[0] == "mcpServers" and path[2] == "args"


def _mask_args(args: list[Any]) -> list[Any]:
    """An MCP command's arguments often carry a connection URL (`postgresql://user:pw@...`)."""
    return [mask_url(a) if isinstance(a, str) and "://" in a else a for a in args]


def _mask_value(path: tuple[str, ...], value: Any) -> Any:
    if _is_args_path(path) and isinstance(value, list):
        return _mask_args(value)
    if _is_secret_path(path):
        return mask_secret(value)
    if _is_url_path(path) and isinstance(value, str):
        return mask_url(value)
    return value


def merge(current: Settings, patch: dict[str, Any]) -> Settings:
    """Merge a partial update (JSON Merge Patch for the free-form maps: `null` removes an
    entry); a masked secret sent back unchanged keeps the stored one.

    Raises pydantic.ValidationError for unknown keys or bad values.
    """
    base = current.model_dump(mode="json")
    return Settings.model_validate(_deep_merge(base, patch, ()))


def _is_removable_path(path: tuple[str, ...]) -> bool:
    """Maps whose entries a patch removes by sending null: providers, MCP servers, prices, the
    budgets of agents and guests, and an MCP server's `env` and `headers`. Elsewhere null is a
    value, refused where a field takes none."""
    return path in _REMOVABLE or _is_string_map_path(path)


_REMOVABLE = {
    ("providers",),
    ("mcpServers",),
    ("prices",),
    ("budgets", "agents"),
    ("budgets", "guests"),
}


def _deep_merge(base: Any, patch: Any, path: tuple[str, ...]) -> Any:
    if isinstance(patch, dict) and (isinstance(base, dict) or base is None):
        out = dict(base or {})
        for key, value in patch.items():
            if value is None and _is_removable_path(path):
                out.pop(key, None)
            else:
                out[key] = _deep_merge(out.get(key), value, (*path, key))
        return out
    if _is_args_path(path) and isinstance(patch, list) and isinstance(base, list):
        return base if patch != base and patch == _mask_args(base) else patch
    if isinstance(patch, str) and isinstance(base, str) and patch != base:
        if _is_secret_path(path) and patch == mask_secret(base):
            return base
        if _is_url_path(path) and patch == mask_url(base):
            return base
    masked = _is_secret_path(path) and isinstance(patch, str) and patch.startswith(SECRET_MASK)
    if masked and patch != base:
        raise _masked_without_secret(path)
    return patch


def _masked_without_secret(path: tuple[str, ...]) -> ValidationError:
    """A masked value that is not the mask of the secret stored at its place (a renamed env var,
    a secret changed meanwhile): kept, it would replace the secret with its mask."""
    error = PydanticCustomError(
        "masked_secret",
        "a masked value keeps only the secret stored under the same name; send the secret itself",
    )
    return ValidationError.from_exception_data(
        "Settings", [InitErrorDetails(type=error, loc=path, input=SECRET_MASK)]
    )


_SAME = object()


def shown_changes(before: Settings, after: Settings, changed: str) -> dict[str, Any]:
    """What turned `before` into `after`, as a merge patch (an entry gone is null), with each
    secret set or changed shown as `changed` (never its value nor any part of it), a secret
    removed as null, and URLs and MCP arguments masked as `masked()` shows them: what the audit
    log keeps of a change of settings. Empty when nothing changed."""
    found = _difference(before.model_dump(mode="json"), after.model_dump(mode="json"), (), changed)
    return {} if found is _SAME else dict(found)


def _difference(old: Any, new: Any, path: tuple[str, ...], changed: str) -> Any:
    if isinstance(old, dict) and isinstance(new, dict):
        out: dict[str, Any] = {}
        for key in [*new, *(k for k in old if k not in new)]:
            if key not in new:
                out[key] = None
            elif key not in old:
                out[key] = _shown(new[key], (*path, key), changed)
            else:
                found = _difference(old[key], new[key], (*path, key), changed)
                if found is not _SAME:
                    out[key] = found
        return out or _SAME
    if old == new:
        return _SAME
    return _shown(new, path, changed)


def _shown(value: Any, path: tuple[str, ...], changed: str) -> Any:
    if isinstance(value, dict):
        return {k: _shown(v, (*path, k), changed) for k, v in value.items()}
    if _is_secret_path(path):
        return None if value is None else changed
    return _mask_value(path, value)
