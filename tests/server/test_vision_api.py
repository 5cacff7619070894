"""``glmdesk serve`` with a GLM-4.1V model: images as OpenAI ``image_url`` parts with
``data:`` URLs through the official ``openai`` client; web addresses refused."""

from __future__ import annotations

import openai
import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.backend import TransformersBackend
from glmdesk.engine.decode.generate import stream_answer
from glmdesk.server.app import create_app
from glmdesk.server.config import ServeSettings
from glmdesk.server.endpoints.chat_completions import ChatRequest, chat_messages
from glmdesk.server.errors import APIError
from glmdesk.server.runner import ServerThread


@pytest.fixture(scope="module")
def vision_server(glm4v_loaded):
    settings = ServeSettings(port=0, queue_size=2)
    srv = ServerThread(create_app(TransformersBackend(glm4v_loaded), settings), settings).start()
    yield srv
    srv.stop()


def _client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=120)


def _ask(url: str, text: str = "What is in this picture?") -> list[dict]:
    return [
        {
            "role": "user",
            "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}],
        }
    ]


def test_a_data_url_image_is_answered_as_in_the_engine(vision_server, glm4v_loaded, red_photo):
    c = _client(vision_server)
    reply = c.chat.completions.create(
        model=c.models.list().data[0].id, messages=_ask(red_photo.data_url()), temperature=0, max_tokens=8
    )
    message = [ChatMessage("user", "What is in this picture?", attachments=(red_photo,))]
    greedy = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=8))
    chunks = list(stream_answer(glm4v_loaded, message, greedy))
    assert reply.choices[0].message.content == "".join(c.text for c in chunks)
    assert reply.usage.prompt_tokens == len(glm4v_loaded.prompt_format.encode(message))
    assert reply.usage.prompt_tokens > 12  # the image's 12 tokens are prompt tokens


def test_a_web_address_is_refused_with_a_sentence(vision_server):
    c = _client(vision_server)
    with pytest.raises(openai.BadRequestError) as err:
        c.chat.completions.create(
            model=c.models.list().data[0].id, messages=_ask("https://example.com/cat.png"), max_tokens=4
        )
    body = err.value.body
    assert "does not download images" in body["message"] and "data: URL" in body["message"]
    assert body["param"] == "messages[0].content[1].image_url" and body["code"] == "image_url_not_fetched"
    assert body["type"] == "invalid_request_error"


def test_a_damaged_data_url_and_an_image_for_a_text_model_are_400(red_photo):
    broken = ChatRequest(messages=_ask("data:image/png;base64,@@@"))
    with pytest.raises(APIError) as err:
        chat_messages(broken, vision=True)
    assert err.value.status == 400 and "base64 is damaged" in err.value.message
    good = ChatRequest(messages=_ask(red_photo.data_url()))
    with pytest.raises(APIError) as err:
        chat_messages(good, vision=False)
    assert "reads text only" in err.value.message
    (message,) = chat_messages(good, vision=True)
    assert message.attachments[0].sha256 == red_photo.sha256 and message.content == "What is in this picture?"


def test_the_remote_backend_sends_attached_images_as_data_urls(vision_server, glm4v_loaded, blue_photo):
    from glmdesk.core.settings import LoadSettings
    from glmdesk.engine.backends.remote.backend import RemoteBackend
    from glmdesk.engine.tools.openai_tools import messages_to_openai

    message = [ChatMessage("user", "Describe it.", attachments=(blue_photo,))]
    wire, _ = messages_to_openai(message)
    assert wire[0]["content"][0] == {"type": "image_url", "image_url": {"url": blue_photo.data_url()}}
    assert wire[0]["content"][1] == {"type": "text", "text": "Describe it."}
    remote = RemoteBackend()
    remote.load(LoadSettings(remote_url=vision_server.url))
    try:
        assert remote.capabilities().vision
        greedy = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=6))
        over_http = "".join(c.text for c in remote.stream(message, greedy))
    finally:
        remote.close()
    local = "".join(c.text for c in stream_answer(glm4v_loaded, message, greedy))
    assert over_http == local and local
