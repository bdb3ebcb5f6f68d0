"""``websift rank``'s progress: one line, not one per iteration.

Power iteration reports every iteration of every vector (global PageRank, host PageRank, each
topic).  On a terminal the line is redrawn in place (the vector, its iteration, its L1
residual) and left as the last state; in a log (stderr not a terminal) one line is written
when the run ends, naming each vector's iteration count.  ``--verbose`` writes every iteration
on a line of its own, as before; ``--quiet`` writes nothing.
"""

from __future__ import annotations

from typing import TextIO


def iteration_line(what: str, k: int, residual: float) -> str:
    return f"{what}: iteration {k:4d}  L1 residual {residual:.3e}"


class RankProgress:
    """The ``progress`` callback of ``ranking.rank_job.run_rank`` (module doc)."""

    def __init__(self, out: TextIO, *, verbose: bool = False, quiet: bool = False) -> None:
        self.out = out
        self.verbose = verbose
        self.quiet = quiet
        self.tty = out.isatty()
        self.iterations: dict[str, int] = {}  # each vector's last iteration, in order

    def __call__(self, what: str, k: int, residual: float) -> None:
        self.iterations[what] = k
        if self.quiet:
            return
        if self.verbose:
            self.out.write(iteration_line(what, k, residual) + "\n")
        elif self.tty:
            self.out.write("\r\x1b[2K" + iteration_line(what, k, residual))
        else:
            return
        self.out.flush()

    def finish(self, completed: bool = True) -> None:
        """End the one line (a terminal) or write it (a log; not for a run that failed)."""
        if self.quiet or self.verbose or not self.iterations:
            return
        if self.tty:
            self.out.write("\n")
        elif not completed:
            return
        else:
            done = ", ".join(f"{what} {k}" for what, k in self.iterations.items())
            self.out.write(f"rank: iterations: {done}\n")
        self.out.flush()
