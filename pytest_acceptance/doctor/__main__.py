"""``pytest-acceptance-doctor`` / ``python -m pytest_acceptance.doctor``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_acceptance.doctor import Check, Options, exit_code, summary, table
from pytest_acceptance.doctor.hosts import HOSTS


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pytest-acceptance-doctor",
        description="Check, by doing, that the pytest-acceptance gate is on in each agent it "
        "is installed in, and how strong it is on this machine. Changes nothing. Exit code 0: "
        "healthy; 1: a check failed (named, with its fix).",
    )
    parser.add_argument(
        "--project",
        type=Path,
        default=Path.cwd(),
        help="the project whose settings count (default: the current folder)",
    )
    parser.add_argument(
        "--plugin-root",
        type=Path,
        help="the plugin's folder, for a plugin loaded with --plugin-dir (default: where the "
        "agent installed it)",
    )
    parser.add_argument(
        "--agent", choices=sorted(HOSTS), action="append", help="check only this agent"
    )
    parser.add_argument(
        "--no-synthetic-stop",
        action="store_true",
        help="skip the synthetic stop through the installed hook (it runs the gate once)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    options = Options(
        project=args.project.resolve(),
        plugin_root=args.plugin_root.resolve() if args.plugin_root else None,
        synthetic_stop=not args.no_synthetic_stop,
    )
    checks: list[Check] = []
    for name in args.agent or sorted(HOSTS):
        checks.extend(HOSTS[name](options))
    print(table(checks))
    print()
    print(summary(checks))
    return exit_code(checks)


if __name__ == "__main__":
    sys.exit(main())
