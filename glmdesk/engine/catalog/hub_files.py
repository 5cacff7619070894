"""What a hub repository holds and which of its files a pull takes, through
``huggingface_hub`` (its ``HfApi.model_info(files_metadata=True)``: one request gives
the commit, every file's size, the SHA-256 of LFS files and the git blob id of the
others). The hub is the one ``HF_ENDPOINT`` names when it is set, read at each call.

Errors become :class:`PullError` with a sentence that says what to do.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from glmdesk.core.secrets import get_secret, set_secret

#: Seconds a file-list request may take before the hub counts as not reachable.
LIST_TIMEOUT_S = 10.0
#: The keyring service and user under which the hub token is kept.
KEYRING_SERVICE = "glmdesk"
KEYRING_USER = "huggingface token"

#: Files a safetensors pull leaves out: repository plumbing, pictures, other formats.
_SKIPPED = re.compile(
    r"(^|/)\.gitattributes$|\.(md|png|jpe?g|gif|webp|onnx|msgpack|h5|ot|pdf)$|^original/|^onnx/|^metal/",
    re.IGNORECASE,
)
_OTHER_WEIGHTS = re.compile(r"\.(bin|pth|pt)$", re.IGNORECASE)
_QUANT_IN_NAME = re.compile(
    r"(?:^|[-_./])((?:UD-)?(?:I?Q\d(?:_[A-Z0-9]+)*|BF16|F16|F32|MXFP4(?:_MOE)?))(?=[-_./]|$)", re.IGNORECASE
)


class PullError(Exception):
    """A pull that cannot go on, with the sentence to show.

    Attributes:
        kind: ``offline``, ``gated``, ``not_found``, ``no_quant``, ``disk_full``,
            ``hash_mismatch``, ``busy`` or ``connection_lost``.
        message: The English sentence (the terminal's; the window words the kind).
        params: The figures in the sentence (``repo``, ``need``, ``free``, ``file``...).
    """

    def __init__(self, kind: str, message: str, **params) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.params = params


@dataclass(frozen=True)
class RemoteFile:
    """One file of a repository, as the hub lists it.

    Attributes:
        path: Its path in the repository (``Q4_K_M/x-00001-of-00002.gguf``).
        size: Its size, in bytes.
        sha256: The SHA-256 of an LFS file (hex), else ``None``.
        blob_id: The git blob id (SHA-1 of ``blob <size>\\0`` + content, hex).
    """

    path: str
    size: int
    sha256: str | None
    blob_id: str | None


def hub_endpoint() -> str:
    """The hub's address: ``HF_ENDPOINT`` when set (read now), else huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def saved_token() -> str | None:
    """The hub token kept in the keyring, else ``HF_TOKEN`` / the hub's own login
    (``huggingface_hub.get_token``), else ``None``. Never raises."""
    token = get_secret(KEYRING_SERVICE, KEYRING_USER)
    if token:
        return token
    try:
        from huggingface_hub import get_token

        return get_token()
    except Exception:
        return None


def save_token(token: str | None) -> bool:
    """Keep the hub token in the system keyring (``None`` forgets it); returns whether
    the keyring took it. Never raises."""
    return set_secret(KEYRING_SERVICE, KEYRING_USER, token)


def hub_error(exc: BaseException, repo: str) -> PullError:
    """The :class:`PullError` of a ``huggingface_hub`` or connection error."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if type(exc).__name__ == "HFValidationError":  # huggingface_hub's check of the id itself
        return PullError(
            "not_found",
            f"{repo!r} is not a repository id: write it as owner/name (for example zai-org/GLM-4.7-Flash).",
            repo=repo,
        )
    if isinstance(exc, OfflineModeIsEnabled):
        return PullError(
            "offline",
            f"Downloading is switched off (HF_HUB_OFFLINE is set), so {repo} cannot be pulled.",
            repo=repo,
        )
    page = f"{hub_endpoint()}/{repo}"
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, GatedRepoError) or status in (401, 403):
        return PullError(
            "gated",
            f"{repo} needs permission (the hub answered {status or 'gated'}): open {page}, sign in and accept "
            "its terms, then give glmdesk a token with read access (glmdesk pull --token, or Token in Get a model).",
            repo=repo,
            status=status or 0,
            page=page,
        )
    if isinstance(exc, (RepositoryNotFoundError, RevisionNotFoundError)) or status == 404:
        return PullError("not_found", f"The hub has no repository {repo} (404).", repo=repo)
    if isinstance(exc, HfHubHTTPError):
        return PullError(
            "offline",
            f"The hub answered {status} for {repo}: {exc}".split("\n")[0],
            repo=repo,
            detail=str(exc),
        )
    return PullError(
        "offline",
        f"The hub ({hub_endpoint()}) is not reachable: {type(exc).__name__}: {exc}".split("\n")[0],
        repo=repo,
        detail=str(exc),
    )


def list_files(
    repo: str, token: str | None = None, revision: str | None = None
) -> tuple[str, list[RemoteFile]]:
    """``(commit, files)`` of ``repo`` at ``revision`` (default branch), from the hub.

    Raises:
        PullError: ``gated`` (401/403), ``not_found`` (404) or ``offline``.
    """
    from huggingface_hub import HfApi

    try:
        info = HfApi(endpoint=hub_endpoint(), token=token or False).model_info(
            repo, revision=revision, files_metadata=True, timeout=LIST_TIMEOUT_S
        )
    except Exception as exc:  # httpx's errors, the hub's HTTP errors, OSError
        raise hub_error(exc, repo) from exc
    files = [
        RemoteFile(
            s.rfilename,
            int(s.size or (s.lfs.size if s.lfs else 0)),
            s.lfs.sha256 if s.lfs else None,
            s.blob_id,
        )
        for s in info.siblings or []
    ]
    return info.sha or revision or "main", files


def quant_of(path: str) -> str | None:
    """The quantization a GGUF file's name carries (``Q4_K_M``, ``UD-Q2_K_XL``, ``BF16``),
    upper-cased, or ``None``."""
    found = _QUANT_IN_NAME.findall(path)
    return found[-1].upper() if found else None


def select_files(repo: str, files: list[RemoteFile], quant: str | None) -> tuple[str, list[RemoteFile]]:
    """The files a pull of ``repo`` takes, and the quantization they are.

    A repository with GGUF files: the ``.gguf`` files whose name carries ``quant``
    (every part of a split file); without ``quant`` the one quantization there is. A
    safetensors repository: everything a load reads (weights, config, tokenizer, code),
    leaving out pictures, documents, other weight formats beside safetensors and the
    ``original/`` folder.

    Raises:
        PullError: ``no_quant`` naming the quantizations the repository has.
    """
    ggufs = [f for f in files if f.path.lower().endswith(".gguf") and "mmproj" not in f.path.lower()]
    if ggufs:
        quants = sorted({q for q in (quant_of(f.path) for f in ggufs) if q})
        wanted = quant.upper() if quant else (quants[0] if len(quants) == 1 else None)
        chosen = [f for f in ggufs if quant_of(f.path) == wanted] if wanted else []
        if not chosen or wanted is None:  # nothing is chosen without a wanted quantization
            have = ", ".join(quants) or "none"
            ask = f"{quant} is not among them" if quant else "choose one with --quant"
            raise PullError(
                "no_quant",
                f"{repo} has the quantizations {have}; {ask}.",
                repo=repo,
                quants=have,
                quant=quant or "",
            )
        return wanted, chosen
    has_safetensors = any(f.path.endswith(".safetensors") for f in files)
    chosen = [
        f
        for f in files
        if not _SKIPPED.search(f.path) and not (has_safetensors and _OTHER_WEIGHTS.search(f.path))
    ]
    if not chosen:
        raise PullError(
            "no_quant", f"{repo} holds no model files.", repo=repo, quants="none", quant=quant or ""
        )
    return (quant or "bf16"), chosen


#: Seconds the "is the hub reachable" probe waits for an answer.
PROBE_TIMEOUT_S = 5.0


def hub_reachable(timeout: float = PROBE_TIMEOUT_S) -> tuple[bool, str]:
    """``(reachable, reason)``: whether the hub answers at all within ``timeout`` seconds
    (any HTTP answer counts), through ``huggingface_hub``'s session (which refuses at
    once in offline mode). Never raises."""
    from huggingface_hub.utils import get_session

    try:
        get_session().get(f"{hub_endpoint()}/api/models", params={"limit": 1}, timeout=timeout)
    except Exception as exc:  # offline mode, refused, DNS, timeout
        return False, f"{type(exc).__name__}: {exc}".split("\n")[0]
    return True, ""
