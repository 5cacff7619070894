"""Honest words and a quiet terminal (issue 19, item 7): Ctrl+C, error style, help, library noise."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys

from glmdesk.cli import build_parser
from glmdesk.engine.quiet import quiet_libraries


def glmdesk(*args, timeout=240):
    return subprocess.run(
        [sys.executable, "-m", "glmdesk", *args], capture_output=True, text=True, timeout=timeout
    )


def test_ctrl_c_keeps_the_partial_answer_prints_stopped_and_exits_130(embedded_folder):
    proc = subprocess.Popen(
        [sys.executable, "-m", "glmdesk", "chat", "--temperature", "0", "--max-new-tokens", "400"]
        + ["--prompt", "Write a long story about a lighthouse keeper."],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        first = proc.stdout.read(1)  # blocks until the answer starts streaming
        assert first
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "(stopped)" in err and len((first + rest).split()) >= 1


def test_cli_errors_share_one_style():
    outs = [
        glmdesk("chat", "--prompt", "hi", "--temperature", "9"),  # our own check
        glmdesk("chat", "--prompt", " "),  # empty prompt
        glmdesk("chat", "--kv-cache", "huge"),  # argparse's check
        glmdesk("convert", "/no/such/checkpoint"),
    ]
    for out in outs:
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        last = out.stderr.strip().splitlines()[-1]
        assert last.startswith(("glmdesk chat: error: ", "glmdesk convert: error: ")), out.stderr
    assert "Temperature must be between 0 and 2" in outs[0].stderr


def test_chat_help_gives_each_flags_meaning_and_range():
    chat = build_parser()._subparsers._group_actions[0].choices["chat"]
    for action in chat._actions:
        assert action.help, f"{action.option_strings} has no help"
    helps = {a.option_strings[0]: a.help for a in chat._actions if a.option_strings}
    assert "0 to 2" in helps["--temperature"] and "greedy" in helps["--temperature"]
    assert "0 to 1" in helps["--top-p"] and "1 to 10" in helps["--repetition-penalty"]
    assert "0 or more" in helps["--top-k"] and "1 or more" in helps["--max-new-tokens"]
    assert "16 tokens or more" in helps["--window"] and "2^63-1" in helps["--seed"]
    assert "130" in chat.description


def test_repeated_library_notes_show_once_and_only_while_quiet(capsys):
    logger = logging.getLogger("bitsandbytes.autograd._functions")  # bitsandbytes' own logger
    with quiet_libraries():
        for _ in range(1050):
            logger.warning("MatMul8bitLt: inputs will be cast from %s to float16 during quantization", "fp32")
        logger.warning("another note")
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "MatMul8bitLt" in err[0] and "another note" in err[1]
    assert logging.getLogger("bitsandbytes").propagate and not logging.getLogger("bitsandbytes").handlers


def test_gguf_progress_bars_are_hidden_while_quiet(capfd):
    from transformers import modeling_gguf_pytorch_utils as gguf
    from transformers.utils import logging as tf_logging

    original, bars_before = gguf.tqdm, tf_logging.is_progress_bar_enabled()
    with quiet_libraries():
        list(gguf.tqdm(range(50), desc="Converting and de-quantizing GGUF tensors..."))
        list(tf_logging.tqdm(range(50), desc="Loading weights"))
    err = capfd.readouterr().err
    assert "de-quantizing" not in err and "Loading weights" not in err
    assert gguf.tqdm is original and tf_logging.is_progress_bar_enabled() == bars_before  # restored
