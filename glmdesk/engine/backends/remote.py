"""The remote backend: any OpenAI-compatible server (vLLM, SGLang, llama.cpp's server,
``glmdesk serve``) through the official ``openai`` client.

The server owns the model, its KV cache and its quantization; this side measures TTFT
and tokens/s as the user sees them, reads token counts from ``usage``
(``stream_options.include_usage``), and reads the server's KV-cache usage from its
Prometheus ``/metrics`` when it has one (vLLM's ``vllm:kv_cache_usage_perc``).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator, Sequence
from urllib.parse import urlsplit, urlunsplit

import httpx
import openai

from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import (
    CACHE_STRATEGIES,
    PRECISIONS,
    QUANTIZATIONS,
    CacheSettings,
    LoadSettings,
    ParamsBox,
    SamplingParams,
)
from glmdesk.engine.backends import remote_errors
from glmdesk.engine.backends.base import SAMPLING_FIELDS, Backend, Capabilities, ProgressCallback
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.engine.info import LoadProgress, ModelInfo

#: Context window assumed when the server does not say (vLLM and glmdesk serve list
#: ``max_model_len`` in ``/v1/models``), in tokens.
DEFAULT_CONTEXT = 8192
#: Prometheus gauges of KV-cache usage (a fraction 0-1): vLLM's older and newer names,
#: SGLang's, glmdesk serve's.
KV_USAGE_GAUGES = (
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "sglang:token_usage",
    "glmdesk:kv_cache_usage_perc",
)
_POLL_S = 0.05  # how often a waiting stream checks Stop, in s


def base_url(url: str) -> str:
    """The API's base URL: ``/v1`` is added when the URL has no path
    (``http://gpu-box:8000`` -> ``http://gpu-box:8000/v1``)."""
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, path or "/v1", "", ""))


def parse_kv_usage(text: str) -> float | None:
    """The first KV-cache usage gauge in Prometheus text exposition format, as a
    fraction 0-1 (several engines or labels: the largest value), or ``None``."""
    values: list[float] = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in KV_USAGE_GAUGES:
            try:
                values.append(
                    float(line.rsplit(" ", 1)[-1] if "}" not in line else line.rsplit("}", 1)[1].split()[0])
                )
            except (ValueError, IndexError):
                continue
    return max(values) if values else None


#: Why local KV-cache strategies, quantizations and precisions do not apply.
SERVER_DECIDES = "the server decides this; start the server with the option you want"


def _unavailable(kind: str, key: str, names: Sequence[str]) -> dict[str, ErrorInfo | None]:
    out: dict[str, ErrorInfo | None] = {}
    for name in names:
        params = {key: name, "reason": SERVER_DECIDES}
        if kind == "invalid_setting":
            params = {"name": "kv_cache", "value": name, "reason": SERVER_DECIDES}
        out[name] = ErrorInfo(kind, f"{name}: {SERVER_DECIDES}.", params)
    return out


def request_sampling(p: SamplingParams) -> tuple[dict, dict]:
    """OpenAI fields and vLLM's extra fields for ``p`` (extras only when not off, so a
    server without them, such as OpenAI's own, is not sent fields it refuses)."""
    fields: dict = {"temperature": p.temperature, "top_p": p.top_p, "max_tokens": p.max_new_tokens}
    if p.seed is not None:
        fields["seed"] = p.seed
    extra: dict = {}
    if p.top_k:
        extra["top_k"] = p.top_k
    if p.min_p:
        extra["min_p"] = p.min_p
    if p.repetition_penalty != 1.0:
        extra["repetition_penalty"] = p.repetition_penalty
    return fields, extra


