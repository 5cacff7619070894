"""CPU thread count chosen from measured decode steps, so a busy core does not stall decoding.

torch's CPU kernels split each operation across OpenMP threads, one per physical
core by default, and wait at the end of every parallel region for the slowest
thread. When another process keeps one core busy, the thread sharing that core
gets a fraction of it and every matrix product waits for it: on 2 cores with one
busy, the default decoded at 3.9 tokens/s and one thread at 13.7 (issue 21).
Waiting threads also spin (libgomp's default ``OMP_WAIT_POLICY``), taking time
from the process they wait for. ``OMP_WAIT_POLICY`` is read once, when the
OpenMP runtime loads with torch, so it cannot change at run time.

:class:`ThreadTuner` measures instead of guessing: the decode loop times each
step; every so often it times a few steps at the current count and at the
counts one below and one above (within ``1..max_threads``) and keeps the
fastest (by median step time, switching only for a clear gain). Probes come
every :attr:`ThreadTuner.min_interval` steps after a change, the interval
doubling up to :attr:`ThreadTuner.max_interval` while the count holds, and at
least every :attr:`ThreadTuner.stale_s` seconds (the load may have changed
between answers). The prefill runs at the count the last decode chose.
Measured side by side in ``benchmarks/background_load.py``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch


def default_max_threads() -> int:
    """torch's own default count (one per physical core) when glmdesk was imported."""
    return _TORCH_DEFAULT


_TORCH_DEFAULT = torch.get_num_threads()


class _Timed:
    """Context manager timing one step for :meth:`ThreadTuner.timed_step`."""

    __slots__ = ("tuner", "start")

    def __init__(self, tuner: ThreadTuner) -> None:
        self.tuner = tuner
        self.start = 0.0

    def __enter__(self) -> None:
        self.tuner.apply()
        self.start = self.tuner.clock()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.tuner.record(self.tuner.clock() - self.start)


class ThreadTuner:
    """Chooses torch's intra-op thread count from measured decode step times.

    A hill climb over ``1..max_threads``: measure ``samples`` steps at the current
    count, then at each neighbour (after ``warmup`` steps there, discarded), and
    keep a neighbour whose median step is faster by more than ``margin``.

    Args:
        max_threads: Most threads tried (default: torch's default, one per
            physical core), at least 1.
        min_threads: Fewest threads tried, ``1 <= min_threads <= max_threads``.
        start: Count used first (default ``max_threads``: today's count on an idle
            machine).
        samples: Steps measured per count in a probe.
        warmup: Steps discarded after each change of count.
        margin: Relative gain a neighbour needs to be chosen (0.05: 5 % faster).
        min_interval: Decode steps between probes after the count changed.
        max_interval: Most steps between probes while the count holds.
        stale_s: A probe starts at the next step when the last ended longer ago, in s.
        clock: Monotonic seconds (tests pass their own).
        set_threads: Applies a count (``torch.set_num_threads``).
        get_threads: Reads the calling thread's count (``torch.get_num_threads``).

    Attributes:
        threads: The count chosen now.
        history: ``(step index, count)`` for every change made, oldest first.

    Raises:
        ValueError: for bounds that hold no count.
    """

    def __init__(
        self,
        max_threads: int | None = None,
        min_threads: int = 1,
        start: int | None = None,
        samples: int = 3,
        warmup: int = 1,
        margin: float = 0.05,
        min_interval: int = 16,
        max_interval: int = 512,
        stale_s: float = 20.0,
        clock: Callable[[], float] = time.perf_counter,
        set_threads: Callable[[int], None] = torch.set_num_threads,
        get_threads: Callable[[], int] = torch.get_num_threads,
    ) -> None:
        self.max_threads = max(1, max_threads or default_max_threads())
        if not 1 <= min_threads <= self.max_threads:
            raise ValueError(f"thread bounds {min_threads}..{self.max_threads} hold no count")
        self.min_threads = min_threads
        self.threads = min(self.max_threads, max(min_threads, start or self.max_threads))
        self.samples, self.warmup, self.margin = samples, warmup, margin
        self.min_interval, self.max_interval, self.stale_s = min_interval, max_interval, stale_s
        self.clock, self._set, self._get = clock, set_threads, get_threads
        self.interval = min_interval
        self.history: list[tuple[int, int]] = []
        self._steps = 0
        self._since_probe = 0
        self._probe_end = clock()
        self._last_record = self._probe_end
        self._plan: list[int] = []  # counts still to measure in this probe
        self._trying: int | None = None  # count being measured now
        self._times: list[float] = []
        self._skip = 0
        self._results: dict[int, float] = {}

    def apply(self) -> None:
        """Set the calling thread's count to the one being used (prefill and each step)."""
        count = self._trying if self._trying is not None else self.threads
        if self._get() != count:
            self._set(count)

    def timed_step(self) -> _Timed:
        """``with tuner.timed_step(): logits = ...``: applies the count, times the step,
        and :meth:`record` s it (a step that raises is not recorded)."""
        return _Timed(self)

    def record(self, seconds: float) -> None:
        """Take one decode step's duration (in s); may change the count for the next step.

        An idle gap longer than :attr:`stale_s` before the step (between answers)
        voids a probe in flight (the load may have changed) and probes again soon.
        """
        self._steps += 1
        now = self.clock()
        if now - seconds - self._last_record > self.stale_s:
            self._trying, self._plan = None, []
            self._probe_end = now - 2 * self.stale_s
        self._last_record = now
        if self._trying is None:
            self._since_probe += 1
            stale = now - self._probe_end > self.stale_s and self._since_probe > self.warmup
            if self._since_probe >= self.interval or stale:
                self._start_probe()
            return
        if self._skip > 0:
            self._skip -= 1
            return
        self._times.append(seconds)
        if len(self._times) >= self.samples:
            self._results[self._trying] = statistics.median(self._times)
            self._next_count()

    def _start_probe(self) -> None:
        neighbours = [
            c for c in (self.threads - 1, self.threads + 1) if self.min_threads <= c <= self.max_threads
        ]
        if not neighbours:
            self._finish(self.threads)
            return
        self._results = {}
        self._plan = [self.threads, *neighbours]
        self._next_count()

    def _next_count(self) -> None:
        if not self._plan:
            base = self._results[self.threads]
            results = self._results
            best = min(results, key=lambda count: results[count])
            chosen = best if self._results[best] < base * (1 - self.margin) else self.threads
            self._finish(chosen)
            return
        count = self._plan.pop(0)
        # The current count needs no warm-up when it is measured first.
        self._skip = 0 if count == self.threads and self._trying is None else self.warmup
        self._trying, self._times = count, []

    def _finish(self, chosen: int) -> None:
        if chosen != self.threads:
            self.history.append((self._steps, chosen))
            self.interval = self.min_interval
        else:
            self.interval = min(self.interval * 2, self.max_interval)
        self.threads, self._trying, self._plan = chosen, None, []
        self._since_probe = 0
        self._probe_end = self.clock()
