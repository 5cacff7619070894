"""OpenAI-shaped errors: ``{"error": {"message", "type", "param", "code"}}`` with the
right HTTP status (the shape OpenAI's API and vLLM return)."""

from __future__ import annotations

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from glmdesk.core.errors import ErrorInfo

#: Error type per HTTP status, as OpenAI names them.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    408: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
}
#: The code of an error raised without one, per HTTP status (``code`` is never null).
DEFAULT_CODES = {
    400: "invalid_request",
    401: "invalid_api_key",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "request_too_large",
    429: "queue_full",
}


class APIError(Exception):
    """An error answered as OpenAI does.

    Args:
        status: HTTP status (400, 401, 404, 429, 500...).
        message: The sentence for the client.
        param: The request field at fault, if one is.
        code: A machine-readable code (``model_not_found``, ``context_length_exceeded``...);
            by default the status's (:data:`DEFAULT_CODES`).
        headers: Extra response headers (``Retry-After``).
    """

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param
        self.code = code or DEFAULT_CODES.get(status, "server_error" if status >= 500 else "invalid_request")
        self.headers = headers or {}

    def body(self) -> dict:
        """The JSON body."""
        return error_body(self.status, self.message, self.param, self.code)

    def response(self) -> JSONResponse:
        """The JSON response."""
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def error_body(status: int, message: str, param: str | None = None, code: str | None = None) -> dict:
    """``{"error": {...}}`` for ``status`` (``code`` defaults to the status's)."""
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    code = code or DEFAULT_CODES.get(status, "server_error" if status >= 500 else "invalid_request")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def from_engine(error: ErrorInfo | None) -> APIError:
    """The API error for an answer that ended with an engine error before any text."""
    if error is None:
        return APIError(500, "The answer failed.", code="generation_failed")
    if error.kind == "prompt_too_long":
        return APIError(400, error.message, "messages", "context_length_exceeded")
    if error.kind == "invalid_setting":
        return APIError(400, error.message, str(error.params.get("name") or "") or None, "invalid_value")
    return APIError(500, error.message, code=error.kind)


def install_handlers(app, invalid_request) -> None:
    """Answer :class:`APIError`, validation errors and HTTP errors in OpenAI's shape.

    Args:
        app: The FastAPI application.
        invalid_request: ``invalid_request(pydantic errors) -> APIError`` for a body that
            does not validate (:func:`glmdesk.server.body.invalid_request`, which raises
            this module's errors, so it is handed in rather than imported).
    """

    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return invalid_request(exc.errors()).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = exc.detail if isinstance(exc.detail, str) else "The request failed."
        if exc.status_code == 404:
            message = f"There is no {request.url.path} here; see /v1/models and /v1/chat/completions."
        return JSONResponse(
            error_body(exc.status_code, message), status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(Exception)
    async def _failed(request: Request, exc: Exception) -> JSONResponse:
        # A fault of the server's own (a bug): a sentence in OpenAI's shape, not a traceback.
        message = f"The server failed on this request ({type(exc).__name__}: {exc})."
        return JSONResponse(error_body(500, message, code="server_error"), status_code=500)
