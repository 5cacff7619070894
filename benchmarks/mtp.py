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
alternated after a warm-up. The tiny checkpoint's weights are random, its MTP layer too: it
cannot predict its trunk, so it keeps about no drafts, and MTP is slower (a draft forward
per step, two tokens to verify). ``--fit-head STEPS`` then fits the MTP layer to the trunk's
greedy text of three other prompts and runs again, to show what the bookkeeping counts when
the head predicts: measured here (2 busy cores, 48 tokens, 150 steps) 10 of 37 drafts kept,
1.26 tokens per trunk step, the same tokens as plain greedy, and still 0.43 x the plain
speed: for a model 64 wide, transformers' drafting bookkeeping costs more than the trunk
steps it saves. A real GLM-4.5's trunk step is what a kept draft saves; not measured here
(no trained weights on this machine).

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


def fit_head(model, folder: Path, prompts: list, steps: int, new: int = 96) -> float:
    """Fit the folder's MTP layer to the trunk for ``steps`` Adam steps and write it back:
    the trunk's greedy continuation of each prompt (``new`` tokens) is the text, and at each
    position the head, given the trunk's last hidden state and the next token, learns the
    token after next (what the trunk will say). The trunk, embeddings and output head stay
    as they are. Returns the final cross-entropy (nats)."""
    import torch
    from transformers.cache_utils import MtpCache
    from transformers.modeling_layers import MtpModel

    from tests.helpers.mtp_models import save_head

    texts = []
    with torch.no_grad():  # tensors kept for training: not inference-mode ones
        for ids in prompts:
            out = model.generate(
                ids, max_new_tokens=new, min_new_tokens=new, do_sample=False, eos_token_id=None
            )
            hidden = model(out, output_hidden_states=True).hidden_states[-1]
            texts.append((out.clone(), hidden.clone()))
    head = MtpModel.from_pretrained(model).train()
    for p in model.parameters():
        p.requires_grad_(False)
    trained = [p for name, p in head.named_parameters() if name.startswith("layers.")]
    for p in trained:
        p.requires_grad_(True)
    optimizer = torch.optim.Adam(trained, lr=3e-3)
    loss = torch.tensor(0.0)
    for step in range(steps):
        ids, hidden = texts[step % len(texts)]
        n = ids.shape[1]
        positions = torch.arange(1, n)[None]
        cache = MtpCache(config=model.config.get_mtp_config())  # without one its mask is undefined
        states = head.forward_layer(0, hidden[:, :-1], positions, cache, input_ids=ids[:, 1:])
        logits = head._project_to_logits(states)[0, :-1]
        loss = torch.nn.functional.cross_entropy(logits, ids[0, 2:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    save_head(folder, head.eval(), model.config.num_hidden_layers)
    return float(loss.detach())


def table(results: dict, new: int, repeat: int, title: str) -> None:
    (plain, plain_steps, plain_s), (mtp, mtp_steps, mtp_s) = results[False], results[True]
    kept = len(mtp) - mtp_steps  # each trunk step yields its own token plus the drafts it kept
    print(f"{title}: greedy, {new} new tokens, best of {repeat}")
    print(f"{'':14}{'tokens':>8}{'trunk steps':>13}{'tokens/step':>13}{'seconds':>10}")
    print(f"{'plain':14}{len(plain):>8}{plain_steps:>13}{len(plain) / plain_steps:>13.2f}{plain_s:>10.3f}")
    print(f"{'MTP (1 draft)':14}{len(mtp):>8}{mtp_steps:>13}{len(mtp) / mtp_steps:>13.2f}{mtp_s:>10.3f}")
    print(f"drafts kept: {kept} of {mtp_steps - 1} (the first step is the prompt's)")
    print(f"speed ratio plain/MTP: {plain_s / mtp_s:.2f} (above 1 = MTP faster)")
    print(f"same tokens as plain greedy: {'yes' if mtp == plain else 'NO'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new", type=int, default=64, help="tokens to generate")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each, best kept")
    parser.add_argument(
        "--fit-head", type=int, default=0, metavar="STEPS",
        help="then fit the MTP layer to the trunk's greedy text of other prompts for STEPS steps and run again",
    )  # fmt: skip
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

        def measure() -> dict:
            runs: dict[bool, list] = {False: [], True: []}
            for use_mtp in (False, True):
                run(model, ids, 4, use_mtp)  # warm-up (MTP: loads the head from the folder)
            for _ in range(args.repeat):  # alternated, so a busy machine slows both alike
                for use_mtp in (False, True):
                    runs[use_mtp].append(run(model, ids, args.new, use_mtp))
            return {use_mtp: min(r, key=lambda x: x[2]) for use_mtp, r in runs.items()}

        random_head = measure()
        table(random_head, args.new, args.repeat, "tiny GLM-4.5-Air, random weights and MTP layer")
        print("A random MTP head cannot predict its trunk: near-zero drafts kept is expected here.")
        same = random_head[True][0] == random_head[False][0]
        if args.fit_head:
            others = ["The weather in Paris", "Write a haiku about the sea", "1 2 3 4 5 6 7 8 9"]
            prompts = [
                tok.apply_chat_template(
                    [{"role": "user", "content": text}], add_generation_prompt=True, return_tensors="pt",
                    return_dict=True,
                )["input_ids"]
                for text in others
            ]  # fmt: skip
            loss = fit_head(model, folder, prompts, args.fit_head)
            print()
            fitted = measure()
            table(
                fitted,
                args.new,
                args.repeat,
                f"the same, MTP layer fitted to the trunk ({args.fit_head} steps, loss {loss:.2f})",
            )
            print(
                "Fitted on the trunk's greedy text of other prompts: what drafting gains when the head predicts well."
            )
            same = same and fitted[True][0] == fitted[False][0]
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
