"""Stop ids: the one rule for which token ids end a reply, whatever the backend.

A reply ends on the model's end-of-sequence ids (the config's and generation
config's ``eos_token_id`` lists, the tokenizer's eos, llama.cpp's eos and eot) and on
the end-of-turn tokens its family declares (``ModelFamily.end_tokens`` in
:mod:`glmdesk.engine.families`) that its vocabulary has: none for ChatGLM2 (its rounds
are plain text, caught by its reply filter); ``<|endoftext|>``, ``<|user|>`` and
``<|observation|>`` for ChatGLM3 and every GLM-4 (THUDM's ``generation_config.json``
eos lists); for any other model the end-of-turn tokens of common chat templates
(:data:`END_TOKENS`).

Every path asks the family's rule (:func:`stop_ids`, ``ModelFamily.stop_ids``):
transformers' chat-template models (the families' chat-template factory, from
:mod:`glmdesk.engine.loader`), the families' prompt formats
(:mod:`glmdesk.engine.formats.chatglm_formats`), the converted folder's config
(:mod:`glmdesk.engine.chatglm.glm_config`) and llama.cpp's vocabulary
(:mod:`glmdesk.engine.backends.llamacpp_vocab`). Each passes its own vocabulary's
lookup, so a model gets the same ids whichever path loads it.
"""

from __future__ import annotations

from collections.abc import Iterable

from glmdesk.engine.families import TokenLookup, get_family
from glmdesk.engine.families.files import ROLE_END_TOKENS  # noqa: F401 (the GLM end tokens, named here)
from glmdesk.engine.families.generic import END_TOKENS  # noqa: F401 (the common end tokens, named here)


def end_tokens(family: str) -> tuple[str, ...]:
    """The end-of-turn token texts that stop a reply of ``family`` (besides eos).

    Args:
        family: A detected family (``chatglm2``, ``chatglm3-32k``, ``glm4``,
            ``glm4-hf``, ``generic-hf``, ``gguf``...).
    """
    return get_family(family).end_tokens


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
    return get_family(family).stop_ids(eos_ids, token_id)


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
