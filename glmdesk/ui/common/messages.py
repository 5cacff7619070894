"""User-facing sentences for engine errors, worded here from ``ErrorInfo.kind`` and params.

The engine's English ``message`` is only a fallback (an unknown kind or missing
parameters). Each sentence goes through :func:`QCoreApplication.translate` with
named ``{placeholders}`` filled afterwards, so a translation can reorder them.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication

from glmdesk.core.errors import ErrorInfo


def _template(kind: str, params: dict) -> str | None:
    # One literal per call so that lupdate finds every source string.
    if kind == "model_not_found":
        return QCoreApplication.translate("ErrorMessages", "The model {path} was not found.")
    if kind == "not_a_model":
        return QCoreApplication.translate(
            "ErrorMessages", "{path} is not a chat model: choose a model folder or a .gguf file."
        )
    if kind == "corrupt_weights":
        return QCoreApplication.translate(
            "ErrorMessages", "The weight file {file} in {path} is damaged or incomplete; download it again."
        )
    if kind == "offline":
        return QCoreApplication.translate(
            "ErrorMessages",
            "The model {model} could not be downloaded: there is no connection, or no such model on the hub.",
        )
    if kind == "unsupported_checkpoint":
        return QCoreApplication.translate("ErrorMessages", "{path} cannot be used: {reason}")
    if kind == "remote_code_required":
        return QCoreApplication.translate(
            "ErrorMessages",
            "{path} needs its own Python code to run; allow it for this folder in Open model "
            "only if you trust where it came from.",
        )
    if kind == "invalid_setting" and params.get("reason") == "server_decides":
        return QCoreApplication.translate(
            "ErrorMessages",
            "The server keeps its own KV cache: its strategy is chosen when the server is started.",
        )
    if (
        kind in ("quantization_unavailable", "precision_unavailable")
        and params.get("reason") == "server_decides"
    ):
        return QCoreApplication.translate(
            "ErrorMessages",
            "The server loads its model with its own precision and quantization, chosen when the server is started.",
        )
    if kind == "quantization_unavailable" and params.get("reason") == "torchao_missing":
        return QCoreApplication.translate(
            "ErrorMessages",
            "{quantization} on a GPU needs torchao (pip install 'glmdesk[cuda-quant]'); choose the CPU "
            "device, or 8-bit or 4-bit NF4.",
        )
    if kind == "quantization_unavailable":
        return QCoreApplication.translate(
            "ErrorMessages", "{quantization} quantization is unavailable here: {reason}"
        )
    if kind == "precision_unavailable":
        return QCoreApplication.translate("ErrorMessages", "{precision} is unavailable here: {reason}")
    return _answer_template(kind, params)


def _answer_template(kind: str, params: dict) -> str | None:
    """Sentences for memory, prompt, setting and tool errors (then :func:`_file_template`)."""
    if kind == "out_of_memory":
        if params.get("stage") == "load":
            sentence = QCoreApplication.translate(
                "ErrorMessages",
                "There is not enough memory on {device} to load this model; try 4-bit quantization "
                "or a smaller model.",
            )
        else:
            sentence = QCoreApplication.translate(
                "ErrorMessages",
                "{device} ran out of memory while answering. The answer so far is kept. Try a new chat "
                "(shorter context), the sliding-window KV cache, or 4-bit quantization.",
            )
        if params.get("freed_mib"):  # idle KV buffers were given back first
            sentence += " " + QCoreApplication.translate(
                "ErrorMessages", "glmdesk gave back {freed_mib} MiB of idle KV buffers first."
            )
        return sentence
    if kind == "prompt_too_long":
        return QCoreApplication.translate(
            "ErrorMessages",
            "Your message is {tokens} tokens long, but only {limit} tokens fit in this model's "
            "context window. Shorten it or send it in parts.",
        )
    if kind == "system_prompt_too_long":
        return QCoreApplication.translate(
            "ErrorMessages",
            "The system prompt is {tokens} tokens long, but only {limit} tokens fit in this model's "
            "context window with room for a reply. Shorten the system prompt in the sidebar.",
        )
    if kind == "invalid_setting":
        return QCoreApplication.translate("ErrorMessages", "The setting {name} cannot be {value}: {reason}")
    if kind == "load_cancelled":
        return QCoreApplication.translate("ErrorMessages", "Loading was cancelled.")
    if kind == "generation_failed":
        return QCoreApplication.translate("ErrorMessages", "The answer failed: {detail}")
    if kind == "load_failed":
        return QCoreApplication.translate("ErrorMessages", "The model could not be loaded: {detail}")
    if kind == "option_unavailable":
        return QCoreApplication.translate("ErrorMessages", "{option} cannot be used on this computer.")
    if kind == "tool_call_invalid":
        return QCoreApplication.translate(
            "ErrorMessages",
            "The model wrote a tool call that was not run, so it is shown as text ({reason}).",
        )
    if kind == "tool_rounds_exceeded":
        return QCoreApplication.translate(
            "ErrorMessages",
            "The answer was ended: the model asked for more tool calls than this message allows.",
        )
    if kind == "interpreter_failed":
        return QCoreApplication.translate("ErrorMessages", "The Python interpreter could not run: {detail}")
    return _file_template(kind, params)


def _file_template(kind: str, params: dict) -> str | None:
    """Sentences for GGUF and Git LFS files, then the history, remote, build and vision kinds."""
    if kind == "not_gguf":
        return QCoreApplication.translate(
            "ErrorMessages",
            '{file} in {path} is not a GGUF file: a GGUF file starts with the bytes "GGUF", this one '
            'starts with "{head}". Choose the .gguf file itself.',
        )
    if kind == "gguf_unsupported" and params.get("tensor_types") and params.get("llamacpp"):
        return QCoreApplication.translate(
            "ErrorMessages",
            "{file} holds tensors of type {tensor_types}, which the {engine} engine cannot dequantize; "
            "open it with the llama.cpp engine, or open the model's original folder.",
        )
    if kind == "gguf_unsupported" and params.get("tensor_types"):
        return QCoreApplication.translate(
            "ErrorMessages",
            "{file} holds tensors of type {tensor_types}, which neither the {engine} engine nor the "
            "llama.cpp engine can run; open the model's original folder, or a GGUF file quantized to a "
            "common type such as Q8_0 or Q4_K_M.",
        )
    if kind == "gguf_unsupported":
        return QCoreApplication.translate(
            "ErrorMessages",
            "{file} holds a model of architecture {architecture}, which the {engine} engine cannot run "
            "from a GGUF file; open it with the llama.cpp engine, or open the model's original folder.",
        )
    if kind == "lfs_pointer":
        return QCoreApplication.translate(
            "ErrorMessages",
            "{file} in {path} is a Git LFS pointer, not the file itself (the folder was cloned without "
            "git-lfs): run git lfs pull in that folder, or download the file again.",
        )
    return (
        _history_template(kind, params)
        or _remote_template(kind, params)
        or _build_template(kind, params)
        or _vision_template(kind, params)
    )


def _build_template(kind: str, params: dict) -> str | None:
    """Sentences for building llama.cpp (:mod:`glmdesk.engine.llamacpp_build`)."""
    if kind == "llamacpp_build_failed":
        return QCoreApplication.translate("ErrorMessages", "llama.cpp could not be built: {detail}")
    if kind == "build_cancelled":
        return QCoreApplication.translate("ErrorMessages", "Building llama.cpp was cancelled.")
    if kind == "llamacpp_untrusted":
        return _untrusted_template(params)
    if kind != "llamacpp_unbuildable":
        return None
    reason = params.get("reason")
    if reason == "no_compiler":
        return QCoreApplication.translate(
            "ErrorMessages",
            "llama.cpp cannot be built here: no C/C++ compiler was found (install gcc and g++, or clang).",
        )
    if reason == "packaged":
        return QCoreApplication.translate(
            "ErrorMessages", "The packaged app cannot build llama.cpp (it has no Python build tools)."
        )
    if reason == "turned_off":
        return QCoreApplication.translate(
            "ErrorMessages", "Building llama.cpp is turned off (GLMDESK_LLAMACPP_BUILD=0)."
        )
    return QCoreApplication.translate("ErrorMessages", "llama.cpp cannot be built on this computer.")


def _untrusted_template(params: dict) -> str:
    """A llama.cpp build that failed its smoke test (:mod:`glmdesk.engine.llamacpp_smoke`)."""
    outcome = params.get("outcome")
    if outcome == "crashed":
        return QCoreApplication.translate(
            "ErrorMessages",
            "llama.cpp ({build}) crashed ({signal}) on its test answer, so it is not used and "
            "transformers answers. Keep transformers, or rebuild llama.cpp: glmdesk build-llamacpp",
        )
    if outcome == "wrong_answer":
        return QCoreApplication.translate(
            "ErrorMessages",
            "llama.cpp ({build}) answered its test prompt wrongly, so it is not used and transformers "
            "answers. Keep transformers, or rebuild llama.cpp: glmdesk build-llamacpp",
        )
    return QCoreApplication.translate(
        "ErrorMessages",
        "llama.cpp ({build}) could not answer its test prompt, so it is not used and transformers "
        "answers. Keep transformers, or rebuild llama.cpp: glmdesk build-llamacpp",
    )


def _vision_template(kind: str, params: dict) -> str | None:
    if kind == "invalid_image":
        return QCoreApplication.translate("ErrorMessages", "The image {name} cannot be used: {reason}.")
    if kind == "vision_unavailable" and params.get("engine") == "llamacpp":
        return QCoreApplication.translate(
            "ErrorMessages",
            "{model} is open with the llama.cpp engine, which cannot read images here: open a GLM "
            "vision model (GLM-4.1V, GLM-4.6V) with the transformers engine, or on a server.",
        )
    if kind == "vision_unavailable":
        return QCoreApplication.translate(
            "ErrorMessages",
            "{model} does not read images: open a GLM vision model (GLM-4.1V, GLM-4.6V) to ask about a picture.",
        )
    return None


def _history_template(kind: str, params: dict) -> str | None:
    if kind == "history_disk_full":
        return QCoreApplication.translate(
            "ErrorMessages",
            "The disk holding the chat history is full ({path}). The conversation stays in the window "
            "and is saved as soon as there is space again.",
        )
    if kind == "history_damaged":
        return QCoreApplication.translate(
            "ErrorMessages",
            "The chat history file {path} is damaged, so nothing more can be saved in it. Restart "
            "glmdesk: it keeps the damaged file under a new name and starts a new history.",
        )
    if kind == "history_unavailable":
        return QCoreApplication.translate(
            "ErrorMessages", "The chat history ({path}) could not be saved or read: {detail}"
        )
    if kind == "import_tools_invalid" and params.get("kept"):
        return QCoreApplication.translate(
            "ErrorMessages",
            "“{title}” was imported. Its custom functions have problems, so none is offered until "
            "you fix them in the Tools section: {problems}",
        )
    if kind == "import_tools_invalid":
        return QCoreApplication.translate(
            "ErrorMessages",
            "“{title}” was imported without its Tools section, which could not be used: {problems}",
        )
    return None


def _remote_template(kind: str, params: dict) -> str | None:
    """Sentences for a remote OpenAI-compatible server (vLLM, SGLang, glmdesk serve)."""
    if kind == "server_unreachable":
        reason = params.get("reason")
        if reason == "refused":
            return QCoreApplication.translate(
                "ErrorMessages",
                "Nothing answers at {url}: the connection was refused. Is the server running, on that port?",
            )
        if reason == "dns":
            return QCoreApplication.translate(
                "ErrorMessages", "The server name in {url} could not be found (DNS). Check the address."
            )
        if reason == "tls":
            return QCoreApplication.translate(
                "ErrorMessages",
                "A secure (TLS) connection to {url} failed: {detail}. Check https:// versus http:// and the certificate.",
            )
        if reason == "timeout":
            return QCoreApplication.translate("ErrorMessages", "The server at {url} did not answer in time.")
        return QCoreApplication.translate(
            "ErrorMessages", "The server at {url} could not be reached: {detail}."
        )
    if kind == "server_auth_failed":
        return QCoreApplication.translate(
            "ErrorMessages", "The server at {url} refused the API key. Check the key in Open model."
        )
    if kind == "remote_model_not_found":
        return QCoreApplication.translate(
            "ErrorMessages", "The server at {url} has no model {model}; choose one it lists."
        )
    if kind == "server_busy":
        return QCoreApplication.translate(
            "ErrorMessages", "The server at {url} is busy (HTTP {status}); try again in a moment."
        )
    if kind == "server_error":
        return QCoreApplication.translate(
            "ErrorMessages", "The server at {url} reported an error: {detail}. The answer so far is kept."
        )
    if kind == "connection_lost":
        return QCoreApplication.translate(
            "ErrorMessages",
            "The connection to {url} was lost in the middle of the answer. The answer so far is kept.",
        )
    if kind == "server_stalled":
        return QCoreApplication.translate(
            "ErrorMessages",
            "The server at {url} sent nothing for {seconds} s, so the answer was ended. The answer so far is kept.",
        )
    return None


def history_set_aside_sentence(damaged: str, moved_to: str) -> str:
    """The notice after a damaged history file was set aside at start.

    Args:
        damaged: The history file's usual path (a new, empty history is there now).
        moved_to: Where the damaged file is now.
    """
    return QCoreApplication.translate(
        "ErrorMessages",
        "The chat history file was damaged. It was kept as {moved_to} (nothing in it was deleted) "
        "and a new history was started in {path}.",
    ).format(moved_to=moved_to, path=damaged)


def error_sentence(info: ErrorInfo) -> str:
    """Return one plain sentence for ``info`` in the user's language.

    Args:
        info: The engine's error (kind from ``glmdesk.core.errors.ERROR_KINDS``).

    Returns:
        The translated sentence, or the engine's English ``message`` when the
        kind is unknown or a parameter is missing.
    """
    template = _template(info.kind, info.params)
    if template is None:
        return info.message
    try:
        return template.format(**info.params)
    except (KeyError, IndexError, ValueError):
        return info.message or template


def note_sentence(note: ErrorInfo) -> str:
    """One sentence for a load note (``ModelInfo.notes``) in the user's language.

    Args:
        note: ``kind`` is ``fp16_on_cpu``, ``bnb_on_cpu`` (params: ``quantization``) or
            ``compile_unavailable`` (params: ``reason``, the library's words).

    Returns:
        The translated sentence, or the engine's English ``message`` for other kinds.
    """
    if note.kind == "fp16_on_cpu":
        return QCoreApplication.translate(
            "LoadNotes", "fp16 is not supported for CPU inference; using fp32 instead."
        )
    if note.kind == "chat_format":
        return _chat_format_sentence(note)
    if note.kind == "bnb_on_cpu":
        return QCoreApplication.translate(
            "LoadNotes", "{quantization} runs on bitsandbytes' CPU backend here, which is slow."
        ).format(quantization=note.params.get("quantization", ""))
    if note.kind == "llamacpp_ignores":
        return QCoreApplication.translate(
            "LoadNotes",
            "llama.cpp runs the GGUF file's own weights; {options} applies to the transformers engine.",
        ).format(options=note.params.get("options", ""))
    if note.kind == "engine_fallback" and note.params.get("reason") == "crashed":
        return QCoreApplication.translate(
            "LoadNotes",
            "llama.cpp crashed here while it answered, so transformers runs this {file_type} file with "
            "{quantization} weights; choose llama.cpp in Open model to use it again.",
        ).format(file_type=note.params.get("file_type", ""), quantization=note.params.get("quantization", ""))
    if note.kind == "llamacpp_untrusted":
        return error_sentence(note)
    if note.kind == "engine_fallback":
        return QCoreApplication.translate(
            "LoadNotes",
            "llama.cpp is not installed yet, so transformers runs this {file_type} file with {quantization} "
            "weights (the file's own groups and grid).",
        ).format(file_type=note.params.get("file_type", ""), quantization=note.params.get("quantization", ""))
    if note.kind == "experts_in_ram":
        return QCoreApplication.translate(
            "LoadNotes", "{tensors} expert tensors ({mib} MiB) are kept in system RAM."
        ).format(tensors=note.params.get("tensors", 0), mib=note.params.get("mib", 0))
    if note.kind == "experts_in_ram_dense":
        return QCoreApplication.translate(
            "LoadNotes",
            "This model has no experts (it is not a mixture of experts); experts in RAM does nothing.",
        )
    if note.kind == "experts_in_ram_cpu":
        return QCoreApplication.translate(
            "LoadNotes", "The model runs on the CPU, so its experts are in system RAM already."
        )
    if note.kind == "experts_offloaded":
        return QCoreApplication.translate(
            "LoadNotes",
            "The model does not fit the GPU's free memory: {mib} MiB of its experts are kept in system "
            "RAM (accelerate's device map), which is slower.",
        ).format(mib=note.params.get("mib", 0))
    if note.kind == "compile_unavailable":
        return QCoreApplication.translate(
            "LoadNotes", "The decode step was not compiled ({reason}); tokens are decoded without it."
        ).format(reason=note.params.get("reason", ""))
    return note.message


def option_reason(info: ErrorInfo) -> str:
    """Why a load option is unavailable, translated.

    Args:
        info: An ``option_unavailable`` error from a backend's availability; its
            ``params["reason"]`` is one of :func:`glmdesk.engine.backends.option_reasons`.
    """
    reason = info.params.get("reason")
    if reason == "no_cuda":
        return QCoreApplication.translate("LoadNotes", "No CUDA GPU was found; glmdesk runs on the CPU.")
    if reason == "fp16_needs_gpu":
        return QCoreApplication.translate("LoadNotes", "fp16 needs a GPU; on the CPU glmdesk uses fp32.")
    if reason == "no_bf16":
        return QCoreApplication.translate("LoadNotes", "This GPU has no bf16 support; use fp16.")
    if reason == "llamacpp_missing":
        return QCoreApplication.translate(
            "LoadNotes", "llama-cpp-python is not installed (pip install 'glmdesk[llamacpp]')."
        )
    if reason == "no_gpu_offload":
        return QCoreApplication.translate(
            "LoadNotes", "This llama-cpp-python build has no GPU offload (a CPU build)."
        )
    if reason == "llamacpp_broken":
        return QCoreApplication.translate("LoadNotes", "llama-cpp-python cannot be loaded here.")
    if reason == "llamacpp_untrusted":
        return QCoreApplication.translate(
            "LoadNotes",
            "The installed llama.cpp build crashed or answered wrongly in its test "
            "(rebuild it: glmdesk build-llamacpp).",
        )
    if reason == "frozen_app":
        return QCoreApplication.translate(
            "LoadNotes", "The packaged app cannot compile; run glmdesk from Python to use it."
        )
    if reason == "no_compiler":
        return QCoreApplication.translate("LoadNotes", "No C++ compiler was found (g++, clang++ or cl).")
    if reason == "no_cpu_kernel":
        return QCoreApplication.translate("LoadNotes", "This torch build has no CPU kernel for it.")
    if reason == "bnb_missing":
        return QCoreApplication.translate(
            "LoadNotes", "bitsandbytes cannot be used here (it is not installed)."
        )
    if reason == "torchao_missing":
        return QCoreApplication.translate(
            "LoadNotes", "torchao is not installed (pip install 'glmdesk[cuda-quant]')."
        )
    return error_sentence(info)


def _chat_format_sentence(note: ErrorInfo) -> str:
    """The ``chat_format`` load note: the prompt format is not the checkpoint's own
    family's (params ``format``, ``checkpoint``, ``chosen``)."""
    formats = {
        "glm45": QCoreApplication.translate("LoadNotes", "GLM-4.5/4.6/4.7 (reasoning, XML tool calls)"),
        "think": QCoreApplication.translate("LoadNotes", "GLM-Z1 (reasoning, no tool calls)"),
        "plain": QCoreApplication.translate("LoadNotes", "the chat template only"),
    }
    title = formats.get(note.params.get("format", ""), note.params.get("format", ""))
    checkpoint = note.params.get("checkpoint", "")
    if note.params.get("chosen"):
        return QCoreApplication.translate(
            "LoadNotes", "The prompt format is {format}, as chosen, though the checkpoint is {checkpoint}."
        ).format(format=title, checkpoint=checkpoint)
    return QCoreApplication.translate(
        "LoadNotes",
        "The chat template is {format}, so this {checkpoint} checkpoint is prompted that way "
        "(another format can be chosen in Open model).",
    ).format(format=title, checkpoint=checkpoint)
