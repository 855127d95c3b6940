#!/usr/bin/env python3
"""Compares the same collectives over pods of equal chip count: a 3D torus, the same torus
twisted (TPU v4), a 3D mesh without wraparound and a 2D torus, and writes a bar plot.

    PYTHONPATH=build/python python3 examples/compare_topologies.py --out out/compare

Each pod has 128 chips of one core with the v4 preset's links (4.5e10 B/s per direction, 1 us
per hop). The table gives the simulated time of each collective (flow model, default
algorithm) and the busiest link's utilisation; the plot (compare_topologies.png) draws the
times. Which pod wins, and by how much, is a question of the algorithm as much as of the wires:
try --algorithm ring-bidir or --network packet.
"""
import argparse
import copy
import os
import shutil
import subprocess
import sys

import podsim


def pods():
    twisted = podsim.Topology("tpu-v4-256-twisted").config
    torus = copy.deepcopy(twisted)
    del torus["twist"]
    torus["name"] = "torus-4x4x8"
    mesh = copy.deepcopy(torus)
    mesh["wraparound"] = [False, False, False]
    mesh["name"] = "mesh-4x4x8"
    torus2d = copy.deepcopy(torus)
    torus2d.update(name="torus-8x16", dims=[8, 16], wraparound=[True, True])
    twisted = dict(twisted, name="twisted-4x4x8")
    return [podsim.Topology(c) for c in (torus, twisted, mesh, torus2d)]


def plot(rows, collectives, names, path):
    """A grouped bar chart with gnuplot (podsim's plotting tool); False if it is missing."""
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        return False
    data = path + ".dat"
    with open(data, "w") as f:
        f.write("collective " + " ".join(names) + "\n")
        for c in collectives:
            f.write(c + " " + " ".join(f"{rows[(c, n)]['time_us']:.3f}" for n in names) + "\n")
    columns = ", ".join(
        f"'{data}' using {i + 2}:xtic(1) title columnheader({i + 2})" for i in range(len(names)))
    script = (
        "set terminal pngcairo size 900,500\n"
        f"set output '{path}'\n"
        "set style data histograms\nset style histogram clustered gap 1\n"
        "set style fill solid 0.8 border -1\nset boxwidth 0.9\n"
        "set ylabel 'time (us, log scale)'\nset logscale y\nset key top left\nset grid ytics\n"
        "set title '128 chips, 8 MiB per partition (podsim, flow model)'\n"
        f"plot {columns}\n")
    subprocess.run([gnuplot], input=script, text=True, check=True)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="out/compare_topologies")
    parser.add_argument("--bytes", default="8MiB")
    parser.add_argument("--algorithm", default="default")
    parser.add_argument("--network", default="flow")
    args = parser.parse_args()

    collectives = ["all-reduce", "all-gather", "all-to-all"]
    topologies = pods()
    names = [t.name for t in topologies]
    rows = {}
    print(f"{'collective':<12}" + "".join(f"{n:>18}" for n in names))
    for c in collectives:
        line = f"{c:<12}"
        for t in topologies:
            r = podsim.collective(c, t, args.bytes, algorithm=args.algorithm,
                                  network=args.network)
            rows[(c, t.name)] = r
            line += f"{r['time_us']:>11.1f} us {100 * r['max_link_utilization']:>3.0f}%"
        print(line)
    print("(time, and the busiest link's utilisation)")
    for t in topologies:
        d = t.to_dict()
        print(f"{t.name:<14} diameter {d.get('diameter_hops', '?'):>2} hops, "
              f"mean {d.get('mean_hops', 0):.2f} hops, {t.num_links} links")

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "compare_topologies.png")
    if plot(rows, collectives, names, path):
        if os.path.getsize(path) == 0:
            sys.exit(f"error: gnuplot wrote an empty {path}")
        print(f"wrote {path}")
    else:
        print("note: gnuplot not found; no plot")


if __name__ == "__main__":
    main()
