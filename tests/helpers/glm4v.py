"""A tiny random GLM-4.1V folder (``Glm4vForConditionalGeneration``) built in tests, and
its session fixtures (imported by ``tests/conftest.py``: the engine, server and UI tests
share one folder and one loaded model).

The processor configuration is GLM-4.1V-9B-Thinking's published one (14-pixel patches,
2x2 merge, 2-frame temporal patches, CLIP mean/std, at least 112x112 pixels); the model
is random and a few layers deep. The tokenizer is a byte-level BPE trained here on a
small corpus, with GLM's special tokens (``[gMASK]``, ``<sop>``, role tokens, image and
video markers, ``<think>`` / ``<answer>``) added after it. The chat template is written
here from GLM-4.1V's documented prompt layout (``[gMASK]<sop><|user|>\\n`` then
``<|begin_of_image|><|image|><|end_of_image|>`` per image, then the text, then
``<|assistant|>\\n``): reference data only, not the model's own file.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from glmdesk.core.images import ImageAttachment
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams

CORPUS = [
    "What is in this picture? Describe the image briefly.",
    "The photo shows a red square on a white background, and a blue circle.",
    "Hello, I am a vision assistant. 你好，这张图片里有什么？",
    "Compare the two images: the first is brighter than the second one.",
]

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "[MASK]",
    "[gMASK]",
    "[sMASK]",
    "<sop>",
    "<eop>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|observation|>",
    "<|begin_of_image|>",
    "<|end_of_image|>",
    "<|begin_of_video|>",
    "<|end_of_video|>",
    "<|image|>",
    "<|video|>",
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
]

#: GLM-4.1V's prompt layout as a Jinja template (written for these tests).
CHAT_TEMPLATE = (
    "[gMASK]<sop>"
    "{%- for m in messages %}"
    "{%- if m.content is string %}{%- set parts = [{'type': 'text', 'text': m.content}] %}"
    "{%- else %}{%- set parts = m.content %}{%- endif %}"
    "<|{{ m.role }}|>{{ '\\n' }}"
    "{%- for p in parts %}"
    "{%- if p.type == 'image' %}<|begin_of_image|><|image|><|end_of_image|>"
    "{%- elif p.type == 'video' %}<|begin_of_video|><|video|><|end_of_video|>"
    "{%- else %}{{ p.text }}{%- endif %}"
    "{%- endfor %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|assistant|>{{ '\\n' }}{%- endif %}"
)

#: GLM-4.1V-9B-Thinking's image processor settings.
PREPROCESSOR = {
    "size": {"shortest_edge": 12544, "longest_edge": 9633792},
    "do_rescale": True,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "image_processor_type": "Glm4vImageProcessor",
    "processor_class": "Glm4vProcessor",
}


def write_tokenizer(folder: Path) -> dict[str, int]:
    """Train the byte-level BPE and save it as ``tokenizer.json`` beside its config.

    Returns:
        The special tokens' ids.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(CORPUS, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    fast.add_special_tokens({"additional_special_tokens": SPECIAL_TOKENS[1:]})
    fast.save_pretrained(folder)
    (folder / "chat_template.jinja").write_text(CHAT_TEMPLATE)
    return {t: fast.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}


#: The tiny vision tower: 2 blocks, hidden 32, 14-pixel patches, 2x2 merge, 2-frame patches.
VISION_CONFIG = {
    "depth": 2,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_heads": 2,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "image_size": 336,
    "out_hidden_size": 128,
    "initializer_range": 0.3,
}


def text_config(ids: dict[str, int], vocab: int) -> dict:
    """The tiny language model's settings both GLM-4V builders share (see :func:`write_glm4v_folder`)."""
    return {
        "vocab_size": vocab,
        "hidden_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        "initializer_range": 0.3,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000.0,
            "mrope_section": [2, 3, 3],
            "partial_rotary_factor": 0.5,
        },
        "eos_token_id": [ids["<|endoftext|>"], ids["<|user|>"], ids["<|observation|>"]],
        "pad_token_id": ids["<|endoftext|>"],
    }


def token_config(ids: dict[str, int]) -> dict:
    """The image and video marker ids and eos of a GLM-4V config."""
    return {
        "image_token_id": ids["<|image|>"],
        "video_token_id": ids["<|video|>"],
        "image_start_token_id": ids["<|begin_of_image|>"],
        "image_end_token_id": ids["<|end_of_image|>"],
        "video_start_token_id": ids["<|begin_of_video|>"],
        "video_end_token_id": ids["<|end_of_video|>"],
        "eos_token_id": [ids["<|endoftext|>"], ids["<|user|>"], ids["<|observation|>"]],
    }


def write_processor(folder: Path) -> None:
    """GLM-4.1V's image processor settings beside the weights."""
    (folder / "preprocessor_config.json").write_text(json.dumps(PREPROCESSOR, indent=2))
    (folder / "processor_config.json").write_text(json.dumps({"processor_class": "Glm4vProcessor"}))


