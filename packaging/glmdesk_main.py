"""Entry script of the frozen app: PyInstaller starts here, then ``glmdesk.cli.main``
(or, given ``--glmdesk-kernel``, the code interpreter's kernel: ``glmdesk.kernel_entry``;
given ``--glmdesk-mathtext``, the formula drawing process: ``glmdesk.ui.chat.math_draw``;
given ``--glmdesk-llamacpp-smoke``, llama.cpp's smoke test: ``glmdesk.engine.llamacpp_smoke``)."""

from __future__ import annotations

import multiprocessing
import os
import sys


def _main() -> int:
    from glmdesk.kernel_entry import is_kernel_launch, run_kernel

    if is_kernel_launch(sys.argv):  # the code interpreter's kernel (glmdesk.kernel_entry)
        return run_kernel(sys.argv[2:])
    if sys.argv[1:2] == ["--glmdesk-mathtext"]:  # the formula drawing process (glmdesk.ui.chat.math_draw)
        from glmdesk.ui.chat.math_draw import serve

        return serve()
    if sys.argv[1:2] == ["--glmdesk-llamacpp-smoke"]:  # a child that tests llama.cpp (engine.llamacpp_smoke)
        from glmdesk.engine.llamacpp_smoke import main as smoke

        return smoke(["--child", *sys.argv[2:]])
    multiprocessing.freeze_support()  # a child process of the frozen app must not start the app
    # A windowed Windows executable has no console: sys.stdout and sys.stderr are None,
    # and libraries that write progress (tqdm, logging) would fail.
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - lives as long as the app
    from glmdesk.cli import main

    return main()


if __name__ == "__main__":
    raise SystemExit(_main())
