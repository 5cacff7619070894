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
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
}


class APIError(Exception):
    """An error answered as OpenAI does.

    Args:
        status: HTTP status (400, 401, 404, 429, 500...).
        message: The sentence for the client.
        param: The request field at fault, if one is.
        code: A machine-readable code (``model_not_found``, ``context_length_exceeded``...).
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
        self.status, self.message, self.param, self.code = status, message, param, code
        self.headers = headers or {}

    def body(self) -> dict:
        """The JSON body."""
        return error_body(self.status, self.message, self.param, self.code)

    def response(self) -> JSONResponse:
        """The JSON response."""
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def error_body(status: int, message: str, param: str | None = None, code: str | None = None) -> dict:
    """``{"error": {...}}`` for ``status``."""
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
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


def _validation_message(exc: RequestValidationError) -> tuple[str, str | None]:
    errors = exc.errors()
    if not errors:
        return "The request is not valid.", None
    first = errors[0]
    if first.get("type") == "json_invalid":
        return (
            f"The request body is not valid JSON: {first.get('ctx', {}).get('error', 'cannot parse it')}.",
            None,
        )
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    param = ".".join(loc) or None
    if first.get("type") == "missing":
        return f"The request needs the field {param}.", param
    where = f" in {param}" if param else ""
    return f"The request is not valid{where}: {first.get('msg', 'bad value')}.", param


def install_handlers(app) -> None:
    """Answer :class:`APIError`, validation errors and HTTP errors in OpenAI's shape."""

    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        message, param = _validation_message(exc)
        return JSONResponse(error_body(400, message, param, "invalid_request"), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = exc.detail if isinstance(exc.detail, str) else "The request failed."
        if exc.status_code == 404:
            message = f"There is no {request.url.path} here; see /v1/models and /v1/chat/completions."
        return JSONResponse(
            error_body(exc.status_code, message), status_code=exc.status_code, headers=exc.headers
        )
