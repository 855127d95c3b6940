#!/usr/bin/env python3
"""A ring all-reduce on a 4x4 torus, step by step: who sends which piece to whom, when, and
what each link carried. For students: no notebook, just text.

    PYTHONPATH=build/python python3 examples/ring_allreduce_steps.py [--bytes 64KiB]

The 16 partitions (one per chip) form one ring through the torus. Each partition's buffer is
cut into 16 pieces. In the reduce-scatter half (steps 0-14) every partition sends one piece to
its ring successor, which adds it to its own copy; after 15 steps each partition holds one
fully reduced piece. In the all-gather half (steps 15-29) those reduced pieces travel once
more around the ring, copied instead of added. Each step costs one hop latency plus one piece
over one link, and every link of the ring carries 2 x 15/16 of the buffer in all.
"""
import argparse

import podsim


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bytes", default="64KiB", help="per-partition buffer")
    parser.add_argument("--topology", default="torus-4x4")
    args = parser.parse_args()

    topology = podsim.Topology(args.topology)
    n = topology.num_cores
    r = podsim.collective("all-reduce", topology, args.bytes, algorithm="ring", transfers=True)
    network = [t for t in r["transfers"] if not t["local"]]

    # The ring order: follow step 0's sends from partition 0.
    successor = {t["src"]: t["dst"] for t in network if t["step"] == 0}
    ring, p = [0], successor[0]
    while p != 0:
        ring.append(p)
        p = successor[p]
    print(f"ring all-reduce of {r['bytes']} B per partition over {n} partitions of "
          f"{topology.name}")
    print("ring order: " + " -> ".join(map(str, ring)) + " -> 0")
    hops = [len(topology.route_links(a, b)) for a, b in zip(ring, ring[1:] + ring[:1])]
    print(f"ring edges: {sum(h == 1 for h in hops)} of {len(hops)} are one hop "
          f"(longest {max(hops)} hops)\n")

    print(f"{'step':>4} {'phase':<15} {'start us':>9} {'end us':>9} {'sends':>5} "
          f"{'B each':>7}  partition 0 sends")
    for s in r["step_times"]:
        sends = [t for t in network if t["step"] == s["step"]]
        phase = "reduce-scatter" if all(t["reduce"] for t in sends) else "all-gather"
        from0 = [t for t in sends if t["src"] == 0]
        what = "-"
        if from0:
            t = from0[0]
            piece = t["src_offset"] // t["elements"]  # which 1/n of the buffer
            what = f"{t['dst']}: piece {piece} ({'added' if t['reduce'] else 'copied'})"
        print(f"{s['step']:>4} {phase:<15} {s['start_us']:>9.3f} {s['end_us']:>9.3f} "
              f"{len(sends):>5} {sends[0]['bytes']:>7}  {what}")

    links = topology.links()
    used = [(b, links[i]) for i, b in enumerate(r["link_bytes"]) if b > 0]
    print(f"\n{len(used)} of {len(links)} directed links carried bytes; each "
          f"{used[0][0]:.0f} B = 2 x {n - 1}/{n} x {r['bytes']} B")
    print(f"total {r['time_us']:.3f} us = {r['steps']} steps x "
          f"{r['time_us'] / r['steps']:.5f} us; bus bandwidth "
          f"{r['bus_bandwidth_Bps'] / 1e9:.2f} GB/s")


if __name__ == "__main__":
    main()
