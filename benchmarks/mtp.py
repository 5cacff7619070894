"""Multi-token prediction (MTP) as self-speculative decoding, on the tiny GLM-4.5.

GLM-4.5's checkpoints carry an MTP layer that drafts the token after next from the trunk's
last hidden state; the trunk then checks the draft in its next step and keeps it when it
agrees, so one trunk step can yield two tokens. transformers 5.24 runs this as
``generate(..., use_mtp=True)`` (``MTPCandidateGenerator``) for the classes whose config
has ``num_mtp_layers``: GLM-4.5/4.6/4.7 (``glm4_moe``); not GLM-4.7-Flash, GLM-5 or
GLM-5.3-Flash, whose checkpoints' MTP layers transformers 5.24 skips on load.

This prints, for greedy decoding of the same prompt with and without MTP: the tokens,
trunk steps, tokens per trunk step (1.0 = no draft kept), drafts kept out of drafts made,
and plain/MTP wall time (above 1 = MTP is faster), each the best of ``--repeat`` runs
after a warm-up. The tiny checkpoint's weights are random, its MTP layer too: it cannot
predict its trunk, so it keeps about no drafts and MTP is slower here (it adds a draft
forward per step and a two-token verification). What the run does show: the head loads
from the folder, the answer is the same tokens as plain greedy decoding, and the
bookkeeping below counts what a trained head would gain (how many drafts a trained head
keeps depends on the text; not measured here: no trained weights on this machine).

Usage::

    python benchmarks/mtp.py [--new 64] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def run(model, ids, new: int, use_mtp: bool) -> tuple[list[int], int, float]:
    """Greedy ``new`` tokens after ``ids``; returns (tokens, trunk steps, seconds)."""
    import torch

    steps = 0

    def count(*_args) -> None:
        nonlocal steps
        steps += 1

    hook = model.model.register_forward_hook(count)
    try:
        start = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(
                ids,
                max_new_tokens=new,
                min_new_tokens=new,
                do_sample=False,
                use_mtp=use_mtp,
                eos_token_id=None,
            )
        seconds = time.perf_counter() - start
    finally:
        hook.remove()
    return out[0, ids.shape[1] :].tolist(), steps, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new", type=int, default=64, help="tokens to generate")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each, best kept")
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests.helpers.mtp_models import allow_mtp_keys, write_glm45_mtp

    torch.set_num_threads(max(1, torch.get_num_threads()))
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_glm45_mtp(Path(tmp) / "GLM-4.5-Air-MTP")
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        allow_mtp_keys(model)
        tok = AutoTokenizer.from_pretrained(folder)
        messages = [{"role": "user", "content": "Hello world, what is the weather today?"}]
        ids = tok.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )["input_ids"]
        results = {}
        for use_mtp in (False, True):
            run(model, ids, 4, use_mtp)  # warm-up (MTP: loads the head from the folder)
            best = min((run(model, ids, args.new, use_mtp) for _ in range(args.repeat)), key=lambda r: r[2])
            results[use_mtp] = best
    (plain, plain_steps, plain_s), (mtp, mtp_steps, mtp_s) = results[False], results[True]
    kept = len(mtp) - mtp_steps  # each trunk step yields its own token plus the drafts it kept
    print(f"tiny GLM-4.5-Air (random weights), greedy, {args.new} new tokens, best of {args.repeat}")
    print(f"{'':14}{'tokens':>8}{'trunk steps':>13}{'tokens/step':>13}{'seconds':>10}")
    print(f"{'plain':14}{len(plain):>8}{plain_steps:>13}{len(plain) / plain_steps:>13.2f}{plain_s:>10.3f}")
    print(f"{'MTP (1 draft)':14}{len(mtp):>8}{mtp_steps:>13}{len(mtp) / mtp_steps:>13.2f}{mtp_s:>10.3f}")
    print(f"drafts kept: {kept} of {mtp_steps - 1} (the first step is the prompt's)")
    print(f"speed ratio plain/MTP: {plain_s / mtp_s:.2f} (above 1 = MTP faster)")
    print(f"same tokens as plain greedy: {'yes' if mtp == plain else 'NO'}")
    print("A random MTP head cannot predict its trunk: near-zero drafts kept is expected here.")
    return 0 if mtp == plain else 1


if __name__ == "__main__":
    sys.exit(main())
