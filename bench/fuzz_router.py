"""Nightly mutation fuzzing of a live ``pyzenoh router`` (the long run of tests/fuzz).

Starts ``pyzenoh router`` on 127.0.0.1, opens a healthy eclipse-zenoh client set on it
(publisher, subscriber, queryable, get), and runs the seeds ``--seed`` ... one TCP
connection each, ``--concurrency`` at a time, until ``--inputs`` or ``--seconds`` run out
(inputs from :mod:`tests.fuzz.mutate`). Prints inputs/s, the closes by kind, the router's
RSS at the start and the end, and every failure with the seed that reproduces it: a hang
or refused connection (the seed directly), a traceback in the router log (triaged by
replaying the recent seeds one at a time, then replayed alone on a fresh router), the
healthy clients failing, the router dying. Exit status 1 on any failure.

Usage:
    python bench/fuzz_router.py [--inputs 1000000] [--seconds 3600] [--concurrency 16]
                                [--seed 0] [--log-level info]
    python bench/fuzz_router.py --replay SEED   # one seed, its bytes and the router's log
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz.mutate import (  # after the path set-up
    ROUTER_ID,
    FuzzCase,
    HealthyClients,
    LogWatch,
    Report,
    Router,
    describe,
    fuzz,
    problem_signature,
    replay,
    rss_kb,
    run_router,
    triage,
)

Skip = Callable[[FuzzCase], bool]


def _no_skip(case: FuzzCase) -> bool:
    return False


def _progress(router: Router, rss: list[int]) -> Callable[[Report], None]:
    def show(report: Report) -> None:
        now = rss_kb(router.proc.pid)
        rss.append(now)
        print(
            f"  {report.seconds:7.1f} s  {report.inputs:9d} inputs  {report.rate:7.0f}/s  "
            f"router RSS {now} KiB  health checks {report.health_checks} "
            f"(failed {len(report.health_failures)})",
            flush=True,
        )

    return show


async def _replay_alone(seed: int, tmp: Path, log_level: str, suspect: bool = True) -> str:
    """Run ``seed`` alone on a fresh router: its bytes and what the router logged."""
    with run_router(tmp, log_level=log_level) as router:
        watch = LogWatch(router.log)
        await asyncio.sleep(0.2)
        watch.poll()
        case, outcome = await replay(router.port, seed)
        await asyncio.sleep(0.5)
        problems = watch.poll()
        alive = router.alive()
    text = describe(case, outcome)
    if problems:
        text += "\n  fresh router log:\n" + "\n".join(problems)
    elif suspect:
        text += "\n  (alone on a fresh router: no traceback; earlier inputs' state is involved)"
    else:
        text += "\n  fresh router log: no traceback"
    if not alive:
        text += "\n  the fresh router died"
    return text


async def _leftovers_after(seeds: list[int], tmp: Path, log_level: str, skip: Skip, match: str) -> list[str]:
    """Run ``seeds`` (16 at a time) on a fresh router: what it holds once they are closed
    (only what starts with ``match``)."""
    with run_router(tmp, log_level=log_level) as router:
        health = await asyncio.to_thread(HealthyClients, router.endpoint)
        try:
            await fuzz(router, seeds, concurrency=16, seconds=3600.0, skip=skip)
            left = await asyncio.to_thread(health.leftovers, ROUTER_ID, 6, 0.5)
            return [x.text for x in left if x.text.startswith(match)]
        finally:
            await asyncio.to_thread(health.close)


async def _bisect_leak(
    window: list[int], tmp: Path, log_level: str, skip: Skip, match: str = "", seconds: float = 900.0
) -> str:
    """Halve ``window`` (replayed on fresh routers) down to the seed that leaves state
    starting with ``match`` behind."""
    deadline = time.monotonic() + seconds
    seeds = list(dict.fromkeys(window))
    left = await _leftovers_after(seeds, tmp, log_level, skip, match)
    if not left:
        return f"  (replaying the {len(seeds)} seeds before it on a fresh router leaves nothing)"
    while len(seeds) > 1 and time.monotonic() < deadline:
        half = len(seeds) // 2
        for part in (seeds[:half], seeds[half:]):
            part_left = await _leftovers_after(part, tmp, log_level, skip, match)
            if part_left:
                seeds, left = part, part_left
                break
        else:
            return (
                f"  reproduced by seeds {seeds[0]}..{seeds[-1]} ({len(seeds)}) together, by neither half alone: {left}"
            )
    if len(seeds) > 1:
        return f"  narrowed to {len(seeds)} seeds ({seeds[0]}..{seeds[-1]}) in the time given: {left}"
    text = "  reproduced by one seed, alone on a fresh router: " + "; ".join(left)
    with run_router(tmp, log_level=log_level) as router:
        case, outcome = await replay(router.port, seeds[0])
    return text + "\n  " + describe(case, outcome).replace("\n", "\n  ")


async def _triage_problems(router: Router, report: Report, tmp: Path, log_level: str) -> list[str]:
    out: list[str] = []
    distinct: dict[str, tuple[str, list[int]]] = {}
    counts: Counter[str] = Counter()
    for problem, window in report.problems:
        sig = problem_signature(problem)
        counts[sig] += 1
        distinct.setdefault(sig, (problem, window))
    watch = LogWatch(router.log)
    watch.poll()
    for sig, (problem, window) in distinct.items():
        text = f"TRACEBACK x{counts[sig]} ({sig}):\n{problem}"
        if router.alive():
            found = await triage(router, window, watch, seconds=180.0)
            for seed, _ in found:
                text += f"\n  triaged to seed {seed}; alone:\n" + await _replay_alone(seed, tmp, log_level)
            if not found:
                text += "\n  (triage: no single recent seed reproduces it on this router)"
        out.append(text)
    return out


async def _main(args: argparse.Namespace, tmp: Path) -> int:
    if args.replay is not None:
        print(await _replay_alone(args.replay, tmp, args.log_level, suspect=False))
        return 0
    with run_router(tmp, log_level=args.log_level) as router:
        pid = router.proc.pid
        health = await asyncio.to_thread(HealthyClients, router.endpoint)
        try:
            first = await asyncio.to_thread(health.check)
            if first is not None:
                print(f"the healthy clients do not work before fuzzing: {first}")
                return 1
            watch = LogWatch(router.log)
            watch.poll()
            rss_start = rss_kb(pid)
            rss: list[int] = [rss_start]
            skip: Skip = _no_skip
            print(
                f"router pid {pid} on {router.endpoint}, log {router.log}; RSS {rss_start} KiB; "
                f"seeds {args.seed}.., at most {args.inputs} inputs / {args.seconds} s, "
                f"concurrency {args.concurrency}",
                flush=True,
            )
            report = await fuzz(
                router,
                range(args.seed, args.seed + args.inputs),
                concurrency=args.concurrency,
                seconds=args.seconds,
                watch=watch,
                health=health,
                health_every=args.health_every,
                progress=_progress(router, rss),
                progress_every=args.progress_every,
                skip=skip,
            )
            final = await asyncio.to_thread(health.check)
            leftovers = await asyncio.to_thread(health.leftovers, ROUTER_ID)
            rss_end = rss_kb(pid)
        finally:
            await asyncio.to_thread(health.close)
        alive = router.alive()
        print()
        print(
            f"inputs: {report.inputs} in {report.seconds:.1f} s = {report.rate:.0f} inputs/s "
            f"({report.established} sessions established, {report.bytes_sent / 1e6:.1f} MB sent)"
        )
        print("closes by kind:")
        for kind, n in report.by_kind.most_common():
            print(f"  {kind:28s} {n:9d}")
        print("inputs by strategy:")
        for name, n in sorted(report.by_strategy.items()):
            print(f"  {name:28s} {n:9d}")
        leaked = [(x, window) for x, window in report.leaks] + [(x, report.recent) for x in leftovers]
        state = "clean" if not leftovers else "; ".join(x.text for x in leftovers)
        print(f"router state after the run (admin space): {state}")
        print(f"router RSS: start {rss_start} KiB, end {rss_end} KiB, max seen {max(rss + [rss_end])} KiB")
        failed = len(report.health_failures) + (final is not None)
        print(f"health checks (eclipse-zenoh put/sub + get/queryable): {report.health_checks + 2}, {failed} failed")
        failures: list[str] = []
        if not alive or report.router_died:
            failures.append(f"the router died (exit {router.proc.returncode})")
        for a in report.anomalies[:20]:
            failures.append(f"{a.anomaly}: seed {a.seed} ({a.strategy}), ended {a.kind}")
        failures += [f"health: {h}" for h in report.health_failures]
        if final is not None:
            failures.append(f"health at the end: {final}")
        failures += await _triage_problems(router, report, tmp, args.log_level)
    done: set[str] = set()
    for x, window in leaked:
        entity = x.text.split(" held by ")[0].split(" still declared")[0]  # "kind 'key'" for entities
        if entity in done:
            continue
        done.add(entity)
        bisect = await _bisect_leak(window, tmp, args.log_level, skip, entity) if x.holders is not None else ""
        failures.append(f"LEAK: {x.text}\n{bisect}".rstrip())
    for a in report.anomalies[:5]:
        failures.append("reproducer: " + await _replay_alone(a.seed, tmp, args.log_level))
    if failures:
        print(f"\nFAILURES ({len(failures)}):")
        for f in failures:
            print(f)
        return 1
    print("\nno failure")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inputs", type=int, default=1_000_000)
    p.add_argument("--seconds", type=float, default=3600.0)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--seed", type=int, default=0, help="first seed (inputs are seed, seed+1, ...)")
    p.add_argument("--health-every", type=float, default=5.0)
    p.add_argument("--progress-every", type=float, default=30.0)
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    p.add_argument("--replay", type=int, metavar="SEED", help="run one seed on a fresh router and show it")
    p.add_argument("--keep", action="store_true", help="keep the router log directory")
    args = p.parse_args()
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="fuzz-router-"))
    try:
        return asyncio.run(_main(args, tmp))
    finally:
        if args.keep:
            print(f"router logs kept in {tmp}")
        else:
            for f in tmp.iterdir():
                f.unlink()
            tmp.rmdir()
        print(f"wall time {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
