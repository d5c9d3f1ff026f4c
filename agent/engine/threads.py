"""How many CPU threads to decode with: the cores this process may use that other work is not already using."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, which containers and taskset narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def choose_threads(requested: int | None = None) -> int:
    """requested when given; else the usable cores minus the busy ones (the 1-minute load average), at least 1.

    Decoding is memory-bound and its threads wait on each other at every layer: one thread that shares a core
    with another job stalls all of them (two torch threads on a 2-core machine with one other busy process ran
    many times slower than one thread), so a busy core is worth less than none."""
    if requested is not None:
        if requested < 1:
            raise ValueError(f"threads must be >= 1, got {requested}")
        return requested
    cores = usable_cores()
    try:
        busy = round(os.getloadavg()[0])
    except (AttributeError, OSError):
        busy = 0
    return max(1, min(cores, cores - busy))
