"""Stop ids: the one rule for which token ids end a reply, whatever the backend.

A reply ends on the model's end-of-sequence ids (the config's and generation
config's ``eos_token_id`` lists, the tokenizer's eos, llama.cpp's eos and eot) and on
the end-of-turn tokens of its family that its vocabulary has (:func:`end_tokens`):

- ChatGLM2 (``chatglm2``, ``chatglm2-32k``): eos only; its rounds are plain text
  (``[Round N]``), caught by its reply filter.
- ChatGLM3 and GLM-4 (role tokens): ``<|endoftext|>``, ``<|user|>`` and
  ``<|observation|>``, as THUDM's ``generation_config.json`` eos lists say.
- Any other model: :data:`END_TOKENS`, the end-of-turn tokens of common chat
  templates (ChatML's ``<|im_end|>``, Llama 3's ``<|eot_id|>``, Phi-3's ``<|end|>``,
  GPT-2's ``<|endoftext|>``) and the GLM role tokens.

Every path asks :func:`stop_ids`: transformers' chat-template models
(:func:`hf_stop_ids`, from :mod:`glmdesk.engine.loader` and the GLM-4-HF preparation),
ChatGLM's prompt formats (:mod:`glmdesk.engine.chatglm.formats`), the converted
folder's config (:mod:`glmdesk.engine.chatglm.glm_config`) and llama.cpp's vocabulary
(:mod:`glmdesk.engine.backends.llamacpp_vocab`). Each passes its own vocabulary's
lookup, so a model gets the same ids whichever path loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

#: End-of-turn token texts of common chat templates (and GLM's role tokens) that end a
#: reply of a model outside the ChatGLM families whenever its vocabulary has them.
END_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<|endoftext|>", "<|user|>", "<|observation|>")
#: The tokens that end a ChatGLM3 or GLM-4 reply besides eos (THUDM generation_config.json).
ROLE_END_TOKENS = ("<|endoftext|>", "<|user|>", "<|observation|>")

#: A vocabulary lookup: token text -> id, or ``None`` when the vocabulary lacks it.
TokenLookup = Callable[[str], int | None]


def end_tokens(family: str) -> tuple[str, ...]:
    """The end-of-turn token texts that stop a reply of ``family`` (besides eos).

    Args:
        family: A detected family (``chatglm2``, ``chatglm3-32k``, ``glm4``,
            ``glm4-hf``, ``generic-hf``, ``gguf``...).
    """
    if family.startswith("chatglm2"):
        return ()
    if family.startswith(("chatglm3", "glm4")):
        return ROLE_END_TOKENS
    return END_TOKENS


def stop_ids(family: str, eos_ids: Iterable[int | None], token_id: TokenLookup) -> frozenset[int]:
    """Every id that ends a reply of a ``family`` model.

    Args:
        family: The model's family (decides :func:`end_tokens`).
        eos_ids: The model's end-of-sequence ids from its config, generation config,
            tokenizer or GGUF (``None`` entries are skipped).
        token_id: Looks a token text up in the model's own vocabulary.

    Returns:
        ``eos_ids`` plus the ids of the family's end tokens the vocabulary has.
    """
    ids = {int(i) for i in eos_ids if i is not None}
    for name in end_tokens(family):
        token = token_id(name)
        if token is not None:
            ids.add(int(token))
    return frozenset(ids)


def eos_list(value) -> list[int]:
    """A config's ``eos_token_id`` (an id, a list of ids, or ``None``) as a list."""
    if isinstance(value, int):
        return [value]
    return [int(i) for i in value or [] if isinstance(i, int)]


def token_lookup(tokenizer) -> TokenLookup:
    """The cheapest lookup of single token texts in a tokenizer's vocabulary.

    A fast (Rust) tokenizer answers one name at a time: ``get_vocab()`` builds the
    whole vocabulary as a dict while holding the GIL (about 30 ms for 49K tokens,
    the window waiting). Others fall back to ``get_vocab``, then to glmdesk's own
    tokenizers' ``special_id`` (``KeyError`` meaning absent).
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    lookup = getattr(backend, "token_to_id", None)
    if lookup is not None:
        return lookup
    if hasattr(tokenizer, "get_vocab"):
        return tokenizer.get_vocab().get
    special_id = getattr(tokenizer, "special_id", None)
    if special_id is None:
        return lambda _name: None

    def lookup_special(name: str) -> int | None:
        try:
            return special_id(name)
        except KeyError:
            return None

    return lookup_special


def hf_stop_ids(family: str, tokenizer, *configs) -> frozenset[int]:
    """Stop ids of a transformers model: the ``eos_token_id`` of each of ``configs``
    (model config, generation config; ``None`` skipped), the tokenizer's eos, and the
    family's end tokens in the tokenizer's vocabulary (:func:`stop_ids`)."""
    eos: list[int | None] = []
    for config in configs:
        eos += eos_list(getattr(config, "eos_token_id", None))
    eos.append(getattr(tokenizer, "eos_token_id", None))
    return stop_ids(family, eos, token_lookup(tokenizer))