class RemoteBackend(Backend):
    """Answers with a model on an OpenAI-compatible server.

    Args:
        connect_s: Time to connect (and for ``/v1/models``), in s.
        stall_s: An answer with no byte from the server for this long ends with
            ``server_stalled``, in s (a long prompt's prefill counts: keep it above
            the server's longest TTFT).
    """

    name = "remote"

    def __init__(self, connect_s: float = 10.0, stall_s: float = 120.0) -> None:
        self.connect_s, self.stall_s = connect_s, stall_s
        self._client: openai.OpenAI | None = None
        self._info: ModelInfo | None = None
        self.url = ""
        self.model = ""

    def load(
        self,
        settings: LoadSettings,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> ModelInfo:
        if not settings.remote_url:
            raise GlmdeskError("load_failed", "No server URL was given.", detail="no server URL")
        url = base_url(settings.remote_url)
        if progress:
            progress(LoadProgress("resolving"))
        timeout = openai.Timeout(self.stall_s, connect=self.connect_s)
        client = openai.OpenAI(
            base_url=url, api_key=settings.remote_api_key or "none", timeout=timeout, max_retries=0
        )
        try:
            listed = list(client.with_options(timeout=openai.Timeout(self.connect_s)).models.list())
        except Exception as exc:
            client.close()
            raise remote_errors.from_exception(
                url, settings.remote_model or "", exc, False, self.stall_s
            ) from None
        if cancel is not None and cancel.is_set():
            client.close()
            raise GlmdeskError("load_cancelled", "Loading was cancelled.")
        model = self._choose(url, settings.remote_model, listed)
        extra = model.model_extra or {}
        context = extra.get("max_model_len") or extra.get("context_length") or DEFAULT_CONTEXT
        self.close()
        self._client, self.url, self.model = client, url, model.id
        self._info = ModelInfo(
            name=model.id,
            family="remote",
            source_kind="remote",
            location=url,
            device=url,
            dtype="server",
            quantization="none",
            footprint_mib=0.0,
            context_length=int(context),
            kv_bytes_per_token=0,
            prompt_format="server",
            engine=self.name,
        )
        if progress:
            progress(LoadProgress("ready"))
        return self._info

    @staticmethod
    def _choose(url: str, wanted: str | None, listed: list):
        if not listed:
            raise GlmdeskError(
                "remote_model_not_found", f"The server at {url} lists no models.", model=wanted or "", url=url
            )
        if wanted is None:
            return listed[0]
        for model in listed:
            if model.id == wanted:
                return model
        names = ", ".join(m.id for m in listed[:5])
        raise GlmdeskError(
            "remote_model_not_found",
            f"The server at {url} has no model {wanted!r}; it serves {names}.",
            model=wanted,
            url=url,
        )

    @property
    def info(self) -> ModelInfo:
        if self._info is None:
            raise RuntimeError("no server is connected")
        return self._info

    def models(self) -> list[str]:
        """The model ids the server lists now.

        Raises:
            GlmdeskError: when the server cannot be asked.
        """
        try:
            return [
                m.id
                for m in self._require().with_options(timeout=openai.Timeout(self.connect_s)).models.list()
            ]
        except Exception as exc:
            raise remote_errors.from_exception(self.url, self.model, exc, False, self.stall_s) from None

    def _require(self) -> openai.OpenAI:
        if self._client is None:
            raise RuntimeError("no server is connected")
        return self._client

    def stream(
        self,
        messages: Sequence[ChatMessage],
        params: ParamsBox,
        cache: CacheSettings | None = None,
        stop: threading.Event | None = None,
        conversation: Hashable | None = None,
    ) -> Iterator[GenerationChunk]:
        """Stream one answer from the server (``cache`` and ``conversation`` are the
        server's business: vLLM and SGLang cache prefixes themselves).

        Sampling is read once, when the request is sent. Stop ends the answer at once
        with ``cancelled`` and closes the stream (vLLM aborts the request when its
        client goes away).
        """
        wire = [{"role": m.role, "content": m.content} for m in messages]

        def start(fields: dict, extra: dict):
            return self._require().chat.completions.create(
                model=self.model,
                messages=wire,
                stream=True,
                stream_options={"include_usage": True},
                extra_body=extra or None,
                **fields,
            )

        return self._answer(start, params, stop or threading.Event(), chat=True)

    def stream_prompt(
        self,
        prompt: str,
        params: ParamsBox,
        cache: CacheSettings | None = None,
        stop: threading.Event | None = None,
    ) -> Iterator[GenerationChunk]:
        def start(fields: dict, extra: dict):
            return self._require().completions.create(
                model=self.model,
                prompt=prompt,
                stream=True,
                stream_options={"include_usage": True},
                extra_body=extra or None,
                **fields,
            )

        return self._answer(start, params, stop or threading.Event(), chat=False)

    def _answer(
        self, start, params: ParamsBox, stop: threading.Event, chat: bool
    ) -> Iterator[GenerationChunk]:
        from glmdesk.engine.backends.remote_stream import RemoteAnswer

        if self._client is None:
            error = ErrorInfo(
                "generation_failed", "No server is connected.", {"detail": "no server is connected"}
            )
            return iter([GenerationChunk(finish_reason="error", error=error)])
        answer = RemoteAnswer(self.url, self.model, self.stall_s, chat)
        fields, extra = request_sampling(params.get())
        return answer.run(lambda: start(fields, extra), stop)

    def kv_cache_usage(self, timeout_s: float = 2.0) -> float | None:
        """The server's KV-cache usage as a fraction 0-1, from its Prometheus
        ``/metrics`` (:data:`KV_USAGE_GAUGES`), or ``None`` when it has none.
        Never raises."""
        if not self.url:
            return None
        parts = urlsplit(self.url)
        root = parts.path.rstrip("/")
        root = root[: -len("/v1")] if root.endswith("/v1") else root
        metrics = urlunsplit((parts.scheme, parts.netloc, f"{root}/metrics", "", ""))
        try:
            response = httpx.get(metrics, timeout=timeout_s)
        except Exception:
            return None
        if response.status_code != 200:
            return None
        return parse_kv_usage(response.text)

    def capabilities(self) -> Capabilities:
        info = self.info
        return Capabilities(
            engine=self.name,
            live_sampling=frozenset(),
            per_answer_sampling=frozenset(SAMPLING_FIELDS),
            kv_strategies=_unavailable("invalid_setting", "kv_cache", CACHE_STRATEGIES),
            quantizations=_unavailable("quantization_unavailable", "quantization", QUANTIZATIONS[1:]),
            precisions=_unavailable("precision_unavailable", "precision", PRECISIONS[1:]),
            memory_probe="remote",
            device=self.url,
            context_length=info.context_length,
            stop_ids=frozenset(),
            tool_calls=False,
            continue_answers=False,  # a chat completion always starts a new turn
        )

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()


__all__ = ["DEFAULT_CONTEXT", "RemoteBackend", "base_url", "parse_kv_usage", "request_sampling"]
