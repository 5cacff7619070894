"""``glmdesk`` run in the test's own process, as a shell would run it.

Starting ``python -m glmdesk`` costs each test a fresh interpreter and the imports of
torch, transformers and Qt (5-15 s on two busy cores); :func:`run_cli` calls the same
entry point, :func:`glmdesk.cli.main`, with the arguments, standard input and output
of a subprocess. Tests of what only a real process shows (Ctrl+C, a killed server,
what C libraries write to file descriptor 2, warnings printed by loggers set up at
import) keep starting one.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from unittest import mock


def run_cli(*args: str, input_text: str = "") -> subprocess.CompletedProcess:
    """Run ``glmdesk ARGS...`` in this process with ``input_text`` as its standard input.

    Returns:
        A :class:`subprocess.CompletedProcess` with the exit status (``main``'s return
        value, or the code of a ``SystemExit``: 2 for argparse's usage errors) and the
        text written to ``sys.stdout`` and ``sys.stderr``. Any other exception is not
        caught: a traceback fails the test.
    """
    from glmdesk import cli

    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.object(sys, "stdin", io.StringIO(input_text)),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code = cli.main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return subprocess.CompletedProcess(["glmdesk", *args], code, out.getvalue(), err.getvalue())
