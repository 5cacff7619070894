"""A small HTTP server that answers as the Hugging Face hub does, for tests reached
through ``HF_ENDPOINT``.

It answers the two requests a pull makes, in the hub's shapes (as ``huggingface_hub``
2.x reads them):

- ``GET /api/models/<owner>/<name>[/revision/<rev>]?blobs=true``: JSON with ``id``,
  ``sha`` (the commit) and ``siblings``: ``rfilename``, ``size``, ``blobId`` (git's
  SHA-1 of ``blob <size>\\0`` + content) and, for LFS files, ``lfs`` (``sha256``,
  ``size``, ``pointerSize``);
- ``GET /<owner>/<name>/resolve/<rev>/<path>``: the file, honouring
  ``Range: bytes=N-`` with ``206`` and ``Content-Range``; ``ETag`` and
  ``X-Repo-Commit`` headers.

Errors as the hub gives them: 404 with ``X-Error-Code: RepoNotFound``; a gated
repository answers 401 (no token) or 403 (a token without access) with
``X-Error-Code: GatedRepo``. Faults for tests: :attr:`FakeHub.corrupt` (serve other
bytes than listed), :attr:`FakeHub.cut_after` (close the connection after that many
bytes of a file body, once), :attr:`FakeHub.hold_after` (send that many bytes, then
wait for :attr:`FakeHub.release`) and :meth:`FakeHub.stop`.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class FakeRepo:
    """A repository: ``files`` maps paths to bytes; ``lfs`` paths are LFS files."""

    files: dict[str, bytes]
    lfs: set[str] = field(default_factory=set)
    gated: bool = False
    commit: str = COMMIT


def git_blob_id(data: bytes) -> str:
    """Git's blob id of ``data``."""
    return hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()  # noqa: S324


class FakeHub:
    """The server. Use as a context manager; :attr:`endpoint` is its address.

    Attributes:
        repos: ``owner/name`` -> :class:`FakeRepo`.
        requests: ``(path, range start)`` of every file request, in order.
        token: The token that opens gated repositories.
    """

    def __init__(self, repos: dict[str, FakeRepo], token: str = "hf_good") -> None:
        self.repos = repos
        self.token = token
        self.requests: list[tuple[str, int]] = []
        self.corrupt: set[str] = set()
        self.cut_after: dict[str, int] = {}
        self.hold_after: dict[str, int] = {}
        self.release = threading.Event()
        self.held = threading.Event()
        self.gone = False
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop answering: a held file body ends where it is, the port closes."""
        self.gone = True
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, body: bytes = b"", headers: dict | None = None) -> None:
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _repo(self, name: str) -> FakeRepo | None:
                repo = hub.repos.get(name)
                if repo is None:
                    self._send(404, b'{"error":"Repository not found"}', {"X-Error-Code": "RepoNotFound"})
                    return None
                if repo.gated:
                    auth = self.headers.get("Authorization", "")
                    if auth != f"Bearer {hub.token}":
                        status = 403 if auth else 401
                        message = f'{{"error":"Access to model {name} is restricted."}}'.encode()
                        self._send(status, message, {"X-Error-Code": "GatedRepo", "X-Error-Message": "gated"})
                        return None
                return repo

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                path = self.path.split("?")[0]
                api = re.match(r"^/api/models/([^/]+/[^/]+)(?:/revision/[^/]+)?$", path)
                if api:
                    self._info(api.group(1))
                    return
                resolve = re.match(r"^/([^/]+/[^/]+)/resolve/[^/]+/(.+)$", path)
                if resolve:
                    self._file(resolve.group(1), resolve.group(2))
                    return
                self._send(404, b"{}")

            do_HEAD = do_GET

            def _info(self, name: str) -> None:
                repo = self._repo(name)
                if repo is None:
                    return
                siblings = []
                for rel, data in repo.files.items():
                    entry = {"rfilename": rel, "size": len(data), "blobId": git_blob_id(data)}
                    if rel in repo.lfs:
                        entry["lfs"] = {
                            "sha256": hashlib.sha256(data).hexdigest(),
                            "size": len(data),
                            "pointerSize": 134,
                        }
                    siblings.append(entry)
                body = json.dumps(
                    {"id": name, "modelId": name, "sha": repo.commit, "siblings": siblings}
                ).encode()
                self._send(200, body, {"Content-Type": "application/json"})

            def _file(self, name: str, rel: str) -> None:
                repo = self._repo(name)
                if repo is None:
                    return
                if rel not in repo.files:
                    self._send(404, b"{}", {"X-Error-Code": "EntryNotFound"})
                    return
                data = repo.files[rel]
                if rel in hub.corrupt:
                    data = bytes(reversed(data))
                start = 0
                match = re.match(r"bytes=(\d+)-", self.headers.get("Range", ""))
                if match:
                    start = int(match.group(1))
                hub.requests.append((rel, start))
                headers = {"ETag": f'"{git_blob_id(data)}"', "X-Repo-Commit": repo.commit}
                body = data[start:]
                self.send_response(206 if start else 200)
                for k, v in headers.items():
                    self.send_header(k, v)
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                cut = hub.cut_after.pop(rel, None)
                hold = hub.hold_after.get(rel)
                if cut is not None:
                    self.wfile.write(body[:cut])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if hold is not None and hold < len(body):
                    self.wfile.write(body[:hold])
                    self.wfile.flush()
                    hub.held.set()
                    hub.release.wait(30)
                    if hub.gone:
                        self.close_connection = True
                        return
                    try:
                        self.wfile.write(body[hold:])
                    except OSError:
                        pass
                    return
                self.wfile.write(body)

        return Handler
