"""Protocol fakes that tests and benchmarks start on loopback in place of real services.

Model servers: `FakeOpenAI` and `FakeAnthropic` speak each vendor's HTTP API, streaming
included, byte for byte; both take the same vendor-neutral scripts (`text`, `tool_calls`,
`http_error`, `broken`, ...), record every request, and time-stamp every event they write.
See `fakes.script` for the scripts and `fakes.server` for what is recorded.
"""

from .anthropic_server import FakeAnthropic
from .openai_server import FakeOpenAI
from .script import (
    Reply,
    ScriptedCall,
    broken,
    burst,
    hang,
    http_error,
    malformed,
    stall,
    stream_error,
    text,
    tool_call,
    tool_calls,
)
from .server import FakeModelServer, RecordedRequest, WrittenEvent

__all__ = [
    "FakeAnthropic",
    "FakeModelServer",
    "FakeOpenAI",
    "RecordedRequest",
    "Reply",
    "ScriptedCall",
    "WrittenEvent",
    "broken",
    "burst",
    "hang",
    "http_error",
    "malformed",
    "stall",
    "stream_error",
    "text",
    "tool_call",
    "tool_calls",
]
