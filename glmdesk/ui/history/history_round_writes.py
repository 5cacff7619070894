"""The writes of one answer's round, built on the GUI thread and run on the history writer's.

Each function returns the write (``write(history)``) that the
:class:`~glmdesk.ui.history.history_recorder.RoundRecorder` submits to its
:class:`~glmdesk.ui.history.history_writes.WriteQueue`. A write decides what to store when it
runs, from what the writes before it stored (:class:`~glmdesk.ui.history.history_anchors.Answer`
is filled in as they run): a round whose start is not in the file is stored whole.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from glmdesk.core.history import History
from glmdesk.core.history_rounds import begin_round
from glmdesk.core.history_types import GenerationStats
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import reasoning_of, text_of
from glmdesk.ui.history.history_anchors import Answer, ConversationRef, parent_of, save_whole_round

Write = Callable[[History], object]


def stats_of(record) -> GenerationStats:
    """An answer's figures as stored (s, tokens/s, tokens) from its ``AnswerRecord`` or ``None``."""
    if record is None:
        return GenerationStats()
    return GenerationStats(
        ttft_s=record.ttft_s,
        tokens_per_s=record.tokens_per_s,
        n_tokens=record.n_tokens,
        prompt_tokens=record.prompt_tokens,
        answer_ttft_s=record.answer_ttft_s or None,
        reasoning_tokens=record.reasoning_tokens or None,
    )


def begin_write(answer: Answer, user: str | None, attachments: tuple, model: str | None) -> Write:
    """Store the start of a round (``user``: its question with ``attachments``, its images,
    and an empty ``partial`` answer in one transaction) or of a new answer (``None``)."""

    def begin(h: History) -> None:
        parent = parent_of(h, answer.conv.id, answer.anchor)
        if user is None:
            if answer.conv.id is not None:
                answer.message_id = h.begin_assistant_message(
                    answer.conv.id, model=model, settings=answer.settings, parent_id=parent
                )
            return
        answer.conv.id, answer.message_id = begin_round(
            h,
            answer.conv.id,
            user,
            model=model,
            settings=answer.settings,
            parent_id=parent,
            attachments=attachments,
        )
        answer.unsaved_user, answer.unsaved_images = None, ()

    return begin


def resume_write(answer: Answer, conv: ConversationRef, text: str) -> Write:
    """Continue: the stored answer ``text`` becomes ``partial`` again (found when the write
    runs, after the write that stored the cut answer)."""

    def resume(h: History) -> None:
        leaf = h.active_leaf(conv.id) if conv.id is not None else None
        if leaf is not None and (m := h.get_message(leaf)).role == "assistant" and m.text == text:
            h.resume_assistant_message(leaf)
            answer.message_id = leaf

    return resume


def finish_write(answer: Answer, message: ChatMessage, record, model: str | None) -> Write:
    """The answer ``message`` finished (stopped and failed ones too), with its record's
    figures: into its ``partial`` row, or its round stored whole when it never began."""
    stats = stats_of(record)
    reason = record.finish_reason if record is not None else "stop"
    params = record.params if record is not None else None
    settings = dataclasses.asdict(params) if params is not None else answer.settings

    def finish(h: History) -> None:  # decided when it runs: did the round begin in the file?
        if answer.message_id is not None:
            h.finish_assistant_message(
                answer.message_id,
                message.content,
                reason,
                stats=stats,
                settings=settings,
                model=model,
                tool_call=message.tool_call,
                reasoning=message.reasoning,
            )
        else:
            save_whole_round(
                h, answer.conv, answer.unsaved_user, message.content, reason, stats, settings,
                answer.anchor, model, message.reasoning, answer.unsaved_images,
            )  # fmt: skip

    return finish


def discard_write(answer: Answer) -> Write:
    """Nothing was written: no empty answer is kept, the question is."""

    def discard(h: History) -> None:
        if answer.message_id is not None:
            h.delete_message(answer.message_id)
        elif answer.unsaved_user is not None:
            save_whole_round(
                h, answer.conv, answer.unsaved_user, None, "stop", None, None, answer.anchor, None,
                attachments=answer.unsaved_images,
            )  # fmt: skip

    return discard


def checkpoint_write(answer: Answer) -> Write:
    """The answer's text and reasoning so far into its ``partial`` row (a checkpoint while
    it streams; taken now, on the GUI thread).

    Raises:
        ValueError: if the answer has no stored row yet (``message_id`` is ``None``).
    """
    mid = answer.message_id
    if mid is None:
        raise ValueError("An answer is checkpointed only once its row is stored.")
    parts = answer.parts.parts()
    text, reasoning = text_of(parts), reasoning_of(parts)
    return lambda h: h.checkpoint_partial(mid, text, reasoning)


def observation_write(conv: ConversationRef, message: ChatMessage) -> Write:
    """A tool's result (``observation`` message), before the answer continues."""
    text, name = message.content, message.name
    return lambda h: conv.id is not None and h.add_observation(conv.id, text, name=name)


def further_call_write(
    conv: ConversationRef, message: ChatMessage, model: str | None, settings: dict
) -> Write:
    """A further tool call of the same answer (GLM-4.5 writes several in one turn).

    Raises:
        ValueError: if ``message`` carries no tool call.
    """
    call = message.tool_call
    if call is None:
        raise ValueError("A further tool call write needs a message with a tool call.")
    return lambda h: (
        conv.id is not None and h.add_tool_call(conv.id, call, "", model=model, settings=settings)
    )


def unstarted_answer_write(conv: ConversationRef, message: ChatMessage, anchor, model: str | None) -> Write:
    """An answer the window added without starting it: stored as a whole round."""
    return lambda h: save_whole_round(
        h, conv, None, message.content, "stop", None, None, anchor, model, message.reasoning
    )


def image_write(conv: ConversationRef, png: bytes, name: str) -> Write:
    """One image a tool gave (PNG bytes), stored under the conversation."""
    return lambda h: conv.id is not None and h.add_image(conv.id, png, name=name)
