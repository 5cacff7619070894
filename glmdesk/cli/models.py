"""``glmdesk models`` (the GLM catalog with this machine's fit marks) and ``glmdesk pull
REPO [--quant Q]`` (a resumable, checked download). See :mod:`glmdesk.engine.catalog`."""

from __future__ import annotations

import sys
import time

_MARK_WORDS = {"fits": "fits", "slow": "fits, slower", "too_big": "too big"}
#: Seconds ``glmdesk models`` waits for the hub before it says "not reachable".
HUB_PROBE_S = 3.0


def add_models_parsers(sub) -> None:
    """The ``models`` and ``pull`` verbs."""
    models = sub.add_parser(
        "models",
        help="list the GLM catalog with what fits this machine",
        description="Every GLM model glmdesk knows (from its shipped catalog), each download with its "
        "size and a fit mark for this machine from glmdesk's memory forecast: fits (green), fits but "
        "slower (experts or everything in RAM), too big; and why, in one line. Best that fits first.",
    )
    models.add_argument("--fits", action="store_true", help="only what runs on this machine")
    models.add_argument("--search", metavar="TEXT", help="only models or repositories whose name holds TEXT")
    models.add_argument("--pulled", action="store_true", help="list the models pulled into the models folder")
    pull = sub.add_parser(
        "pull",
        help="download a model from the hub (resumable, checked)",
        description="Download REPO (a hub repository such as unsloth/GLM-4.7-Flash-GGUF, or a catalog "
        "name such as GLM-4.7-Flash) into glmdesk's models folder. Free disk is checked first; every file "
        "is checked against the hub's hash; Ctrl+C pauses and the same command resumes. "
        "Then: glmdesk chat --model REPO.",
    )
    pull.add_argument("repo", metavar="REPO")
    pull.add_argument("--quant", metavar="Q", help="the GGUF quantization to take (Q4_K_M, Q8_0...)")
    pull.add_argument("--token", help="a hub token for gated repositories (kept in the system keyring)")
    pull.add_argument("--dir", metavar="FOLDER", help="the models folder (default: glmdesk's)")


def _size(n: int) -> str:
    from glmdesk.engine.forecast import gib

    return gib(n)


def models(args) -> int:
    """Print the catalog with fit marks (``--fits``: only what runs), or the pulled models."""
    from glmdesk.engine.catalog.catalog import load_catalog
    from glmdesk.engine.catalog.fit import best_first_key, fit, this_machine
    from glmdesk.engine.catalog.pulled import models_dir, pulled_models

    folder = models_dir()
    if args.pulled:
        found = pulled_models(folder)
        for m in found:
            print(f"{m.repo}:{m.quant}  {_size(m.size_bytes)}  {m.model_path}")
        if not found:
            print(f"No models pulled yet (into {folder}).", file=sys.stderr)
        return 0
    from glmdesk.engine.catalog.hub_files import hub_reachable

    catalog = load_catalog()
    machine = this_machine(folder)
    reachable, reason = hub_reachable(timeout=HUB_PROBE_S)
    rows = []
    for model, variant in catalog.variants():
        text = f"{model.name} {variant.repo}".lower()
        if args.search and args.search.lower() not in text:
            continue
        result = fit(model, variant, machine)
        if args.fits and not result.runs:
            continue
        rows.append((best_first_key(model, variant, result), model, variant, result))
    rows.sort(key=lambda r: r[0])
    gpu = f"{_size(machine.gpu_free)} free on the GPU" if machine.gpu_free is not None else "no GPU"
    print(
        f"GLM catalog of {catalog.date} ({catalog.written}); this machine: {gpu}, "
        f"{_size(machine.ram_available)} RAM available, "
        + (
            f"{_size(machine.disk_free)} free disk in {folder}"
            if machine.disk_free is not None
            else str(folder)
        )
    )
    if not reachable:
        print(
            f"The hub is not reachable ({reason}): this is the catalog glmdesk shipped; pulls wait for a connection."
        )
    for _, model, variant, result in rows:
        caps = ",".join(model.capabilities()) or "-"
        estimated = " (size estimated)" if variant.size_source == "estimated" else ""
        speed = f", {result.speed}" if result.speed else ""
        how = f" on {result.how}" if result.how else ""
        print(
            f"{_MARK_WORDS[result.mark]:<13} {model.name:<26} {variant.repo}:{variant.quant}  "
            f"{_size(variant.size_bytes)}{estimated}  [{caps}]{how}{speed}"
        )
        print(f"{'':14}{result.why}")
    if not rows:
        print("Nothing matches." if (args.search or args.fits) else "The catalog is empty.", file=sys.stderr)
    return 0


