"""A streaming multipart reader that never holds, or leaves on disk, more than it may.

Starlette's form parser spools a whole upload before anyone can check its size; here the
size is enforced while the bytes arrive, and the partial file is removed on every failure,
including a client that stops halfway.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import ClientDisconnect, Request

from palaver.errors import Invalid, RequestTimeout, TooLarge

MAX_FIELD_BYTES = 64 * 1024
ENVELOPE_ALLOWANCE = 64 * 1024
"""Room for boundaries, part headers and small fields on top of the file itself."""


@dataclass
class UploadedFile:
    path: Path
    """A hidden temporary file beside the final place; the caller moves or removes it."""
    filename: str
    content_type: str
    size: int


@dataclass
class _Part:
    headers: dict[str, str] = field(default_factory=dict)
    name: str = ""
    filename: str | None = None
    data: bytearray = field(default_factory=bytearray)


class _State:
    def __init__(self, file_field: str, max_bytes: int) -> None:
        self.file_field = file_field
        self.max_bytes = max_bytes
        self.fields: dict[str, str] = {}
        self.part = _Part()
        self.header_field = bytearray()
        self.header_value = bytearray()
        self.file_size = 0
        self.file_name: str | None = None
        self.file_type = "application/octet-stream"
        self.pending: list[bytes] = []
        self.in_file = False
        self.seen_file = False
        self.too_large = False
        self.complete = False
        """The closing boundary arrived: without it the file may be cut short."""

    def callbacks(self) -> Any:
        return {
            "on_end": self.on_end,
            "on_part_begin": self.on_part_begin,
            "on_header_field": lambda d, s, e: self.header_field.extend(d[s:e]),
            "on_header_value": lambda d, s, e: self.header_value.extend(d[s:e]),
            "on_header_end": self.on_header_end,
            "on_headers_finished": self.on_headers_finished,
            "on_part_data": self.on_part_data,
            "on_part_end": self.on_part_end,
        }

    def on_end(self) -> None:
        self.complete = True

    def on_part_begin(self) -> None:
        self.part = _Part()

    def on_header_end(self) -> None:
        """Header values are kept byte for byte (as latin-1): browsers send a file's name as raw
        UTF-8, which is decoded once the header is parsed."""
        name = self.header_field.decode("latin-1").strip().lower()
        self.part.headers[name] = self.header_value.decode("latin-1").strip()
        self.header_field.clear()
        self.header_value.clear()

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self.part.headers.get("content-disposition", ""))
        self.part.name = options.get(b"name", b"").decode("utf-8", "replace")
        raw_filename = options.get(b"filename")
        self.part.filename = raw_filename.decode("utf-8", "replace") if raw_filename else None
        self.in_file = (
            self.part.name == self.file_field
            and self.part.filename is not None
            and not self.seen_file
        )
        if self.in_file:
            self.seen_file = True
            self.file_name = self.part.filename
            content_type = self.part.headers.get("content-type", self.file_type)
            self.file_type = content_type.encode("latin-1").decode("utf-8", "replace")

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self.in_file:
            self.file_size += end - start
            if self.file_size > self.max_bytes:
                self.too_large = True
                return
            self.pending.append(bytes(data[start:end]))
        else:
            self.part.data.extend(data[start:end])
            if len(self.part.data) > MAX_FIELD_BYTES:
                raise Invalid(f"The form field '{self.part.name}' is too large.")

    def on_part_end(self) -> None:
        if not self.in_file and self.part.name:
            self.fields[self.part.name] = self.part.data.decode("utf-8", "replace")
        self.in_file = False


async def read_upload(
    request: Request,
    directory: Path,
    max_bytes: int,
    file_field: str = "file",
    idle_seconds: float = 30.0,
) -> tuple[UploadedFile, dict[str, str]]:
    """Stream the form's file into `directory`; answer it with the form's other fields.

    A client that sends nothing for `idle_seconds` is ended, so a stalled upload cannot hold a
    connection and a partial file forever."""
    kind, options = parse_options_header(request.headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise Invalid("The request must be multipart/form-data with a 'file' field.")
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes + ENVELOPE_ALLOWANCE:
        raise TooLarge(f"The file is larger than the limit of {max_bytes} bytes.")
    state = _State(file_field, max_bytes)
    parser = MultipartParser(boundary, state.callbacks())
    await anyio.Path(directory).mkdir(parents=True, exist_ok=True)
    temp = directory / f".part-{secrets.token_hex(8)}"
    try:
        async with await anyio.open_file(temp, "wb") as out:
            async for chunk in _with_idle_limit(request, idle_seconds):
                parser.write(chunk)
                if state.too_large:
                    raise TooLarge(f"The file is larger than the limit of {max_bytes} bytes.")
                if state.pending:
                    await out.write(b"".join(state.pending))
                    state.pending.clear()
            parser.finalize()
        if not state.complete:
            raise Invalid("The upload ended before the form's closing boundary; nothing was kept.")
    except ClientDisconnect:
        await _remove(temp)
        raise Invalid("The upload stopped before it was complete.") from None
    except MultipartParseError:
        await _remove(temp)
        raise Invalid("The multipart body is malformed.") from None
    except BaseException:
        await _remove(temp)
        raise
    if not state.seen_file:
        await _remove(temp)
        raise Invalid(f"The form has no '{file_field}' file.")
    upload = UploadedFile(
        path=temp,
        filename=state.file_name or "file",
        content_type=state.file_type,
        size=state.file_size,
    )
    return upload, state.fields


async def _with_idle_limit(request: Request, idle_seconds: float) -> AsyncIterator[bytes]:
    chunks = request.stream().__aiter__()
    while True:
        try:
            with anyio.fail_after(idle_seconds):
                chunk = await anext(chunks)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise RequestTimeout(
                f"The upload sent nothing for {idle_seconds:g} seconds and was ended.",
                headers={"Connection": "close"},
            ) from None
        yield chunk


async def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        await anyio.to_thread.run_sync(os.unlink, path)
