"""Benchmark: look up one concrete key in a KeyExprTree of N expressions.

N = 10, 1,000 and 100,000 expressions: a realistic mix of literal keys and wildcard
expressions (``*``, ``**``, ``$*``), of which a constant set matches the probe key.
Prints the time per lookup for each N and the ratio 100k / 10 (goal: within 3x).
Also prints pairwise intersects/includes and validation throughput.

Run: .venv/bin/python bench/bench_keyexpr.py
"""

from __future__ import annotations

import os
import platform
import random
import time

from pyzenoh.keyexpr import KeyExprTree, autocanonize, includes, intersects, validate
from pyzenoh.keyexpr.canon import _check
from pyzenoh.keyexpr.relations import _includes, _intersects

PROBE = "site0/area0/dev0/temp"
# Entries that match PROBE; the same at every N so the result size is constant.
MATCHING = [
    "site0/area0/dev0/temp",
    "site0/**",
    "site0/area0/*/temp",
    "*/area0/dev0/temp",
    "site0/area0/dev$*/temp",
    "**/temp",
    "site0/*/dev0/**",
]
METRICS = ["temp", "hum", "pres", "co2", "volt"]


def noise(rng: random.Random, i: int) -> str:
    """One expression that does not match PROBE (site >= 1 or a different metric)."""
    site = 1 + rng.randrange(max(1, i // 200))
    area = rng.randrange(20)
    dev = rng.randrange(50)
    metric = rng.choice(METRICS)
    r = rng.random()
    if r < 0.70:
        return f"site{site}/area{area}/dev{dev}/{metric}"
    if r < 0.80:
        return f"site{site}/area{area}/*/{metric}"
    if r < 0.85:
        return f"site{site}/*/dev{dev}/{metric}"
    if r < 0.90:
        return f"site{site}/area{area}/**"
    if r < 0.93:
        return f"site{site}/**/{metric}"
    if r < 0.97:
        return f"site{site}/area{area}/dev$*/{metric}"
    # Wildcard at the top, still not matching: another metric under site0.
    other = rng.choice(METRICS[1:])
    return f"*/area{area}/dev{dev}/{other}"


def build(n: int, seed: int = 1) -> KeyExprTree[int]:
    rng = random.Random(seed)
    tree: KeyExprTree[int] = KeyExprTree()
    for i, k in enumerate(MATCHING):
        tree.insert(k, i)
    i = len(MATCHING)
    while len(tree) < n:
        tree.insert(noise(rng, i), i)
        i += 1
    return tree


def per_call(fn: object, reps: int) -> float:
    """Best of 5 runs, seconds per call."""
    assert callable(fn)
    for _ in range(min(reps, 1_000)):  # warm-up (caches, CPU clock)
        fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def main() -> None:
    cpu = "?"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    print(f"python {platform.python_version()}  nproc {os.cpu_count()}  cpu {cpu}")
    results: dict[int, float] = {}
    for n in (10, 1_000, 100_000):
        tree = build(n)
        matches = sorted(k for k, _ in tree.intersecting(PROBE))
        assert matches == sorted(MATCHING), matches
        t = per_call(lambda tree=tree: list(tree.intersecting(PROBE)), 2_000)
        results[n] = t
        print(f"N={n:>7}: intersecting({PROBE!r}) {t * 1e6:8.2f} us/lookup, {len(matches)} matches")
    print(f"ratio 100k/10: {results[100_000] / results[10]:.2f}  (goal <= 3)")

    # Pairwise relations: memoised and cold (cache cleared each call).
    a, b = "site0/**/temp", "site0/area0/*/temp"
    t_hot = per_call(lambda: intersects(a, b), 100_000)
    t_lit = per_call(lambda: intersects(PROBE, "site0/area0/dev1/temp"), 100_000)

    def cold_inter() -> None:
        _intersects.cache_clear()
        intersects(a, b)

    def cold_incl() -> None:
        _includes.cache_clear()
        includes(a, b)

    print(f"intersects literal/literal {t_lit * 1e9:8.0f} ns")
    print(f"intersects wild (memoised) {t_hot * 1e9:8.0f} ns")
    print(f"intersects wild (cold)     {per_call(cold_inter, 20_000) * 1e9:8.0f} ns")
    print(f"includes wild (cold)       {per_call(cold_incl, 20_000) * 1e9:8.0f} ns")

    def cold_validate() -> None:
        _check.cache_clear()
        validate("site0/area0/dev$*/temp")

    print(f"validate (cold)            {per_call(cold_validate, 20_000) * 1e9:8.0f} ns")
    print(f"autocanonize (memoised)    {per_call(lambda: autocanonize('a/**/**/*'), 100_000) * 1e9:8.0f} ns")


if __name__ == "__main__":
    main()
