"""rounds.py - the rounds of bench/lib.sh's mgc_rounds, summed up: one line a
round, one column a figure (images/s, or "skipped"/"failed" where a peer did
not run). The benches' summaries set mgc's figures beside each peer's round by
round (the host's speed moves within minutes) and report the median.

  python3 bench/rounds.py medians FILE   -> each column's median over the
      rounds where it is a number (median_columns in lib.sh)
  from rounds import read, times, each   -> in a bench's summary
"""
import math
import statistics
import sys


def number(v):
    """v as a float, or None for a word such as "skipped" or "failed"."""
    try:
        f = float(v)
    except ValueError:
        return None
    return f if math.isfinite(f) else None


def read(path):
    """The rounds of FILE, each a list of numbers (None where a peer did not run)."""
    return [[number(v) for v in line.split()] for line in open(path)]


def _summary(rounds, f, need, show):
    got = [r for r in rounds if all(r[c] is not None for c in need)]
    if not got:
        return "n/a"
    return f"{show(statistics.median(map(f, got)))} (each round: {', '.join(show(f(r)) for r in got)})"


def times(rounds, f, need=()):
    """The median of ratio f over the rounds whose columns `need` are numbers, as 2.00x, with each round's."""
    return _summary(rounds, f, need, lambda v: f"{v:.2f}x")


def each(rounds, f, need=()):
    """The same as a percentage."""
    return _summary(rounds, f, need, lambda v: f"{v:.0%}")


def medians(path):
    rows = [line.split() for line in open(path)]
    cols = [[number(r[c]) for r in rows if number(r[c]) is not None] for c in range(len(rows[0]))]
    return " ".join(f"{statistics.median(v):g}" if v else rows[0][c] for c, v in enumerate(cols))


if __name__ == "__main__" and sys.argv[1:2] == ["medians"]:
    print(medians(sys.argv[2]))
