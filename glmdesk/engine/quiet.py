"""Keep libraries' repeated notes and progress bars off the terminal while glmdesk works.

Measured (issue 19): ``glmdesk chat --quantization 8bit`` on the CPU printed
bitsandbytes' ``MatMul8bitLt: inputs will be cast from torch.float32 to float16``
1,050 times for a 5-token answer (``logging.warning`` on every 8-bit matmul), and
converting a GGUF file drew transformers' own progress bars under glmdesk's
"converting" stage. :func:`quiet_libraries` shows each distinct library log note
once and hides the bars, only while it is entered; everything is restored after.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import sys
from collections.abc import Iterator

#: Loggers whose records are shown once per distinct message while quiet.
NOISY_LOGGERS = ("bitsandbytes", "accelerate", "optimum", "hqq")


class OnceFilter(logging.Filter):
    """Passes a record only the first time its logger and message template are seen."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[str, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:  # noqa: A003 (logging's name)
        key = (record.name, str(record.msg))
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


@contextlib.contextmanager
def _once_per_message(stream) -> Iterator[None]:
    once = OnceFilter()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("note (%(name)s): %(message)s"))
    handler.addFilter(once)
    saved = []
    for name in NOISY_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.propagate))
        logger.addHandler(handler)
        logger.propagate = False
    tf_handlers = []
    with contextlib.suppress(ImportError):
        from transformers.utils import logging as tf_logging

        tf_handlers = list(tf_logging._get_library_root_logger().handlers)
        for h in tf_handlers:
            h.addFilter(once)
    try:
        yield
    finally:
        for logger, propagate in saved:
            logger.removeHandler(handler)
            logger.propagate = propagate
        for h in tf_handlers:
            h.removeFilter(once)


@contextlib.contextmanager
def _no_progress_bars() -> Iterator[None]:
    restore = []
    with contextlib.suppress(ImportError):
        from transformers.utils import logging as tf_logging

        if tf_logging.is_progress_bar_enabled():
            tf_logging.disable_progress_bar()
            restore.append(tf_logging.enable_progress_bar)
        # transformers' GGUF reader draws a plain tqdm bar with no switch of its own.
        gguf = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
        bar = getattr(gguf, "tqdm", None)
        if bar is not None:
            # A module's global, set on the module found by name (its type is a plain module).
            gguf.tqdm = functools.partial(bar, disable=True)  # pyright: ignore[reportAttributeAccessIssue]
            restore.append(lambda: setattr(gguf, "tqdm", bar))
    with contextlib.suppress(ImportError):
        from huggingface_hub.utils import (
            are_progress_bars_disabled,
            disable_progress_bars,
            enable_progress_bars,
        )

        if not are_progress_bars_disabled():
            disable_progress_bars()
            restore.append(enable_progress_bars)
    try:
        yield
    finally:
        for undo in reversed(restore):
            undo()


@contextlib.contextmanager
def quiet_libraries(stream=None) -> Iterator[None]:
    """While entered: each distinct library log note once, no library progress bars.

    For one thread's work at a time (the terminal front end): logging handlers and
    progress-bar switches are process-wide.

    Args:
        stream: Where the notes go (default: ``sys.stderr`` at entry).
    """
    with _once_per_message(stream or sys.stderr), _no_progress_bars():
        yield
