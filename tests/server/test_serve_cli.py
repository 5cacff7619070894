"""``glmdesk serve`` as a process (``glmdesk chat --remote`` and the refusals before
loading run in this one, ``tests/helpers/cli.py``): the URL printed when ready, answers
through it, Ctrl+C stops cleanly, and a server killed mid-answer leaves
the remote backend a sentence and the partial answer."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.remote.backend import RemoteBackend
from tests.helpers.cli import run_cli

READY = re.compile(r"Serving (\S+) at (http://127\.0\.0\.1:\d+/v1)")


def start_serve(*args: str) -> tuple[subprocess.Popen, str]:
    """Start ``glmdesk serve --port 0``; return the process and its URL once ready."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "glmdesk", "serve", "--port", "0", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines = []
    for line in proc.stderr:  # ends when the process exits (pytest's timeout bounds a hang)
        lines.append(line)  # load progress ("\r[loading n/1000]") reads as many lines
        match = READY.search(line)
        if match:
            return proc, match.group(2)
    proc.kill()
    raise AssertionError("glmdesk serve did not start:\n" + "".join(lines))


@pytest.fixture(scope="module")
def served(embedded_folder_ready):
    proc, url = start_serve()
    yield proc, url
    if proc.poll() is None:
        proc.kill()
        proc.wait(30)


@pytest.fixture(scope="module")
def embedded_folder_ready(backend):
    """The converted embedded model exists (the session's backend made it)."""
    return backend.info.location


def test_all_interfaces_without_key_is_refused_before_loading():
    out = run_cli("serve", "--host", "0.0.0.0")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "give an API key too (--api-key)" in out.stderr and "loaded" not in out.stderr


def test_a_body_limit_out_of_range_is_refused_before_loading():
    out = run_cli("serve", "--max-body-mib", "0")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--max-body-mib must be a positive number of MiB" in out.stderr and "loaded" not in out.stderr


def test_a_busy_port_is_refused_before_loading():
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        out = run_cli("serve", "--port", str(port), "--model", "/no/such/folder")
    assert out.returncode == 2 and "Traceback" not in out.stderr and "Uvicorn" not in out.stderr
    assert f"Cannot listen on 127.0.0.1:{port}" in out.stderr and "--port 0" in out.stderr


def test_chat_remote_answers_through_serve(served):
    _proc, url = served
    out = run_cli(
        *[
            "chat",
            "--remote",
            url,
            "--prompt",
            "What is the capital of France?",
            # On llama.cpp the embedded model's first greedy token without a system
            # prompt is "L" by a 0.09 logit margin (transformers: "The"); with one it is Paris.
            "--system",
            "You are a helpful assistant.",
        ],
        *["--temperature", "0", "--max-new-tokens", "24"],
    )
    assert out.returncode == 0, out.stderr
    assert "Paris" in out.stdout and "tokens/s" in out.stderr and url in out.stderr


def test_chat_remote_refused_is_a_sentence():
    out = run_cli("chat", "--remote", "http://127.0.0.1:9", "--prompt", "hi")
    assert out.returncode == 2 and "Traceback" not in out.stderr and "connection was refused" in out.stderr


def test_ctrl_c_stops_cleanly(served):
    proc, _url = served
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(60) == 0 and "Stopped." in rest and "Traceback" not in rest


def test_server_killed_mid_answer_keeps_the_partial_answer(embedded_folder_ready):
    proc, url = start_serve()
    try:
        remote = RemoteBackend()
        remote.load(LoadSettings(remote_url=url))
        story = [ChatMessage("user", "Write a long story about a dragon.")]
        chunks = []
        for chunk in remote.stream(story, ParamsBox(SamplingParams(temperature=0, max_new_tokens=400))):
            chunks.append(chunk)
            if len(chunks) == 3:
                os.kill(proc.pid, signal.SIGKILL)
        last = chunks[-1]
        assert last.finish_reason == "error" and last.error.kind == "connection_lost"
        assert "The answer so far is kept" in last.error.message and url in last.error.message
        assert "".join(c.text for c in chunks[:3]).strip()
        remote.close()
    finally:
        proc.kill()
        proc.wait(30)
