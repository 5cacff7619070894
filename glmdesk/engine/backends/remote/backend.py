"""The remote backend: any OpenAI-compatible server (vLLM, SGLang, llama.cpp's server,
``glmdesk serve``) through the official ``openai`` client.

The server owns the model, its KV cache and its quantization; this side measures TTFT
and tokens/s as the user sees them, reads token counts from ``usage``
(``stream_options.include_usage``), and reads the server's KV-cache usage from its
Prometheus ``/metrics`` when it has one (vLLM's ``vllm:kv_cache_usage_perc``).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Hashable, Iterator, Sequence
from urllib.parse import urlsplit, urlunsplit

import httpx
import openai

from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.sampling_fields import request_fields
from glmdesk.core.settings import (
    CACHE_STRATEGIES,
    PRECISIONS,
    QUANTIZATIONS,
    CacheSettings,
    LoadSettings,
    ParamsBox,
)
from glmdesk.core.tools import ToolSet
from glmdesk.engine.backends.base import SAMPLING_FIELDS, Backend, Capabilities, ProgressCallback
from glmdesk.engine.backends.remote import errors as remote_errors
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.engine.families import family_for_model_id, served_tool_dialects
from glmdesk.engine.formats.prompt import forced_call
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


#: One sample line of the Prometheus text exposition format, version 0.0.4
#: (https://prometheus.io/docs/instrumenting/exposition_formats/#text-format-details):
#: ``metric_name [{label="value",...}] value [timestamp]``; label values are quoted
#: strings with ``\\``, ``\"`` and ``\n`` escapes, so they may hold ``}`` or spaces.
_SAMPLE_LINE = re.compile(
    r"""^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)"""
    r"""(?:\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?"""
    r"""[ \t]+(?P<value>\S+)(?:[ \t]+-?\d+)?[ \t]*$"""
)


def parse_kv_usage(text: str) -> float | None:
    """The KV-cache usage in a Prometheus ``/metrics`` page, as a fraction 0-1.

    Reads the sample lines of :data:`KV_USAGE_GAUGES` (comments and other metrics are
    skipped; NaN values too). With several samples (vLLM labels one per engine) the
    largest is the answer.

    Args:
        text: The page, in the text exposition format (see :data:`_SAMPLE_LINE`).

    Returns:
        The usage (vLLM, SGLang and glmdesk serve report a fraction, 1 meaning full),
        or ``None`` when the page has none of these gauges.
    """
    values: list[float] = []
    for line in text.splitlines():
        match = _SAMPLE_LINE.match(line.strip())
        if match is None or match["name"] not in KV_USAGE_GAUGES:
            continue
        try:
            value = float(match["value"])  # also "NaN", "+Inf", "-Inf" as the format allows
        except ValueError:
            continue
        if math.isfinite(value):
            values.append(value)
    return max(values) if values else None


def metrics_url(url: str) -> str:
    """The Prometheus page of the server whose API is at ``url``
    (``http://gpu-box:8000/v1`` -> ``http://gpu-box:8000/metrics``; vLLM, SGLang and
    glmdesk serve serve it beside ``/v1``)."""
    parts = urlsplit(base_url(url))
    root = parts.path.rstrip("/")
    root = root[: -len("/v1")] if root.endswith("/v1") else root
    return urlunsplit((parts.scheme, parts.netloc, f"{root}/metrics", "", ""))


def read_kv_usage(url: str, timeout_s: float = 2.0) -> float | None:
    """The KV-cache usage of the server at ``url`` as a fraction 0-1, read from its
    ``/metrics`` (:func:`metrics_url`, :func:`parse_kv_usage`), or ``None`` when it has
    no such page or gauge, or cannot be reached within ``timeout_s`` (s). Blocks on the
    network: call it off the GUI thread. Never raises."""
    try:
        response = httpx.get(metrics_url(url), timeout=timeout_s)
    except Exception:
        return None
    if response.status_code != 200:
        return None
    return parse_kv_usage(response.text)


#: Why local KV-cache strategies, quantizations and precisions do not apply (English).
SERVER_DECIDES = "the server decides this; start the server with the option you want"
#: The same as a reason code (``ErrorInfo.params["reason"]``), which the UI words itself.
SERVER_DECIDES_CODE = "server_decides"


def _unavailable(kind: str, key: str, names: Sequence[str]) -> dict[str, ErrorInfo | None]:
    out: dict[str, ErrorInfo | None] = {}
    for name in names:
        params = {key: name, "reason": SERVER_DECIDES_CODE}
        if kind == "invalid_setting":
            params = {"name": "kv_cache", "value": name, "reason": SERVER_DECIDES_CODE}
        out[name] = ErrorInfo(kind, f"{name}: {SERVER_DECIDES}.", params)
    return out


def _offered(messages: Sequence[ChatMessage]) -> ToolSet | None:
    """The tools the system messages offer (the last set wins), or ``None``."""
    found = [m.tools for m in messages if m.role == "system" and m.tools]
    return found[-1] if found else None


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
        #: ``False``: ask the server to answer without thinking (``--no-thinking``), unless
        #: an answer's ``SamplingParams.enable_thinking`` says otherwise.
        self.enable_thinking: bool | None = None

    def load(
        self,
        settings: LoadSettings,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> ModelInfo:
        own = settings.remote
        if not own.url:
            raise GlmdeskError("load_failed", "No server URL was given.", detail="no server URL")
        url = base_url(own.url)
        if progress:
            progress(LoadProgress("resolving"))
        timeout = openai.Timeout(self.stall_s, connect=self.connect_s)
        client = openai.OpenAI(base_url=url, api_key=own.api_key or "none", timeout=timeout, max_retries=0)
        try:
            listed = list(client.with_options(timeout=openai.Timeout(self.connect_s)).models.list())
        except Exception as exc:
            client.close()
            raise remote_errors.from_exception(url, own.model or "", exc, False, self.stall_s) from None
        if cancel is not None and cancel.is_set():
            client.close()
            raise GlmdeskError("load_cancelled", "Loading was cancelled.")
        model = self._choose(url, own.model, listed)
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

        Tools offered on the system message are sent as ``tools`` (a forced function,
        ``ToolSet.forced``, as ``tool_choice`` naming it); calls and observations
        as ``tool_calls``/``tool`` messages. A call the server returns (parsed, or as GLM
        text it did not parse) ends the answer with ``tool_calls``.

        Sampling is read once, when the request is sent. Stop ends the answer at once
        with ``cancelled`` and closes the stream (vLLM aborts the request when its
        client goes away).
        """
        from glmdesk.engine.families.glm4v import OCR_FAMILIES, greedy
        from glmdesk.engine.tools.openai_tools import messages_to_openai

        if family_for_model_id(self.model).name in OCR_FAMILIES:  # GLM-OCR copies the page: greedy
            params = ParamsBox(greedy(params.get()))
        wire, tools = messages_to_openai(messages)
        offered: dict = {"tools": tools} if tools else {}
        forced = forced_call(messages)
        if tools and forced:  # passed through: the server makes its model call it
            offered["tool_choice"] = {"type": "function", "function": {"name": forced}}

        def start(fields: dict, extra: dict):
            # The messages are the documented JSON as plain dicts, not openai's TypedDicts.
            return self._require().chat.completions.create(  # pyright: ignore[reportCallIssue]
                model=self.model,
                messages=wire,  # pyright: ignore[reportArgumentType]
                **offered,
                stream=True,
                stream_options={"include_usage": True},
                extra_body=extra or None,
                **fields,
            )

        return self._answer(start, params, stop or threading.Event(), chat=True, tools=_offered(messages))

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
        self, start, params: ParamsBox, stop: threading.Event, chat: bool, tools: ToolSet | None = None
    ) -> Iterator[GenerationChunk]:
        from glmdesk.engine.backends.remote.stream import RemoteAnswer

        if self._client is None:
            error = ErrorInfo(
                "generation_failed", "No server is connected.", {"detail": "no server is connected"}
            )
            return iter([GenerationChunk(finish_reason="error", error=error)])
        answer = RemoteAnswer(
            self.url,
            self.model,
            self.stall_s,
            chat,
            tools,
            served_tool_dialects(self.model),
            family_for_model_id(self.model),
        )
        p = params.get()
        fields, extra = request_fields(p)
        kwargs = dict(p.template_kwargs)  # what the chat template reads (GLM-4.7's clear_thinking)
        if chat and (
            p.enable_thinking is False or (p.enable_thinking is None and self.enable_thinking is False)
        ):
            kwargs["enable_thinking"] = False  # vLLM's and SGLang's template switch
        if chat and kwargs:
            extra["chat_template_kwargs"] = kwargs
        if chat and "reasoning_effort" in kwargs:  # OpenAI's field too: vLLM and SGLang read it
            extra["reasoning_effort"] = kwargs["reasoning_effort"]
        return answer.run(lambda: start(fields, extra), stop)

    def kv_cache_usage(self, timeout_s: float = 2.0) -> float | None:
        """The server's KV-cache usage as a fraction 0-1, from its Prometheus
        ``/metrics`` (:func:`read_kv_usage`), or ``None`` when it has none.
        Never raises."""
        if not self.url:
            return None
        return read_kv_usage(self.url, timeout_s)

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
            tool_calls=True,  # passed through; a server whose model has none refuses them
            continue_answers=False,  # a chat completion always starts a new turn
            vision=True,  # images go as image_url data URLs; a server without vision refuses them
            thinking_switch=family_for_model_id(self.model).thinking_switch,
        )

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()


__all__ = [
    "DEFAULT_CONTEXT",
    "RemoteBackend",
    "base_url",
    "metrics_url",
    "parse_kv_usage",
    "read_kv_usage",
]
