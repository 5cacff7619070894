"""A tiny GLM-4.5-format folder (``Glm4MoeForCausalLM``, random weights) built in tests.

Two layers (the first dense, the second with four small routed experts and a shared
one), a byte-level BPE tokenizer trained here with GLM's special tokens and GLM-4.5's
think tags (special: the hardest case for decoding) and tool-call tags (ordinary added
tokens: the hardest case for typed text) after the learnt pieces. The chat template is written here from the format GLM-4.5/4.6's model
cards describe: a ``# Tools`` system turn listing the functions and the XML call
format; ``<|user|>``/``<|assistant|>`` turns; the reasoning of an answer after the last
user turn kept as ``<think>..</think>``, earlier ones left as ``<think></think>``;
calls as ``<tool_call>name`` + ``<arg_key>``/``<arg_value>`` lines + ``</tool_call>``;
results as ``<tool_response>`` blocks after one ``<|observation|>``; thinking off adds
``/nothink`` to user turns and ``<think></think>`` to the generation prompt.
Reference data only: no model file is downloaded.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.glm4_0414_models import save_model, write_glm_tokenizer

GLM_SPECIAL = (
    "<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>",
    "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>",
    "<think>", "</think>",
)  # fmt: skip
#: The tool-call tags, added as ordinary (not special) tokens: typed text must still
#: stay text, and decoding keeps them either way.
TOOL_TAGS = (
    "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
    "<tool_response>", "</tool_response>",
)  # fmt: skip

CORPUS = [
    "Hello world, what is the weather today? It is sunny and warm in Paris.",
    "Let me think about this step by step. The answer is 42.",
    "你好！我是人工智能助手。今天天气很好。",
    "You are a helpful assistant. Answer briefly, please. get_weather city unit",
    '{"city": "Paris", "days": 3, "temperature": 21}',
]

GLM45_TEMPLATE = """[gMASK]<sop>
{%- if tools -%}
<|system|>
# Tools

Call functions to help with the user's request. Their signatures, in <tools></tools>:
<tools>
{% for t in tools %}{{ t | tojson(ensure_ascii=False) }}
{% endfor %}</tools>

Write each call as:
<tool_call>{function-name}
<arg_key>{key}</arg_key>
<arg_value>{value}</arg_value>
</tool_call>
{%- endif -%}
{%- set ns = namespace(last_user=-1) -%}
{%- for m in messages -%}{%- if m.role == 'user' -%}{%- set ns.last_user = loop.index0 -%}{%- endif -%}{%- endfor -%}
{%- for m in messages -%}
{%- if m.role == 'user' -%}
<|user|>
{{ m.content }}{{ '/nothink' if (enable_thinking is defined and not enable_thinking) else '' }}
{%- elif m.role == 'assistant' -%}
<|assistant|>
{%- set thought = m.reasoning_content if m.reasoning_content is string else '' -%}
{%- if loop.index0 > ns.last_user and thought -%}
{{ '\\n<think>' + thought.strip() + '</think>' }}
{%- else -%}
{{ '\\n<think></think>' }}
{%- endif -%}
{%- if m.content.strip() -%}{{ '\\n' + m.content.strip() }}{%- endif -%}
{%- for c in m.tool_calls or [] -%}
{{ '\\n<tool_call>' + c.function.name }}
{%- for k, v in c.function.arguments.items() %}
<arg_key>{{ k }}</arg_key>
<arg_value>{{ v if v is string else v | tojson(ensure_ascii=False) }}</arg_value>
{%- endfor %}
</tool_call>
{%- endfor -%}
{%- elif m.role == 'tool' -%}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}<|observation|>{%- endif -%}
{{ '\\n<tool_response>\\n' + m.content + '\\n</tool_response>' }}
{%- elif m.role == 'system' -%}
<|system|>
{{ m.content }}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{{ '\\n<think></think>' if (enable_thinking is defined and not enable_thinking) else '' }}{%- endif -%}"""


def write_glm45(folder: Path, name: str = "zai-org/GLM-4.5-Air", template: str = GLM45_TEMPLATE) -> Path:
    """Write a tiny ``Glm4MoeForCausalLM`` folder (config, weights, tokenizer with the chat
    ``template``: GLM-4.5's, or GLM-4.7's from :mod:`tests.helpers.glm47_flash_models`)
    into ``folder``."""
    import torch
    from transformers import Glm4MoeConfig, Glm4MoeForCausalLM

    tokenizer, ids, stops = write_glm_tokenizer(folder, CORPUS, template, GLM_SPECIAL, TOOL_TAGS)
    torch.manual_seed(0)
    config = Glm4MoeConfig(
        vocab_size=-(-len(tokenizer) // 64) * 64, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
        num_hidden_layers=2, first_k_dense_replace=1, n_routed_experts=4, num_experts_per_tok=2,
        n_shared_experts=1, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        max_position_embeddings=2048, num_nextn_predict_layers=0,
        pad_token_id=ids["<|endoftext|>"], eos_token_id=stops,
    )  # fmt: skip
    return save_model(Glm4MoeForCausalLM(config).eval(), folder, name)
