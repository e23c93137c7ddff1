"""Hostile input stays cheap, measured side by side in one process (best of N rounds):

1. parsing 10,000-character pass conditions shaped to make a backtracking parser quadratic
   (quoted "and"s, long blank runs) vs a plain condition of the same length (target <= 3);
2. ``output matches`` (a search stopped at the criterion's timeout: an interval timer in
   the main thread, a forked child elsewhere) vs a bare ``re.search``, on a small and on a
   100 MB output: the price of the deadline;
3. a spec whose verification blocks hold an alias bomb and 25,000-deep nesting vs the
   same spec with plain blocks (target <= 3);
4. a spec whose flat blocks (read without PyYAML) hold 10,000-character commands with a long
   blank run vs commands of the same length without one (target <= 3).

Usage: python bench/bench_hostile_input.py [--rounds N]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import re
import time
from collections.abc import Callable
from pathlib import Path

from pytest_acceptance.model import SpecError
from pytest_acceptance.run.conditions import Condition, ConditionError, parse_condition
from pytest_acceptance.spec.load import parse_spec_text

LENGTH = 10_000


def best(function: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def side_by_side(
    name: str, base: Callable[[], object], cand: Callable[[], object], rounds: int, target: float
) -> None:
    base(), cand()  # warm up
    base_time, cand_time = best(base, rounds), best(cand, rounds)
    ratio = cand_time / base_time
    verdict = "" if target <= 0 else (" ok" if ratio <= target else " OVER TARGET")
    limit = f" (target <= {target})" if target > 0 else ""
    print(
        f"{name}: baseline {base_time * 1000:.2f} ms, candidate {cand_time * 1000:.2f} ms, "
        f"ratio {ratio:.2f}{limit}{verdict}"
    )


def parse_fresh(text: str) -> Callable[[], object]:
    def run() -> object:
        parse_condition.cache_clear()
        try:
            return parse_condition(text)
        except ConditionError as error:  # outside the vocabulary: the error is the answer
            return error

    return run


def search(condition: Condition, output: str) -> Callable[[], object]:
    return lambda: condition.check(0, output, Path("."), 60)


def spec_with(blocks: str) -> str:
    return "# Bench\n\n" + "".join(
        f"#### AC-{n}: c\n```yaml\nmethod: bash\ncommand: 'true'\n{blocks}\n```\n\n"
        for n in range(1, 21)
    )


def parse_spec(text: str) -> Callable[[], object]:
    def run() -> object:
        try:
            return parse_spec_text(text, Path("bench.md"))
        except SpecError as error:
            return error

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds

    plain = ("output contains x and " * LENGTH)[: LENGTH - 20] + " and output contains y"
    quoted = 'output contains "' + ("and output contains y " * LENGTH)[: LENGTH - 20] + '"'
    blanks = "file a" + " " * LENGTH + "x"
    side_by_side("condition with quoted ands", parse_fresh(plain), parse_fresh(quoted), rounds, 3)
    side_by_side("condition with a blank run", parse_fresh(plain), parse_fresh(blanks), rounds, 3)

    matches = parse_condition("output matches ^needle")
    assert isinstance(matches, Condition)
    pattern = re.compile("^needle", re.MULTILINE)
    small = "x" * 1_000
    side_by_side(
        "output matches on 1 KB, main thread (re.search vs under a timer)",
        lambda: pattern.search(small),
        search(matches, small),
        rounds,
        0,
    )
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        side_by_side(
            "output matches on 1 KB, other thread (re.search vs in a forked child)",
            lambda: pool.submit(pattern.search, small).result(),
            lambda: pool.submit(search(matches, small)).result(),
            rounds,
            0,
        )
    big = "line\n" * 20_000_000
    side_by_side(
        "output matches on 100 MB, main thread (re.search vs under a timer)",
        lambda: pattern.search(big),
        search(matches, big),
        rounds,
        0,
    )

    levels = "abcdefghi"
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{levels[n]}: &{levels[n]} [" + ", ".join([f"*{levels[n - 1]}"] * 9) + "]\n"
        for n in range(1, len(levels))
    )
    deep = "checks: " + "[" * 25_000 + "]" * 25_000
    side_by_side(
        "spec with alias bombs (20 blocks)",
        parse_spec(spec_with("retries: 1")),
        parse_spec(spec_with(bomb)),
        rounds,
        3,
    )
    side_by_side(
        "spec with 10,000-character flat values, a blank run (20 blocks)",
        parse_spec(spec_with("pass_condition: " + "x" * LENGTH)),
        parse_spec(spec_with("pass_condition: a" + " " * (LENGTH - 2) + "b")),
        rounds,
        3,
    )
    side_by_side(
        "spec with 25,000-deep nesting (20 blocks)",
        parse_spec(spec_with("retries: 1")),
        parse_spec(spec_with(deep)),
        rounds,
        0,
    )


if __name__ == "__main__":
    main()
