"""One model, one answer at a time: a bounded first-in-first-out queue of requests."""

from __future__ import annotations

import asyncio

from glmdesk.server.errors import APIError


class Turns:
    """Hands the model to one request at a time, in arrival order.

    ``asyncio.Lock`` wakes its waiters first-in-first-out and lets no newcomer
    overtake a waiter, so it is the queue; this class bounds how many may wait.
    Created and used on the server's event loop only.

    Args:
        queue_size: Requests that may wait while one answers; one more is refused.
        retry_after_s: The ``Retry-After`` given with the refusal, in s.

    Attributes:
        waiting: Requests waiting now.
        left: Requests that left the queue before their turn (their waiting task was
            cancelled: the client disconnected), since the server started.
    """

    def __init__(self, queue_size: int, retry_after_s: int) -> None:
        self.queue_size = queue_size
        self.retry_after_s = retry_after_s
        self.waiting = 0
        self.left = 0
        self._lock = asyncio.Lock()

    @property
    def busy(self) -> bool:
        """True while a request holds the model."""
        return self._lock.locked()

    async def acquire(self) -> None:
        """Wait for the model.

        Cancelling the waiting task takes the request out of the queue without ever
        giving it the model (``asyncio.Lock`` then wakes the next waiter itself).

        Raises:
            APIError: 429 with ``Retry-After`` when :attr:`queue_size` requests wait already.
            asyncio.CancelledError: when the waiting task is cancelled.
        """
        if self._lock.locked() and self.waiting >= self.queue_size:
            raise APIError(
                429,
                f"The model is busy and {self.waiting} requests are waiting; try again in "
                f"{self.retry_after_s} s. (This server answers one request at a time.)",
                code="queue_full",
                headers={"Retry-After": str(self.retry_after_s)},
            )
        self.waiting += 1
        try:
            await self._lock.acquire()
        except asyncio.CancelledError:
            self.left += 1
            raise
        finally:
            self.waiting -= 1

    def release(self) -> None:
        """Hand the model to the next request (call on the event loop)."""
        self._lock.release()
