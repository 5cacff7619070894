"""The formula drawing process (``glmdesk.ui.chat.math_draw``): started as the window starts
it, and as the packaged app's executable runs it (``packaging/glmdesk_main.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from glmdesk.ui.chat import math_draw

ENTRY_SCRIPT = Path(__file__).parents[3] / "packaging" / "glmdesk_main.py"


def _ask(child: subprocess.Popen, *keys) -> list[math_draw.Mask]:
    masks = []
    for key in keys:
        math_draw.write_frame(child.stdin, key)
        masks.append(math_draw.Mask(*math_draw.read_frame(child.stdout)))
    return masks


def test_the_process_draws_masks_and_names_what_mathtext_cannot_draw() -> None:
    args, env = math_draw.command()
    child = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        small, large, environment = _ask(
            child, ("a^2", 14.0, 1.0), ("a^2", 14.0, 2.0), ("\\begin{cases} x \\end{cases}", 14.0, 1.0)
        )
        assert small.error is None and len(small.data) == small.width * small.height > 0
        assert 1.6 * small.width < large.width <= 2 * small.width + 2  # about twice the device pixels
        assert environment.error == "\\begin" and environment.data == b""
        math_draw.write_frame(child.stdin, None)
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()


def test_the_packaged_app_runs_the_process_given_its_flag(monkeypatch) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    args, _env = math_draw.command()
    assert args == [sys.executable, math_draw.DRAW_FLAG]  # the bundle's executable
    monkeypatch.undo()
    _args, env = math_draw.command()
    child = subprocess.Popen(
        [sys.executable, str(ENTRY_SCRIPT), math_draw.DRAW_FLAG],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        (mask,) = _ask(child, ("\\frac{1}{2}", 12.0, 1.0))
        assert mask.error is None and mask.width > 0
        child.stdin.close()  # the window gone: the end of the pipe ends it
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
