"""Load a model for chat with transformers, in stages that only go forward:

1. source (:mod:`glmdesk.engine.files.model_source`): a ready Hugging Face folder;
2. placement (:mod:`glmdesk.engine.backends.transformers.placement`): device, precision, bitsandbytes, tokenizer;
3. acceleration (:mod:`glmdesk.engine.backends.transformers.acceleration`): fused step, weight-only int8/int4,
   threads, compile;
4. chat setup (here): prompt format, stop ids (:meth:`glmdesk.engine.families.base.ModelFamily.stop_ids`), context
   length, :class:`ModelInfo`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

import torch

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.settings import LoadSettings
from glmdesk.engine import families
from glmdesk.engine.backends.transformers import acceleration, placement
from glmdesk.engine.backends.transformers.loaded_model import LoadedModel
from glmdesk.engine.backends.transformers.vision_processor import is_vision_config
from glmdesk.engine.cache import kv_bytes_per_token
from glmdesk.engine.decode.threads import ThreadTuner
from glmdesk.engine.families.base import eos_list
from glmdesk.engine.families.glm4v import OCR_FAMILIES, THINK
from glmdesk.engine.families.template_effort import effort_levels, keeps_thinking, reads_clear_thinking
from glmdesk.engine.families.template_format import template_format
from glmdesk.engine.files import model_source
from glmdesk.engine.formats.glm45_format import Glm45Format
from glmdesk.engine.formats.prompt import PromptFormat
from glmdesk.engine.info import LoadProgress, ModelInfo, context_limit, stage_reporter


def load_model(
    settings: LoadSettings,
    progress: Callable[[LoadProgress], None] | None = None,
    cancel: threading.Event | None = None,
) -> LoadedModel:
    """Load a model for chat.

    Args:
        settings: What to load and how.
        progress: Called with each :class:`LoadProgress` (from this thread).
        cancel: Set it to abandon loading between stages.

    Returns:
        The loaded model with its tokenizer, prompt format, decode step and :class:`ModelInfo`.

    Raises:
        GlmdeskError: ``model_not_found``, ``not_a_model``, ``corrupt_weights``,
            ``offline``, ``unsupported_checkpoint``, ``remote_code_required``,
            ``quantization_unavailable``, ``precision_unavailable``,
            ``out_of_memory``, ``load_cancelled`` or ``load_failed``, each with a sentence.
    """

    report = stage_reporter(progress, cancel)

    report("resolving")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # glmdesk reports its own stages
    device, precision, notes = placement.choose_device_and_dtype(settings)
    notes += placement.check_quantization(settings, device)
    ready = model_source.prepare_source(settings, report, cancel)
    report("loading")
    model, tokenizer, plan = placement.place(ready, settings, device, placement.DTYPES[precision])
    if plan is not None:
        notes.append(placement.offload_note(plan))
    fast = acceleration.accelerate(model, settings, report)
    report("preparing")
    vision = is_vision_config(model.config)
    prompt_format, choice = ready.prompt_format, None
    if prompt_format is None and vision:
        prompt_format = _vision_format(model, tokenizer, ready)
    elif prompt_format is None:
        prompt_format, choice = _chat_template_format(model, tokenizer, ready, settings)
    info = _model_info(ready, settings, model, device, precision, prompt_format, fast, notes, plan)
    if choice is not None:  # the format read from the chat template, and why
        note = choice.note()
        template = tokenizer.chat_template
        info = dataclasses.replace(
            info,
            family=choice.family,
            chat_format=choice.chat_format,
            format_reason=choice.reason,
            notes=info.notes + ((note,) if note else ()),
            effort_levels=effort_levels(template),
            clear_thinking=reads_clear_thinking(template),
            keeps_thinking=keeps_thinking(template),
        )
    report("ready", 1, 1)
    # threads 0: adapt the count to measured decode steps (a busy core slows a fixed count).
    automatic = settings.threads == 0 and device == "cpu"
    tuner = ThreadTuner(max_threads=acceleration.DEFAULT_THREADS) if automatic else None
    if vision:
        from glmdesk.engine.backends.transformers.vision import VisionLoadedModel

        return VisionLoadedModel(model, tokenizer, prompt_format, info, step=fast.step, tuner=tuner)
    return LoadedModel(model, tokenizer, prompt_format, info, step=fast.step, tuner=tuner)


def _model_info(
    ready, settings: LoadSettings, model, device: str, precision: str, prompt_format, fast, notes, plan
):
    """What was loaded, as :class:`ModelInfo`: the source, placement (device, precision,
    offloaded MiB), footprint in MiB, context window in tokens, KV bytes per token, the
    decode step's kind and the load's notes."""
    return ModelInfo(
        name=ready.source.name,
        family=ready.family,
        source_kind=ready.source.kind,
        location=str(ready.source.location),
        device=device,
        dtype=precision,
        quantization=settings.quantization,
        footprint_mib=model.get_memory_footprint() / 2**20,
        context_length=ready.context_length or (context_limit(model.config) or 2048),
        kv_bytes_per_token=kv_bytes_per_token(model.config, placement.DTYPES[precision]),
        prompt_format=prompt_format.name,
        threads=torch.get_num_threads(),
        fused_decode=fast.fused,
        compiled_decode=fast.compiled,
        notes=tuple(notes) + fast.notes,
        offloaded_mib=plan.cpu_bytes / 2**20 if plan is not None else 0.0,
    )


def _vision_format(model, tokenizer, ready) -> PromptFormat:
    """A GLM vision model's prompt format: its processor and chat template
    (:class:`glmdesk.engine.backends.transformers.vision.VisionFormat`)."""
    from glmdesk.engine.backends.transformers.vision import VisionFormat
    from glmdesk.engine.backends.transformers.vision_processor import load_processor

    if not getattr(tokenizer, "chat_template", None):
        _no_template(ready)
    family = families.get_family(ready.family)
    text_format = family.prompt_format(tokenizer, _eos_ids(model))  # its stop ids
    processor = load_processor(ready.folder, tokenizer)
    glm45 = text_format if isinstance(text_format, Glm45Format) else None
    if (
        glm45 is None
        and family.name not in OCR_FAMILIES
        and template_format(tokenizer.chat_template)[0] == "glm45"
    ):
        # a glm4v / glm4v_moe folder with the 4.6V line's template (GLM-4.5V, GLM-4.6V-Flash as published)
        glm45 = Glm45Format(tokenizer, text_format.stop_ids, family.reasoning or THINK)
    if glm45 is not None:  # thinking switch and tools, as the GLM-4.6 line
        from glmdesk.engine.backends.transformers.vision_glm46 import Glm46VisionFormat

        return Glm46VisionFormat(processor, glm45)
    return VisionFormat(processor, text_format.stop_ids)


def _no_template(ready) -> None:
    raise GlmdeskError(
        "not_a_model",
        f"{ready.source.name} has no chat template, so it cannot be used for chat.",
        path=str(ready.source.location),
    )


def _eos_ids(model) -> list[int]:
    eos: list[int] = []
    for config in (getattr(model, "generation_config", None), model.config):
        eos += eos_list(getattr(config, "eos_token_id", None))
    return eos


def _chat_template_format(model, tokenizer, ready, settings: LoadSettings):
    """The tokenizer's chat template as the prompt format, as the family of the format
    the template speaks builds it (its stop tokens and think markers, its tool dialect:
    :func:`~glmdesk.engine.families.template_format.choose_format`), with the template
    file the user picked in place of the folder's own.

    Returns:
        ``(format, FormatChoice)``.

    Raises:
        GlmdeskError: ``not_a_model`` when the tokenizer has no chat template;
            ``not_a_model`` when the picked template file cannot be read.
    """
    from glmdesk.engine.families.template_format import choose_format, read_template_file

    if settings.chat_template:
        tokenizer.chat_template = read_template_file(settings.chat_template)
    if not getattr(tokenizer, "chat_template", None):
        _no_template(ready)
    choice = choose_format(ready.family, tokenizer.chat_template, settings.chat_format)
    return families.get_family(choice.family).prompt_format(tokenizer, _eos_ids(model)), choice
