"""How long ``bfmem --help`` / ``--version`` take, on top of starting the interpreter.

Each command runs in a fresh interpreter (``python -m langchain_builderforce_memory``, what
the ``bfmem`` script does), ``--repeat`` times; reported are the median and the best wall
time, the same for ``python -c pass``, and the difference: what the command itself costs.
The target (issue 11): under 0.5 s above interpreter start. ``tests/test_cli.py`` checks
the cause instead of a time (``--help`` imports no langchain-core / langgraph module), so a
loaded machine cannot make it flaky.

Also reported: the package modules that ``--help`` imports, from ``python -X importtime``,
largest first, so a regression names its culprit.

Run: python benchmarks/cli_help.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE = "langchain_builderforce_memory"
COMMANDS: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    "bfmem --help": ["-m", MODULE, "--help"],
    "bfmem demo --help": ["-m", MODULE, "demo", "--help"],
    "bfmem --version": ["-m", MODULE, "--version"],
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def wall_times(args: list[str], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, *args], env=_env(), check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return times


def heaviest_imports(args: list[str], top: int = 8) -> list[tuple[int, str]]:
    """(cumulative µs, module) of the top-level imports ``-X importtime`` reports."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|")
        name = name.removeprefix(" ")
        if not name.startswith(" "):  # top level only: nested imports are indented
            rows.append((int(cumulative), name))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    medians: dict[str, float] = {}
    print(f"{'command':<22} {'median s':>9} {'best s':>8} {'over start s':>13}")
    for name, args in COMMANDS.items():
        times = wall_times(args, repeat)
        medians[name] = statistics.median(times)
        over = medians[name] - medians["python -c pass"]
        print(f"{name:<22} {medians[name]:>9.3f} {min(times):>8.3f} {over:>13.3f}")
    print("\nheaviest top-level imports of `bfmem --help` (cumulative µs):")
    for micros, name in heaviest_imports(COMMANDS["bfmem --help"]):
        print(f"  {micros:>9,}  {name}")


if __name__ == "__main__":
    main()