def _resolve_repo(name: str, quant: str | None) -> tuple[str, str | None]:
    """A catalog name (``GLM-4.7-Flash``) as its repository: the GGUF one with ``quant``,
    else the first; a repository id as it is."""
    if "/" in name:
        return name, quant
    from glmdesk.engine.catalog.catalog import load_catalog

    for model in load_catalog().models:
        if model.name.lower() == name.lower():
            for variant in model.variants:
                if quant and variant.format == "gguf" and variant.quant.lower() == quant.lower():
                    return variant.repo, variant.quant
            return model.variants[0].repo, quant
    return name, quant


class _ProgressLine:
    """One status line on standard error, redrawn at most 4 times a second."""

    def __init__(self) -> None:
        self._last = 0.0

    def __call__(self, p) -> None:
        from glmdesk.engine.forecast import gib

        if p.stage == "resuming":
            print(f"resuming: {gib(p.resumed_bytes)} of {gib(p.total_bytes)} already here", file=sys.stderr)
            return
        if p.stage == "linked":
            print(f"\r{p.file}: taken from the hub's cache (no second copy)", file=sys.stderr)
            return
        if p.stage == "verifying":
            print(f"\r{p.file}: checking its hash...{' ' * 30}", end="", file=sys.stderr, flush=True)
            return
        now = time.monotonic()
        if p.stage != "downloading" or now - self._last < 0.25:
            return
        self._last = now
        eta = time.strftime("%H:%M:%S", time.gmtime(p.eta_s)) if p.eta_s is not None else "--:--:--"
        speed = f"{gib(int(p.bytes_per_s))}/s" if p.bytes_per_s else "..."
        line = (
            f"\r{gib(p.done_bytes)} / {gib(p.total_bytes)}  {speed}  {eta} left  "
            f"file {p.file_index}/{p.file_count}"
        )
        print(line, end="", file=sys.stderr, flush=True)


def pull(args) -> int:
    """Run ``glmdesk pull``. Returns 0 when pulled, 2 on an error (the sentence printed),
    130 when Ctrl+C paused it (the bytes kept for the next run)."""
    from pathlib import Path

    from glmdesk.engine.catalog.hub_files import PullError, save_token, saved_token
    from glmdesk.engine.catalog.pull import Puller
    from glmdesk.engine.catalog.pulled import RECORD
    from glmdesk.engine.forecast import gib

    if args.token:
        if not save_token(args.token):
            print("(no keyring here: the token is used for this pull only)", file=sys.stderr)
    repo, quant = _resolve_repo(args.repo, args.quant)
    puller = Puller(Path(args.dir).expanduser() if args.dir else None, token=args.token or saved_token())
    try:
        plan = puller.plan(repo, quant)
        if (plan.target / RECORD).is_file():
            print(f"{plan.repo} {plan.quant} is pulled already: {plan.target}", file=sys.stderr)
        else:
            print(
                f"pulling {plan.repo} {plan.quant}: {len(plan.files)} files, {gib(plan.total_bytes)} into {plan.target}",
                file=sys.stderr,
            )
        folder = puller.pull(plan, _ProgressLine())
    except PullError as exc:
        print(f"\nglmdesk pull: error: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"\n(paused: what was fetched is kept; run the same command to resume: glmdesk pull {args.repo}"
            + (f" --quant {args.quant}" if args.quant else "")
            + ")",
            file=sys.stderr,
        )
        return 130
    if folder is None:
        return 130
    name = plan.repo + (f":{plan.quant}" if any(f.path.endswith(".gguf") for f in plan.files) else "")
    print(f"\npulled {plan.repo} {plan.quant} into {folder}", file=sys.stderr)
    print(f"chat with it: glmdesk chat --model {name}", file=sys.stderr)
    return 0
