"""The one timing helper the benchmark scripts share."""

from __future__ import annotations

import gc
import statistics
import time
from typing import Callable, List, Tuple


def sample(run: Callable[[], object], loops: int, repeat: int) -> Tuple[float, float]:
    """(best, median) seconds per call of ``run`` over ``repeat`` samples of ``loops`` calls.

    The collector is off while timing, so a collection triggered by one case's
    garbage is not billed to another.
    """
    times: List[float] = []
    gc.disable()
    try:
        for _ in range(repeat):
            started = time.perf_counter()
            for _ in range(loops):
                run()
            times.append((time.perf_counter() - started) / loops)
    finally:
        gc.enable()
    return min(times), statistics.median(times)
