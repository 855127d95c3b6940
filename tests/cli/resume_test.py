#!/usr/bin/env python3
"""A sweep killed with SIGKILL and resumed (podsim run --resume) ends with exactly the results a
clean run writes: results.csv and results.json byte for byte, and a points log with every point
once.

usage: resume_test.py PODSIM CONFIG [KILLS]
The clean run gives the reference results and the run's length T. Then one directory is resumed
again and again, each run killed at a uniformly random moment in [0, T/2] (fixed seed), KILLS
times, and a last run with --resume finishes it. The test fails if no kill landed while points
were still missing (it would test nothing).
"""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time


def log_indices(out):
    path = os.path.join(out, "points.jsonl")
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        data = f.read()
    indices = []
    for line in data.split(b"\n")[:-1]:  # a torn last line has no newline
        indices.append(json.loads(line)["index"])
    return indices


def main():
    podsim, config = sys.argv[1], sys.argv[2]
    kills = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    rng = random.Random(20261204)
    with tempfile.TemporaryDirectory(prefix="podsim_resume_") as tmp:
        clean, out = os.path.join(tmp, "clean"), os.path.join(tmp, "out")
        start = time.monotonic()
        subprocess.run([podsim, "run", config, "--out", clean], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        length = time.monotonic() - start
        total = len(log_indices(clean))
        mid_run = 0
        for k in range(kills):
            when = rng.uniform(0, length / 2)
            p = subprocess.Popen([podsim, "run", config, "--out", out, "--resume"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                p.wait(timeout=when)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
                p.wait()
            done = log_indices(out)
            if len(done) != len(set(done)):
                print(f"kill {k}: a point logged twice: {sorted(done)}")
                return 1
            mid_run += 0 < len(done) < total
            print(f"kill {k} at {when:.3f} s of {length:.3f} s: {len(done)}/{total} points logged")
        subprocess.run([podsim, "run", config, "--out", out, "--resume"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        failures = 0
        for name in ("results.csv", "results.json", "status"):
            with open(os.path.join(clean, name), "rb") as a, open(os.path.join(out, name), "rb") as b:
                if a.read() != b.read():
                    print(f"{name}: the resumed run's differs from the clean run's")
                    failures += 1
        done = log_indices(out)
        if sorted(done) != list(range(total)):
            print(f"points log: {sorted(done)}, not each of the {total} points once")
            failures += 1
        if mid_run == 0:
            print("no kill landed while points were missing: the test exercised nothing")
            failures += 1
        print(f"{kills} kills, {mid_run} mid-run; {failures} failure(s)")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
