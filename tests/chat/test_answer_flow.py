"""The answer run's flow with a scripted engine: no Qt, no model.

A script is a list of replies; each reply is a list of chunks the engine emits, tool
calls included, so every event the run makes from them is known in advance.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from glmdesk.chat.answer import Tools, run_answer
from glmdesk.chat.events import (
    AnswerDone,
    AnswerFailed,
    ReasoningDelta,
    StepFigures,
    TextDelta,
    ToolCallComplete,
    ToolCallDropped,
    ToolCallGrowing,
    ToolCallParsed,
    ToolCallStarted,
    ToolResult,
    ToolResultReady,
    ToolsAnswered,
)
from glmdesk.chat.reader import parts_of
from glmdesk.chat.tools import DECLINED, Approval, allow_all
from glmdesk.core.errors import ErrorInfo
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ReasoningPart, TextPart, ToolCallPart
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.core.tools import FunctionSpec, ToolCall, ToolSet
from glmdesk.engine.chunk import GenerationChunk

WEATHER = ToolCall("get_weather", {"city": "Paris"}, raw='{"city": "Paris"}')
TIME = ToolCall("get_time", {"zone": "CET"}, raw='{"zone": "CET"}')
TOOLS = ToolSet((FunctionSpec("get_weather"), FunctionSpec("get_time")))
PARAMS = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=50))


def text(piece: str, n: int, **fields) -> GenerationChunk:
    return GenerationChunk(parts=(TextPart(piece),), n_generated=n, prompt_tokens=7, **fields)


def pending(name: str, so_far: str, n: int) -> GenerationChunk:
    return GenerationChunk(parts=(ToolCallPart(name, so_far),), n_generated=n)


def called(*calls: ToolCall, n: int) -> GenerationChunk:
    parts = tuple(ToolCallPart(c.name, c.arguments_json(), done=True) for c in calls)
    return GenerationChunk(
        finish_reason="tool_calls",
        tool_call=calls[0],
        tool_calls=calls,
        parts=parts,
        n_generated=n,
        prompt_tokens=7,
    )


class Script:
    """A stream function that plays one scripted reply per call and keeps each request."""

    def __init__(self, *replies: list[GenerationChunk]) -> None:
        self.replies = list(replies)
        self.requests: list[list[ChatMessage]] = []

    def __call__(self, messages, params, cache, stop):
        self.requests.append(list(messages))
        yield from self.replies.pop(0)


def asked() -> list[ChatMessage]:
    return [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "Weather in Paris?")]


def test_a_plain_reply_becomes_text_deltas_figures_and_one_done_with_its_parts():
    script = Script(
        [
            GenerationChunk(parts=(ReasoningPart("Think."),), n_generated=1, ttft_s=0.1),
            text("Hello", 2, ttft_s=0.1),
            text(", world.", 3, finish_reason="stop", ttft_s=0.1, tokens_per_s=9.5),
        ]
    )
    events = list(run_answer(script, [ChatMessage("user", "hi")], PARAMS))
    assert [type(e) for e in events] == [
        StepFigures,
        ReasoningDelta,
        StepFigures,
        TextDelta,
        StepFigures,
        TextDelta,
        AnswerDone,
    ]
    done = events[-1]
    assert done.finish_reason == "stop" and done.calls == ()
    assert done.parts == (ReasoningPart("Think."), TextPart("Hello, world."))
    assert (done.figures.n_generated, done.figures.prompt_tokens, done.figures.tokens_per_s) == (3, 7, 9.5)


def test_a_call_streams_started_growing_complete_then_its_result_feeds_the_next_reply():
    script = Script(
        [
            text("Let me look. ", 1),
            pending("get_weather", '{"ci', 2),
            pending("get_weather", '{"city": "Paris"}', 3),
            called(WEATHER, n=4),
        ],
        [text("Sunny in Paris.", 1, finish_reason="stop")],
    )
    approvals = []

    def approve(call):
        approvals.append(call)
        return Approval(True)

    tools = Tools(approve, lambda call: ToolResult('{"sky": "sunny"}'))
    events = list(run_answer(script, asked(), PARAMS, tools=tools))
    kinds = [e for e in events if not isinstance(e, StepFigures)]
    assert kinds[:4] == [
        TextDelta("Let me look. "),
        ToolCallStarted(0, "get_weather"),
        ToolCallGrowing(0, "get_weather", '{"ci'),
        ToolCallGrowing(0, "get_weather", '{"city": "Paris"}'),
    ]
    assert kinds[4] == ToolCallParsed(0, "get_weather", '{"city": "Paris"}')
    assert kinds[5] == ToolCallComplete(0, WEATHER)
    assert isinstance(kinds[6], AnswerDone) and kinds[6].finish_reason == "tool_calls"
    assert kinds[7] == ToolResultReady(0, WEATHER, ToolResult('{"sky": "sunny"}'))
    assert isinstance(kinds[8], ToolsAnswered)
    assert kinds[9] == TextDelta("Sunny in Paris.")
    assert isinstance(kinds[10], AnswerDone) and kinds[10].finish_reason == "stop"
    assert approvals == [WEATHER]
    # the second request is the first plus the call (with the text shown before it) and its result
    assert script.requests[1][2:] == [
        ChatMessage("assistant", "Let me look. ", tool_call=WEATHER),
        ChatMessage("observation", '{"sky": "sunny"}', name="get_weather"),
    ]
    assert list(kinds[8].messages) == script.requests[1][2:]


def test_several_calls_of_one_reply_run_in_order_and_are_fed_back_together():
    script = Script(
        [
            pending("get_weather", "{", 1),
            GenerationChunk(parts=(ToolCallPart("get_weather", WEATHER.arguments_json(), True),)),
            pending("get_time", "{", 2),
            called(WEATHER, TIME, n=3),
        ],
        [text("Done.", 1, finish_reason="stop")],
    )
    ran = []
    tools = Tools(allow_all, lambda call: ran.append(call.name) or ToolResult(call.name + "!"))
    events = list(run_answer(script, asked(), PARAMS, tools=tools))
    assert [e for e in events if isinstance(e, ToolCallStarted)] == [
        ToolCallStarted(0, "get_weather"),
        ToolCallStarted(1, "get_time"),
    ]
    assert [e for e in events if isinstance(e, ToolCallComplete)] == [
        ToolCallComplete(0, WEATHER),
        ToolCallComplete(1, TIME),
    ]
    # the first call parsed mid-reply; the last chunk listing it again opens no third call
    assert [e.index for e in events if isinstance(e, ToolCallParsed)] == [0, 1]
    assert parts_of(events).count(ToolCallPart("get_weather", WEATHER.arguments_json(), True)) == 1
    assert ran == ["get_weather", "get_time"]
    roles = [(m.role, m.name) for m in script.requests[1][2:]]
    assert roles == [
        ("assistant", ""),
        ("assistant", ""),
        ("observation", "get_weather"),
        ("observation", "get_time"),
    ]


def test_a_denied_call_is_not_run_and_the_model_reads_the_reason():
    script = Script([called(WEATHER, n=1)], [text("Sorry.", 1, finish_reason="stop")])
    tools = Tools(lambda call: Approval(False, "Not today."), lambda call: pytest.fail("a denied call ran"))
    events = list(run_answer(script, asked(), PARAMS, tools=tools))
    (ready,) = [e for e in events if isinstance(e, ToolResultReady)]
    assert ready.result.declined and ready.result.content == f"{DECLINED} Not today."
    assert script.requests[1][-1] == ChatMessage("observation", f"{DECLINED} Not today.", name="get_weather")


def test_an_awaitable_approval_hook_is_awaited():
    async def approve(call):
        await asyncio.sleep(0)
        return Approval(call.name == "get_weather")

    script = Script([called(WEATHER, TIME, n=1)], [text("ok", 1, finish_reason="stop")])
    tools = Tools(approve, lambda call: ToolResult("ran"))
    results = [
        e.result for e in run_answer(script, asked(), PARAMS, tools=tools) if isinstance(e, ToolResultReady)
    ]
    assert [r.declined for r in results] == [False, True]


def test_the_rounds_limit_ends_the_answer_with_a_notice_and_runs_nothing_more():
    script = Script([called(WEATHER, n=1)], [called(WEATHER, n=1)], [called(WEATHER, n=1)])
    ran = []
    tools = Tools(allow_all, lambda call: ran.append(call) or ToolResult("x"), max_rounds=2)
    events = list(run_answer(script, asked(), PARAMS, tools=tools))
    assert len(ran) == 2
    last = events[-1]
    assert isinstance(last, AnswerDone) and last.finish_reason == "stop" and last.calls == ()
    assert last.notice.kind == "tool_rounds_exceeded" and last.notice.params == {"rounds": 2}
    assert not [e for e in events[events.index(events[-1]) - 1 :] if isinstance(e, ToolCallComplete)]


def test_without_tools_the_run_ends_with_the_calls():
    script = Script([called(WEATHER, n=1)])
    events = list(run_answer(script, asked(), PARAMS))
    assert isinstance(events[-1], AnswerDone) and events[-1].calls == (WEATHER,)
    assert len(script.requests) == 1


def test_a_call_that_does_not_parse_is_dropped_and_its_text_shown():
    script = Script([pending("get_weather", "{oops", 1), text("get_weather\n{oops", 2, finish_reason="stop")])
    events = [e for e in run_answer(script, asked(), PARAMS) if not isinstance(e, StepFigures)]
    assert events[:3] == [
        ToolCallStarted(0, "get_weather"),
        ToolCallGrowing(0, "get_weather", "{oops"),
        ToolCallDropped(0),
    ]
    assert events[3] == TextDelta("get_weather\n{oops")
    assert events[-1].parts == (TextPart("get_weather\n{oops"),)


def test_a_call_cut_off_by_the_length_limit_is_dropped():
    script = Script(
        [pending("get_weather", '{"city', 1), GenerationChunk(finish_reason="length", n_generated=2)]
    )
    events = list(run_answer(script, asked(), PARAMS, tools=Tools(allow_all, lambda c: pytest.fail("ran"))))
    assert ToolCallDropped(0) in events
    assert events[-1].finish_reason == "length"


def test_stop_during_an_approval_asks_no_further_call_and_starts_no_reply():
    stop = threading.Event()
    script = Script([called(WEATHER, TIME, n=1)], [text("never", 1, finish_reason="stop")])
    asked_for = []

    def approve(call):
        asked_for.append(call)
        stop.set()
        return Approval(True)

    tools = Tools(approve, lambda c: ToolResult("x"))
    events = list(run_answer(script, asked(), PARAMS, stop=stop, tools=tools))
    assert asked_for == [WEATHER] and len(script.requests) == 1
    assert [e.call for e in events if isinstance(e, ToolResultReady)] == [WEATHER]
    assert not [e for e in events if isinstance(e, ToolsAnswered)]


def test_an_error_keeps_the_text_written_before_it():
    error = ErrorInfo("out_of_memory", "The GPU ran out of memory.")
    script = Script([text("Half an ", 1), GenerationChunk(finish_reason="error", error=error, n_generated=2)])
    events = list(run_answer(script, [ChatMessage("user", "hi")], PARAMS))
    assert events[-1] == AnswerFailed(error, events[-1].figures, (TextPart("Half an "),))


def test_a_backend_that_raises_ends_the_run_with_a_failure_not_a_traceback():
    def broken(messages, params, cache, stop):
        yield text("Hi", 1)
        raise RuntimeError("driver went away")

    events = list(run_answer(broken, [ChatMessage("user", "hi")], PARAMS))
    failed = events[-1]
    assert isinstance(failed, AnswerFailed) and failed.error.kind == "generation_failed"
    assert "driver went away" in failed.error.message and failed.parts == (TextPart("Hi"),)


def test_a_backend_that_raises_before_its_first_chunk_fails_the_run_too():
    def refuses(messages, params, cache, stop):
        raise RuntimeError("no model is loaded")

    events = list(run_answer(refuses, [ChatMessage("user", "hi")], PARAMS))
    assert len(events) == 1 and isinstance(events[0], AnswerFailed)
    assert "no model is loaded" in events[0].error.message


def test_a_stream_that_stops_without_a_final_chunk_ends_cancelled_when_stop_was_set():
    stop = threading.Event()

    def stopped(messages, params, cache, stop_event):
        yield text("Hi", 1)
        stop_event.set()

    events = list(run_answer(stopped, [ChatMessage("user", "hi")], PARAMS, stop=stop))
    assert events[-1].finish_reason == "cancelled" and events[-1].parts == (TextPart("Hi"),)


def test_a_forced_function_is_forced_in_the_first_reply_only():
    forced = ToolSet((FunctionSpec("get_weather"),), forced="get_weather")
    script = Script([called(WEATHER, n=1)], [text("ok", 1, finish_reason="stop")])
    messages = [ChatMessage("system", "", tools=forced), ChatMessage("user", "?")]
    list(run_answer(script, messages, PARAMS, tools=Tools(allow_all, lambda c: ToolResult("x"))))
    assert script.requests[0][0].tools.forced == "get_weather"
    assert script.requests[1][0].tools.forced is None


def test_continue_starts_from_the_answer_so_far():
    script = Script([text(" more.", 1, finish_reason="stop")])
    events = list(run_answer(script, [ChatMessage("user", "hi")], PARAMS, resumed=(TextPart("Some"),)))
    assert events[-1].parts == (TextPart("Some more."),)


def _unreadable(n: int) -> GenerationChunk:
    """A reply's last chunk whose XML call could not be read (as the GLM-4.5 reader ends it)."""
    from glmdesk.engine.decode.generate import tool_notice
    from glmdesk.engine.formats.xml_call_filter import UnreadableCallText

    bad = UnreadableCallText(
        "get_weather", "<tool_call>get_weather<arg_key>city", "the value of 'city' is not closed"
    )
    notice = tool_notice("the value of 'city' is not closed", (bad,))
    return text("<tool_call>get_weather<arg_key>city", n, finish_reason="stop", notice=notice)


