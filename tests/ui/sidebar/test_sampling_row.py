"""A sampling field added as one row appears in all five places the table feeds: the
sidebar, the settings store, the chat options, glmdesk serve's request body and the
remote backend's request (issue 26 §3).

The row is a fake ``typical_p``, added the supported way: a ``SamplingParams`` subclass
with the field and ``TABLE`` extended by its row. Nothing else names it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import ClassVar

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from glmdesk.cli.options import add_sampling_arguments, sampling
from glmdesk.core.messages import ChatMessage
from glmdesk.core.sampling_fields import SamplingField
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.remote.backend import RemoteBackend
from glmdesk.server.config import ServeSettings
from glmdesk.server.errors import APIError
from glmdesk.server.runner import ServerThread
from glmdesk.server.schemas import sampling_params, sampling_request_model
from glmdesk.ui.common.settings_store import SettingsStore
from glmdesk.ui.sidebar.sidebar import Sidebar

WAIT_MS = 5000

TYPICAL = SamplingField(
    "typical_p",
    float,
    0.0,
    1.0,
    "between 0 and 1",
    label="Typical-p",
    help="locally typical sampling, 0 to 1; 1 is off",
    tooltip="Keep the tokens whose surprise is close to the expected one; 1 is off.",
    control="slider",
    step=0.01,
    decimals=2,
    advanced=True,
    extra=True,
    off=1.0,
)


@dataclass(frozen=True)
class TypicalParams(SamplingParams):
    TABLE: ClassVar[tuple[SamplingField, ...]] = (*SamplingParams.TABLE, TYPICAL)
    typical_p: float = 1.0


def test_the_row_is_a_sidebar_control_under_advanced(qtbot) -> None:
    sidebar = Sidebar(TypicalParams(typical_p=0.9))
    qtbot.addWidget(sidebar)
    sidebar.resize(400, 700)
    sidebar.show()
    form = sidebar.refused_label.parentWidget().layout()
    assert form.labelForField(sidebar.typical_p).text() == "Typical-p"
    assert sidebar.typical_p.toolTip() == TYPICAL.tooltip and sidebar.typical_p.value() == 0.9
    assert not sidebar.typical_p.isVisible()
    sidebar.sections["sampling_advanced"].click()
    assert sidebar.typical_p.isVisible()
    with qtbot.waitSignal(sidebar.params_changed, timeout=WAIT_MS) as blocker:
        sidebar.typical_p.slider.setValue(50)  # the user drags it to 0.5
    params = blocker.args[0]
    assert isinstance(params, TypicalParams) and params.typical_p == 0.5 and params.temperature == 0.7
    sidebar.set_sampling_timing(frozenset({"temperature", "typical_p"}))
    assert sidebar.sampling_timing.text().startswith("Temperature, Typical-p apply from the next token")


def test_the_row_is_saved_and_read_back() -> None:
    store = SettingsStore()
    store.save_sampling(SamplingParams(temperature=0.4))  # saved before the row existed
    older = store.sampling(TypicalParams)
    assert older == TypicalParams(temperature=0.4)  # the new field takes its default, nothing is lost
    store.save_sampling(TypicalParams(temperature=0.4, typical_p=0.35))
    assert store.qsettings.value("sampling/typical_p") is not None
    assert SettingsStore().sampling(TypicalParams) == TypicalParams(temperature=0.4, typical_p=0.35)
    store.qsettings.setValue("sampling/typical_p", "2")  # out of range: refused, nothing half-read
    assert SettingsStore().sampling(TypicalParams) is None


def test_the_row_is_a_chat_option() -> None:
    parser = argparse.ArgumentParser()
    add_sampling_arguments(parser, TypicalParams)
    assert "--typical-p" in parser.format_help() and TYPICAL.help in " ".join(parser.format_help().split())
    params = sampling(parser.parse_args(["--typical-p", "0.25", "--top-k", "7"]), "glm4", TypicalParams)
    assert params == TypicalParams(temperature=0.6, top_p=0.8, max_new_tokens=2048, top_k=7, typical_p=0.25)
    with pytest.raises(ValueError, match="Typical-p must be between 0 and 1, not 1.5"):
        sampling(parser.parse_args(["--typical-p", "1.5"]), "glm4", TypicalParams)


def test_the_row_is_a_server_request_field() -> None:
    body_type = sampling_request_model(TypicalParams)
    assert body_type.model_json_schema()["properties"]["typical_p"]["anyOf"][0] == {"type": "number"}
    body = body_type.model_validate({"typical_p": 0.2, "temperature": 0.1})
    assert sampling_params(body, TypicalParams(), None) == TypicalParams(temperature=0.1, typical_p=0.2)
    with pytest.raises(APIError) as exc:
        sampling_params(body_type.model_validate({"typical_p": 3}), TypicalParams(), None)
    assert exc.value.param == "typical_p" and "Typical-p must be between 0 and 1" in str(exc.value.message)


def _recording_app(seen: list) -> FastAPI:
    """An OpenAI-shaped server that reads each request with the extended body model."""
    app = FastAPI()
    body_type = sampling_request_model(TypicalParams)

    @app.get("/v1/models")
    async def models() -> dict:
        return {"object": "list", "data": [{"id": "rec", "object": "model", "created": 0, "owned_by": "t"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> StreamingResponse:
        raw = await request.json()
        seen.append((raw, sampling_params(body_type.model_validate(raw), TypicalParams(), None)))

        def events():
            head = '{"id":"c","object":"chat.completion.chunk","created":0,"model":"rec","choices":'
            yield f'data: {head}[{{"index":0,"delta":{{"role":"assistant","content":"Hi"}},"finish_reason":null}}]}}\n\n'
            yield f'data: {head}[{{"index":0,"delta":{{}},"finish_reason":"stop"}}]}}\n\n'
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return app


def test_the_row_goes_into_the_remote_request_and_back() -> None:
    seen: list = []
    srv = ServerThread(_recording_app(seen), ServeSettings(port=0)).start()
    remote = RemoteBackend()
    try:
        remote.load(LoadSettings(remote_url=srv.url))
        messages = [ChatMessage("user", "Hello")]
        for value in (0.7, 1.0):
            chunks = list(remote.stream(messages, ParamsBox(TypicalParams(temperature=0.3, typical_p=value))))
            assert "".join(c.text for c in chunks) == "Hi" and chunks[-1].finish_reason == "stop"
    finally:
        remote.close()
        srv.stop(timeout_s=2)
    (sent, read), (sent_off, read_off) = seen
    assert sent["typical_p"] == 0.7 and sent["temperature"] == 0.3  # vLLM's extra field, in the body
    assert read == TypicalParams(temperature=0.3, typical_p=0.7)
    assert "typical_p" not in sent_off and read_off.typical_p == 1.0  # off: not sent
