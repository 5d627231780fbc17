#!/usr/bin/env python3
"""How the early stop of a perf test changes its verdicts: a Monte Carlo of kit::sample_ratio.

    python3 docs/early_stop_sim.py [--trials N] [--margins 0.03,0.01] [--seed S]

A model, written again here in Python, of the decision loop of common/src/timing.cpp (21 pairs a
batch, 3 batches at most, the quartile rule, the tight median at a spread of 0.05, and the early
stop after every 7 pairs when the 95% interval of the median, kit::median_interval, clears the
bar by the margin). Each pair's ratio is the true ratio times (1 + noise * N(0, 1)), independent
of the others. For each noise level and true ratio / bar it prints the chance of passing and the
mean number of pairs, with no early stop and with each margin, and the largest difference in
that chance from no early stop. The grading guide ("How a perf test measures") quotes it.
Independent noise is the model's assumption: drift between the first pairs and the later ones
is what a noise study on a GPU (kit.py noise) checks.
"""

from __future__ import annotations

import argparse
import math
import random

BATCH, BATCHES, CHUNK, MAX_SPREAD, CONFIDENCE = 21, 3, 7, 0.05, 0.95
NOISES = (0.005, 0.01, 0.02, 0.05, 0.10, 0.20)
TRUE_RATIOS = (0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 1.0, 1.005, 1.01, 1.02, 1.03, 1.05, 1.1)


def quantile(values: list[float], q: float) -> float:
    """Linear interpolation between order statistics, as kit::quantile."""
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median_interval(values: list[float]) -> tuple[float, float] | None:
    """The distribution-free interval of the median, as kit::median_interval."""
    n, s = len(values), sorted(values)
    below, found = 0.0, None
    for k in range(1, (n + 1) // 2 + 1):
        below += math.comb(n, k - 1) / 2 ** n
        if 1 - 2 * below < CONFIDENCE:
            break
        found = (s[k - 1], s[n - k])
    return found


def sample_ratio(draw, margin: float | None) -> tuple[bool, int]:
    """(passed, pairs) against a bar of 1; margin None: no early stop."""
    ratios: list[float] = []
    while True:
        n = len(ratios)
        nxt = (n // BATCH + 1) * BATCH
        if margin is not None:
            nxt = min(nxt, (n // CHUNK + 1) * CHUNK)
        while len(ratios) < nxt:
            ratios.append(draw())
        if nxt % BATCH == 0:
            q1, median, q3 = (quantile(ratios, q) for q in (0.25, 0.5, 0.75))
            if q1 >= 1:
                return True, nxt
            if q3 < 1:
                return False, nxt
            if (q3 - q1) / median <= MAX_SPREAD or nxt >= BATCH * BATCHES:
                return median >= 1, nxt
        if margin is not None and nxt % CHUNK == 0:
            interval = median_interval(ratios)
            if interval is not None and interval[0] > 1 + margin:
                return True, nxt
            if interval is not None and interval[1] < 1 - margin:
                return False, nxt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--margins", default="0.03,0.01",
                        help="comma-separated clear margins to compare with no early stop")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    margins: list[float | None] = [None] + [float(m) for m in args.margins.split(",")]
    rng = random.Random(args.seed)
    for noise in NOISES:
        print(f"noise {noise:.3f} (relative sd of one pair's ratio); P(pass) and mean pairs")
        print("  true/bar" + "".join(f"{'none' if m is None else m:>16}" for m in margins))
        worst = {m: 0.0 for m in margins[1:]}
        for true in TRUE_RATIOS:
            runs = [[true * (1 + noise * rng.gauss(0, 1)) for _ in range(BATCH * BATCHES)]
                    for _ in range(args.trials)]
            cells, base = [], 0.0
            for margin in margins:
                results = [sample_ratio(iter(run).__next__, margin) for run in runs]
                passed = sum(ok for ok, _ in results) / args.trials
                pairs = sum(n for _, n in results) / args.trials
                if margin is None:
                    base = passed
                else:
                    worst[margin] = max(worst[margin], abs(passed - base))
                cells.append(f"{passed:7.3f} {pairs:5.1f}p")
            print(f"  {true:8.3f}" + "".join(f"{c:>16}" for c in cells))
        print("  largest difference from no early stop: "
              + ", ".join(f"margin {m}: {w:.3f}" for m, w in worst.items()))


if __name__ == "__main__":
    main()