def vocab_size(ids: dict[str, int]) -> int:
    """The vocabulary rounded up to a multiple of 64 past the last special token."""
    return -(-(max(ids.values()) + 1) // 64) * 64


def write_glm4v_folder(folder: Path, seed: int = 0) -> Path:
    """Write a tiny random ``Glm4vForConditionalGeneration`` folder with its processor.

    Text: 2 layers, hidden 128, 4 heads of 32 (2 KV heads), GLM-4.1V's partial M-RoPE
    (half of each head; ``mrope_section`` 2:3:3, GLM-4.1V's 8:12:12 scaled to the head). Vision: 2 blocks, hidden 32,
    patches of 14 pixels, 2x2 merge. Weights are drawn wide (``initializer_range`` 0.3)
    so that greedy answers vary with the image and the positions.
    """
    import torch
    from transformers import Glm4vConfig, Glm4vForConditionalGeneration

    folder.mkdir(parents=True, exist_ok=True)
    ids = write_tokenizer(folder)
    vocab = vocab_size(ids)
    config = Glm4vConfig(
        text_config={
            **text_config(ids, vocab),
            "intermediate_size": 192,
        },
        vision_config=VISION_CONFIG,
        **token_config(ids),
    )
    torch.manual_seed(seed)
    model = Glm4vForConditionalGeneration(config).eval()
    model.save_pretrained(folder)
    write_processor(folder)
    return folder


@pytest.fixture(scope="session")
def glm4v_folder(tmp_path_factory) -> Path:
    """A tiny random ``Glm4vForConditionalGeneration`` folder with GLM-4.1V's processor settings."""
    return write_glm4v_folder(tmp_path_factory.mktemp("glm4v") / "GLM-4.1V-tiny")


@pytest.fixture(scope="session")
def glm4v_loaded(glm4v_folder):
    """The tiny GLM-4.1V loaded by glmdesk's transformers loader (fp32, CPU)."""
    from glmdesk.engine.backends.transformers.loader import load_model

    return load_model(LoadSettings(model=str(glm4v_folder), device="cpu"))


def picture_bytes(size: tuple[int, int], color: tuple[int, int, int], fmt: str = "PNG") -> bytes:
    """An image file of one colour with a darker square in a corner, as bytes."""
    from PIL import Image

    picture = Image.new("RGB", size, color)
    picture.paste(tuple(c // 3 for c in color), (0, 0, size[0] // 3, size[1] // 3))
    out = io.BytesIO()
    picture.save(out, format=fmt)
    return out.getvalue()


@pytest.fixture(scope="session")
def red_photo() -> ImageAttachment:
    """A 60x40 PNG (smaller than GLM-4.1V's 112x112 minimum: scaled up by the processor)."""
    return ImageAttachment.from_bytes(picture_bytes((60, 40), (200, 30, 30)), "red.png")


@pytest.fixture(scope="session")
def blue_photo() -> ImageAttachment:
    """A 300x500 JPEG."""
    return ImageAttachment.from_bytes(picture_bytes((300, 500), (20, 40, 220), "JPEG"), "blue.jpg")


GREEDY = SamplingParams(temperature=0.0, max_new_tokens=12, repetition_penalty=1.0)


def vision_answer(loaded, messages, cache=None, conversation=None):
    """The chunks and token ids of glmdesk's greedy answer (the real decode loop)."""
    from glmdesk.engine.decode.generate import stream_answer

    chunks = list(stream_answer(loaded, messages, ParamsBox(GREEDY), cache, conversation=conversation))
    return chunks, [t for c in chunks for t in c.token_ids]


def generate_reference(loaded, messages, n):
    """transformers' ``generate`` on the processor's own inputs (greedy), with the same
    UTF-8 guard glmdesk applies to a byte-level vocabulary before choosing."""
    import torch
    from transformers import LogitsProcessorList

    from glmdesk.engine.backends.transformers.vision_processor import to_picture

    processor = loaded.prompt_format.processor
    rows, pictures = [], []
    for m in messages:
        parts = [{"type": "image"} for _ in m.attachments] + [{"type": "text", "text": m.content}]
        rows.append({"role": m.role, "content": parts if m.attachments else m.content})
        pictures += [to_picture(a) for a in m.attachments]
    text = processor.apply_chat_template(rows, tokenize=False, add_generation_prompt=True)
    inputs = processor(text=[text], images=pictures or None, return_tensors="pt")
    with torch.inference_mode():
        out = loaded.model.generate(
            **inputs,
            max_new_tokens=n,
            do_sample=False,
            eos_token_id=None,
            logits_processor=LogitsProcessorList(loaded.logits_processors()),
        )
    return inputs["input_ids"].shape[1], out[0, inputs["input_ids"].shape[1] :].tolist()
