"""A tiny GLM-4-0414 / GLM-Z1 folder (``Glm4ForCausalLM``, random weights) built in tests.

The tokenizer is a byte-level BPE trained here on a few lines, with GLM's special
tokens after the learnt pieces (as GLM-4's come after its ranks). The chat templates
are written here from the format the public GLM-4-0414 and GLM-Z1 model cards show
(``[gMASK]<sop>``, one ``<|role|>\\n`` turn per message, the generation prompt
``<|assistant|>\\n``; Z1 opens ``<think>`` itself and keeps only the answer of an
earlier assistant turn). Reference data only: no model file is downloaded.
"""

from __future__ import annotations

import json
from pathlib import Path

GLM_SPECIAL = (
    "<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>",
    "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>",
)  # fmt: skip

CORPUS = [
    "Hello world, what is the weather today? It is sunny and warm.",
    "<think>Let me think about this step by step.</think>The answer is 42.",
    "你好！我是人工智能助手。今天天气很好。",
    "You are a helpful assistant. Answer briefly, please. x answer",
]

CHAT_TEMPLATE = (
    "[gMASK]<sop>"
    "{%- for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}{%- endfor %}"
    "{%- if add_generation_prompt %}<|assistant|>\n{%- endif %}"
)

Z1_TEMPLATE = (
    "[gMASK]<sop>"
    "{%- for m in messages %}"
    "{%- if m['role'] == 'assistant' %}<|assistant|>\n{{ m['content'].split('</think>')[-1].strip() }}"
    "{%- else %}<|{{ m['role'] }}|>\n{{ m['content'] }}{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|assistant|>\n<think>{%- endif %}"
)


def write_glm_tokenizer(folder: Path, corpus, template: str, special=GLM_SPECIAL, plain=()):
    """Train a byte-level BPE (GLM-4's split pattern) on ``corpus`` and save it into ``folder`` with the chat
    ``template``: ``special`` become special tokens after the learnt pieces, ``plain`` added
    tokens that are not special (GLM-4.5's tool tags). Returns ``(tokenizer, special ids,
    stop ids)`` (``<|endoftext|>``, ``<|user|>``, ``<|observation|>``)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from glmdesk.engine.formats.glm4_tokenizer import GLM4_PATTERN

    folder.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE())
    # GLM's own pre-tokenizer (its tokenizer.json: the GLM-4 split, then bytes), the one
    # llama.cpp's ``glm4`` pre-tokenizer type applies, so a GGUF of it tokenizes alike.
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(GLM4_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(list(corpus) * 4, trainer)
    bpe.add_special_tokens(list(special))
    if plain:
        bpe.add_tokens([AddedToken(t, special=False, normalized=False) for t in plain])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )
    tokenizer.chat_template = template
    tokenizer.save_pretrained(folder)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in special}
    return tokenizer, ids, [ids["<|endoftext|>"], ids["<|user|>"], ids["<|observation|>"]]


def save_model(model, folder: Path, name: str) -> Path:
    """Save ``model`` into ``folder`` with ``_name_or_path`` = ``name`` in its config."""
    model.save_pretrained(folder)
    config_file = folder / "config.json"
    data = json.loads(config_file.read_text())
    data["_name_or_path"] = name
    config_file.write_text(json.dumps(data))
    return folder


def write_glm4_0414(folder: Path, template: str = CHAT_TEMPLATE, name: str = "THUDM/GLM-4-9B-0414") -> Path:
    """Write a tiny ``Glm4ForCausalLM`` folder (config, weights, tokenizer) into ``folder``."""
    import torch
    from transformers import Glm4Config, Glm4ForCausalLM

    tokenizer, ids, stops = write_glm_tokenizer(folder, CORPUS, template)
    torch.manual_seed(0)
    config = Glm4Config(
        vocab_size=-(-len(tokenizer) // 64) * 64, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=2048,
        pad_token_id=ids["<|endoftext|>"], eos_token_id=stops,
    )  # fmt: skip
    config._name_or_path = name
    return save_model(Glm4ForCausalLM(config).eval(), folder, name)
