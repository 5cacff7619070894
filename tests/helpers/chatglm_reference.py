"""An independent ChatGLM2/3 forward pass on the original (THUDM-named) weights.

Written from the architecture description, not from transformers: fused
``query_key_value`` split into [heads*hd, groups*hd, groups*hd], rotary embedding
on the first half of each head applied to interleaved pairs (x[2i], x[2i+1]) with
theta_i = base^(-2i/rot_dim), grouped KV (head h uses group h // (heads/groups)),
RMSNorm, SwiGLU (first half of dense_h_to_4h is the gate). Computes in ``dtype``
(float32 by default, the precision the converted model is compared in).
"""

from __future__ import annotations

import torch


def _rms(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def _rope(x: torch.Tensor, pos: torch.Tensor, base: float, pos_scale: float) -> torch.Tensor:
    # Angles in float64, then cast: the table itself is exact to the compute dtype.
    # x: [T, n, hd]; rotates x[..., :hd/2] in interleaved pairs.
    hd = x.shape[-1]
    rot = hd // 2
    theta = 1.0 / (base ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot))  # [rot/2]
    ang = torch.outer(pos.double() / pos_scale, theta)  # [T, rot/2]
    cos, sin = ang.cos()[:, None, :].to(x.dtype), ang.sin()[:, None, :].to(x.dtype)
    xr = x[..., :rot].reshape(*x.shape[:-1], rot // 2, 2)
    x0, x1 = xr[..., 0], xr[..., 1]
    out = torch.stack([x0 * cos - x1 * sin, x1 * cos + x0 * sin], dim=-1).flatten(-2)
    return torch.cat([out, x[..., rot:]], dim=-1)


def reference_forward(
    sd: dict[str, torch.Tensor],
    config: dict,
    ids: list[int],
    cache: list | None = None,
    linear_rope: bool = False,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, list]:
    """Logits for ``ids`` continuing ``cache``.

    Args:
        sd: THUDM state dict.
        config: THUDM config.
        ids: New token ids, shape ``[T]``.
        cache: Per layer ``(k, v)`` of earlier positions (``[S, groups, hd]``), or None.
        linear_rope: ChatGLM2-32K: divide positions by rope_ratio instead of
            multiplying the base.

        dtype: Compute dtype.

    Returns:
        ``(logits [T, vocab] in dtype, new cache)``.
    """
    w = {k: v.to(dtype) for k, v in sd.items()}
    nh, ng, hd = config["num_attention_heads"], config["multi_query_group_num"], config["kv_channels"]
    eps = config["layernorm_epsilon"]
    ratio = float(config.get("rope_ratio") or 1.0)
    base, pos_scale = (10000.0, ratio) if linear_rope else (10000.0 * ratio, 1.0)
    past = 0 if cache is None else cache[0][0].shape[0]
    T = len(ids)
    pos = torch.arange(past, past + T)
    x = w["transformer.embedding.word_embeddings.weight"][torch.tensor(ids)]
    new_cache = []
    for n in range(config["num_layers"]):
        p = f"transformer.encoder.layers.{n}."
        h = _rms(x, w[p + "input_layernorm.weight"], eps)
        qkv = (
            h @ w[p + "self_attention.query_key_value.weight"].T
            + w[p + "self_attention.query_key_value.bias"]
        )
        q = qkv[:, : nh * hd].reshape(T, nh, hd)
        k = qkv[:, nh * hd : nh * hd + ng * hd].reshape(T, ng, hd)
        v = qkv[:, nh * hd + ng * hd :].reshape(T, ng, hd)
        q, k = _rope(q, pos, base, pos_scale), _rope(k, pos, base, pos_scale)
        if cache is not None:
            k = torch.cat([cache[n][0], k])
            v = torch.cat([cache[n][1], v])
        new_cache.append((k, v))
        S = k.shape[0]
        ctx = torch.empty(T, nh, hd, dtype=dtype)
        kpos = torch.arange(S)
        for head in range(nh):
            g = head // (nh // ng)
            scores = (q[:, head] @ k[:, g].T) / hd**0.5  # [T, S]
            scores = scores.masked_fill(kpos[None, :] > pos[:, None], float("-inf"))
            ctx[:, head] = torch.softmax(scores, dim=-1) @ v[:, g]
        x = x + ctx.reshape(T, nh * hd) @ w[p + "self_attention.dense.weight"].T
        h = _rms(x, w[p + "post_attention_layernorm.weight"], eps)
        gate, up = (h @ w[p + "mlp.dense_h_to_4h.weight"].T).chunk(2, dim=-1)
        x = x + (torch.nn.functional.silu(gate) * up) @ w[p + "mlp.dense_4h_to_h.weight"].T
    x = _rms(x, w["transformer.encoder.final_layernorm.weight"], eps)
    return x @ w["transformer.output_layer.weight"].T, new_cache
