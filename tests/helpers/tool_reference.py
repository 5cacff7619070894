"""Reference prompt builders for ChatGLM3 and GLM-4-9B-chat with tools (test data).

Written from the published formats, independently of glmdesk's formats:

- ChatGLM3: THUDM/chatglm3-6b ``tokenization_chatglm.py``: ``build_chat_input(query,
  history, role)`` walks ``history`` items ``{"role", "content", "metadata"?, "tools"?}``;
  a system item with ``tools`` gets ``content + "\\n" + json.dumps(tools, indent=4,
  ensure_ascii=False)``; each item is ``build_single_message(role, metadata, content)``
  = ``[<|role|>] + sp.encode(metadata + "\\n") + sp.encode(content)``; the query is a
  message of ``role``; ``[gMASK] sop`` first (``get_prefix_tokens``), ``<|assistant|>``
  last. Special tokens follow the sentencepiece vocabulary in the order of its
  ``SPTokenizer.special_tokens``.
- GLM-4-9B-chat: the ``chat_template`` of its ``tokenizer_config.json`` (the branches
  for ``function`` and ``python`` tools, in ``GLM4_TEMPLATE`` below; the
  ``simple_browser`` and ``cogview`` branches are left out), rendered with Jinja2 and
  tokenized as transformers does: special-token strings become their ids, the text
  between them is encoded as one piece by the tiktoken vocabulary. (THUDM's
  ``build_single_message`` encodes ``metadata + "\n"`` and the content separately;
  with GLM-4's pre-tokenizer both give the same ids unless a content starts with a
  newline, which the test conversations avoid.)
"""

from __future__ import annotations

import json
import re

import jinja2

CHATGLM3_SPECIALS = [
    "[MASK]",
    "[gMASK]",
    "[sMASK]",
    "sop",
    "eop",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|observation|>",
]


def chatglm3_build_chat_input(sp, query: str, history: list[dict], role: str = "user") -> list[int]:
    """THUDM ChatGLM3 ``build_chat_input`` on a sentencepiece processor ``sp``."""
    n = sp.vocab_size()
    special = {name: n + i for i, name in enumerate(CHATGLM3_SPECIALS)}

    def single(role_: str, metadata: str, message: str) -> list[int]:
        return [special[f"<|{role_}|>"]] + sp.encode(f"{metadata}\n") + sp.encode(message)

    ids: list[int] = []
    for item in history:
        content = item["content"]
        if item["role"] == "system" and "tools" in item:
            content = content + "\n" + json.dumps(item["tools"], indent=4, ensure_ascii=False)
        ids.extend(single(item["role"], item.get("metadata", ""), content))
    ids.extend(single(role, "", query))
    ids.append(special["<|assistant|>"])
    return [special["[gMASK]"], special["sop"], *ids]


GLM4_TEMPLATE = (
    "[gMASK]<sop>{% for item in messages %}{% if item['tools'] is defined %}<|system|>\n"
    "你是一个名为 GLM-4 的人工智能助手。你是基于智谱AI训练的语言模型 GLM-4 模型开发的，你的任务是针对用户的问题和要求提供适当的答复和支持。"
    "\n\n# 可用工具{% set tools = item['tools'] %}{% for tool in tools %}{% if tool['type'] == 'function' %}"
    "\n\n## {{ tool['function']['name'] }}\n\n{{ tool['function'] | tojson(indent=4) }}\n"
    "在调用上述函数时，请使用 Json 格式表示调用的参数。{% elif tool['type'] == 'python' %}\n\n## python\n\n"
    "当你向 `python` 发送包含 Python 代码的消息时，该代码将会在一个有状态的 Jupyter notebook 环境中执行。\n"
    "`python` 返回代码执行的输出，或在执行 60 秒后返回超时。\n`/mnt/data` 将会持久化存储你的文件。"
    "在此会话中，`python` 无法访问互联网。不要使用 `python` 进行任何网络请求或者在线 API 调用，这些在线内容的访问将不会成功。"
    "{% endif %}{% endfor %}{% endif %}{% if item['content'] %}<|{{ item['role'] }}|>{{ item['metadata'] }}\n"
    "{{ item['content'] }}{% endif %}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)

GLM4_SPECIALS = [
    "<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>",
    "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>",
]  # fmt: skip


def _tojson(value, indent=None, ensure_ascii=False):
    # transformers' chat-template environment: json.dumps with ensure_ascii=False.
    return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii)


def glm4_render(messages: list[dict]) -> str:
    """GLM-4-9B-chat's chat template rendered for ``messages`` (generation prompt on)."""
    # As transformers renders chat templates (trim_blocks and lstrip_blocks): the first
    # newline after each block tag is dropped ("\n## name" after the tools heading).
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = _tojson
    return env.from_string(GLM4_TEMPLATE).render(messages=messages, add_generation_prompt=True)


def glm4_tokenize(encoding, text: str) -> list[int]:
    """Ids of rendered template text: special strings as ids, text between them as one piece."""
    base = encoding.n_vocab - len(GLM4_SPECIALS) if encoding.special_tokens_set else encoding.n_vocab
    special = {name: base + i for i, name in enumerate(GLM4_SPECIALS)}
    ids: list[int] = []
    pattern = "(" + "|".join(re.escape(s) for s in GLM4_SPECIALS) + ")"
    for piece in re.split(pattern, text):
        if piece in special:
            ids.append(special[piece])
        elif piece:
            ids.extend(encoding.encode_ordinary(piece))
    return ids
