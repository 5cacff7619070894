"""``glmdesk build-llamacpp``: build llama.cpp's engine once, a line per stage.

The window does the same by itself when it answers a GGUF file on transformers for lack
of llama-cpp-python (:mod:`glmdesk.ui.models.engine_upgrade`); this verb is for the terminal
(``glmdesk chat`` says it exists). See :mod:`glmdesk.engine.llamacpp_build`.
"""

from __future__ import annotations

import sys
import threading


def add_build_parser(sub) -> None:
    """The ``build-llamacpp`` verb."""
    sub.add_parser(
        "build-llamacpp",
        help="build and install llama.cpp's engine (llama-cpp-python) once, for the fastest GGUF answers",
        description="Compile llama-cpp-python (several minutes the first time), keep its wheel in "
        "glmdesk's cache so another checkout installs it in seconds, and install it here.",
    )


def build_llamacpp(_args) -> int:
    """Run the build with a line per stage (compile progress every 10 %): the candidates
    in order until one answers its smoke test (a build already installed is tested first).

    Returns:
        0 when installed (or already there), 2 when it cannot be built here or failed,
        130 on Ctrl+C.
    """
    from glmdesk.core.errors import GlmdeskError
    from glmdesk.engine.backends import llama_cpp_available
    from glmdesk.engine.backends.llamacpp import llamacpp_vet
    from glmdesk.engine.llamacpp_build import ensure_llamacpp

    if llama_cpp_available():
        try:
            problem = llamacpp_vet()  # its smoke test, in a child, the first time
        except GlmdeskError as exc:
            problem = exc.info
        if problem is None:
            print("llama.cpp (llama-cpp-python) is installed already and answers.", file=sys.stderr)
            return 0
        print(f"{problem.message.split(', so')[0]}: building one that answers.", file=sys.stderr)
    shown: set[tuple[str, int]] = set()

    def report(p) -> None:
        step = (p.stage, 10 * p.done // p.units if p.units else -1)
        if step in shown:
            return
        shown.add(step)
        if p.stage == "waiting":
            print("waiting for another glmdesk that builds llama.cpp...", file=sys.stderr)
            return
        if p.stage == "testing":
            print(f"stage {p.index}/{p.total}: testing the build with a prompt batch", file=sys.stderr)
            return
        percent = f" {100 * p.done // p.units}%" if p.units else ""
        print(f"stage {p.index}/{p.total}: {p.stage}{percent}", file=sys.stderr, flush=True)

    cancel = threading.Event()
    verdicts: list = []
    try:
        wheel = ensure_llamacpp(report, cancel, verdicts=verdicts)
    except GlmdeskError as exc:
        print(f"glmdesk build-llamacpp: error: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        cancel.set()
        print("\n(stopped)", file=sys.stderr)
        return 130
    for verdict in verdicts[:-1]:
        print(f"not used: {verdict.error().message.split(', so')[0]}", file=sys.stderr)
    kept = f"; wheel kept in {wheel.parent}" if wheel is not None else ""  # None only when not building
    print(f"llama.cpp is installed ({verdicts[-1].build}{kept}).", file=sys.stderr)
    return 0