def test_a_call_that_could_not_be_read_is_told_to_the_model_which_writes_it_again():
    script = Script([_unreadable(1)], [called(WEATHER, n=2)], [text("Sunny.", 1, finish_reason="stop")])
    ran = []
    tools = Tools(allow_all, lambda call: ran.append(call) or ToolResult('{"sky": "sunny"}'))
    events = list(run_answer(script, asked(), PARAMS, tools=tools))
    told = next(e for e in events if isinstance(e, ToolsAnswered))
    written, observation = told.messages
    assert written.role == "assistant" and written.content == "<tool_call>get_weather<arg_key>city"
    assert (observation.role, observation.name) == ("observation", "get_weather")
    assert observation.content.startswith("The call of get_weather was not run: it could not be read")
    assert script.requests[1][-2:] == [written, observation]  # the next reply reads why
    assert ran == [WEATHER]  # only the call written again ran
    assert isinstance(events[-1], AnswerDone) and events[-1].parts == (TextPart("Sunny."),)


def test_unreadable_calls_are_told_at_most_max_rounds_times_and_never_without_tools():
    script = Script(*([_unreadable(1)] for _ in range(4)))
    tools = Tools(allow_all, lambda call: ToolResult("x"), max_rounds=2)
    events = list(run_answer(script, asked(), PARAMS, tools=tools))
    assert sum(isinstance(e, ToolsAnswered) for e in events) == 2 and len(script.requests) == 3
    served = Script([_unreadable(1)])
    events = list(run_answer(served, asked(), PARAMS))  # glmdesk serve: the client decides
    assert len(served.requests) == 1 and events[-1].notice.kind == "tool_call_invalid"
