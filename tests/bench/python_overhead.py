#!/usr/bin/env python3
"""Benchmark: the Figure 9 sweep run from Python against the same run from the C++ binary.

    PYTHONPATH=build/python /usr/bin/python3 tests/bench/python_overhead.py build/podsim [--repeat 3]

Times, best of --repeat:
  cli      `podsim run experiments/gshard_fig9.json --out DIR` (a process, as a user runs it)
  python   podsim.run_experiment(same config, DIR) in this interpreter: the same runner
  points   the sweep's 32 points as podsim.collective() calls (each builds its result dict
           with per-link NumPy arrays), no files written
and prints the overhead of python over cli (the target is at most 5%).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import podsim

SOURCE_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONFIG = os.path.join(SOURCE_DIR, "experiments", "gshard_fig9.json")


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        out = tempfile.mkdtemp(prefix="podsim-bench-")
        shutil.rmtree(out)
        start = time.perf_counter()
        fn(out)
        times.append(time.perf_counter() - start)
        shutil.rmtree(out, ignore_errors=True)
    return min(times)


def points(config):
    """The sweep's points as collective() calls, with the config's collective settings."""
    overrides = {"topology." + k: v for k, v in config["topology_overrides"].items()}
    for s in config["slices"]:
        topology = podsim.Topology(s["topology"], overrides=overrides)
        for op in config["collectives"]:
            for payload in config["payloads"]:
                yield op, topology, payload, s["partitions"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("podsim", help="the podsim binary (build/podsim)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with open(CONFIG) as f:
        config = json.load(f)
    c = config["collective"]

    def cli(out):
        subprocess.run([args.podsim, "run", CONFIG, "--out", out], check=True,
                       stdout=subprocess.DEVNULL, cwd=SOURCE_DIR)

    def python(out):
        podsim.run_experiment(CONFIG, out)

    def per_point(out):
        for op, topology, payload, partitions in points(config):
            podsim.collective(op, topology, payload, algorithm=c["algorithm"],
                              network=c["network"], overhead_us=c["overhead_us"],
                              partitions=partitions)

    cwd = os.getcwd()
    os.chdir(SOURCE_DIR)
    try:
        t_cli = best(cli, args.repeat)
        t_python = best(python, args.repeat)
        t_points = best(per_point, args.repeat)
    finally:
        os.chdir(cwd)
    print(f"cli     {t_cli:8.3f} s  podsim run (process)")
    print(f"python  {t_python:8.3f} s  podsim.run_experiment   overhead "
          f"{100 * (t_python / t_cli - 1):+.1f}% (target <= +5%)")
    print(f"points  {t_points:8.3f} s  32 x podsim.collective (no files, no plot)")
    return 0 if t_python <= 1.05 * t_cli else 1


if __name__ == "__main__":
    sys.exit(main())
