#!/usr/bin/env python3
"""podsim run killed with SIGKILL at random moments never leaves a torn result that looks
complete: DIR/status says "running" (whatever else is there), or it says "done" and every file
in DIR is whole (results.json parses, every CSV row has the header's width, the plots end as
their formats end, no temporary file is left).

usage: kill9_test.py PODSIM CONFIG [KILLS]
The first run is not killed: it gives the run's length T and the previous complete results.
Then KILLS runs with --force are each killed at a uniformly random moment in [0, 1.2 T]
(fixed seed, so a failure reproduces).
"""
import csv
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time


def check_done(out):
    """Every file of a run that says done is complete; returns a list of problems."""
    problems = []
    for root, _, files in os.walk(out):
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, out)
            if ".tmp" in name:
                problems.append(f"{rel}: a temporary file beside a done status")
                continue
            with open(path, "rb") as f:
                data = f.read()
            if name.endswith(".json"):
                try:
                    json.loads(data)
                except ValueError as e:
                    problems.append(f"{rel}: not valid JSON ({e})")
            elif name.endswith(".csv"):
                rows = list(csv.reader(data.decode().splitlines()))
                if not rows:
                    problems.append(f"{rel}: empty")
                elif any(len(r) != len(rows[0]) for r in rows):
                    problems.append(f"{rel}: a row with a different number of cells")
                elif not data.endswith(b"\n"):
                    problems.append(f"{rel}: no final newline")
            elif name.endswith(".png"):
                if not data.endswith(b"IEND\xaeB`\x82"):
                    problems.append(f"{rel}: truncated PNG")
            elif name.endswith(".svg"):
                if b"</svg>" not in data[-64:]:
                    problems.append(f"{rel}: truncated SVG")
    return problems


def check(out, when):
    status_path = os.path.join(out, "status")
    if not os.path.exists(status_path):
        # Killed before the status file was first written: nothing else may be there.
        left = os.listdir(out) if os.path.isdir(out) else []
        return [f"no status file but {left}"] if left else [], "none"
    with open(status_path) as f:
        status = f.read()
    first = status.splitlines()[0] if status else ""
    if first == "status: running":
        return [], "running"
    if first == "status: done":
        return check_done(out), "done"
    return [f"status file {status!r} after a kill at {when:.3f} s"], "other"


def main():
    podsim, config = sys.argv[1], sys.argv[2]
    kills = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    rng = random.Random(20261201)
    with tempfile.TemporaryDirectory(prefix="podsim_kill9_") as tmp:
        out = os.path.join(tmp, "out")
        start = time.monotonic()
        subprocess.run([podsim, "run", config, "--out", out], check=True,
                       stdout=subprocess.DEVNULL)
        length = time.monotonic() - start
        problems, state = check(out, length)
        if state != "done" or problems:
            print(f"the uninterrupted run left {state}: {problems}")
            return 1
        seen = {}
        failures = 0
        for k in range(kills):
            when = rng.uniform(0, 1.2 * length)
            p = subprocess.Popen([podsim, "run", config, "--out", out, "--force"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                p.wait(timeout=when)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
                p.wait()
            problems, state = check(out, when)
            seen[state] = seen.get(state, 0) + 1
            print(f"kill {k}: at {when:.3f} s of a {length:.3f} s run: status {state}"
                  + (f": {problems}" if problems else ""))
            failures += bool(problems)
        print(f"{kills} kills: {seen}; {failures} with a torn result")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
