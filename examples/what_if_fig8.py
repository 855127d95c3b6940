#!/usr/bin/env python3
"""What if the links or the HBM were faster? Sweeps the ICI link bandwidth and the HBM
bandwidth for the GShard Figure 8 layer pair (an MoE layer and its Transformer layer, 128
experts on the 128 cores of a TPU v3 slice) and prints where the bottleneck moves.

    PYTHONPATH=build/python python3 examples/what_if_fig8.py [--experts 128]

Starts from the shipped Figure 8 calibration (experiments/gshard_fig8.json: effective links of
2.8e10 B/s and 0.25 us per hop, 25 us per collective, the tpu-v3-core device) and scales the two
bandwidths. For each point it prints the step time, the category that takes longest, and the
split between compute and exposed communication; the last table says, per HBM bandwidth, the
link bandwidth beyond which communication stops being the largest part of the step.
"""
import argparse

import podsim

LINK_SCALES = [0.5, 1, 2, 4, 8]
HBM_SCALES = [0.5, 1, 2, 4]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--experts", type=int, default=128,
                        help="experts = cores = groups (a tpu-v3-N preset must exist)")
    args = parser.parse_args()

    link_bandwidth, hop_latency_us, overhead_us = 2.8e10, 0.25, 25  # gshard_fig8.json
    hbm = 450e9  # sim/device/presets/tpu-v3-core.json, per core
    spmd = podsim.Module.moe_layer_pair(args.experts).partition(args.experts)
    topology = f"tpu-v3-{args.experts}"

    print(f"GShard Figure 8 layer pair, {args.experts} experts on {topology}")
    print(f"{'link GB/s':>9} {'HBM GB/s':>9} {'step us':>9} {'compute':>9} {'exposed':>9}  "
          f"largest category")
    crossover = {}
    for h in HBM_SCALES:
        for l in LINK_SCALES:
            r = podsim.simulate(spmd, topology, overrides={
                "topology.link_bandwidth": link_bandwidth * l,
                "topology.hop_latency_us": hop_latency_us,
                "collective_overhead_us": overhead_us,
                "device.hbm_bandwidth": hbm * h,
            })
            top = max(r["categories"], key=lambda c: c["modelled_us"])
            bound = "communication" if top["communication_us"] > top["compute_us"] else "compute"
            print(f"{link_bandwidth * l / 1e9:>9.0f} {hbm * h / 1e9:>9.0f} "
                  f"{r['step_time_us']:>9.0f} {r['compute_time_us']:>9.0f} "
                  f"{r['exposed_communication_us']:>9.0f}  {top['category']} "
                  f"({top['modelled_us']:.0f} us, {bound})")
            if bound == "compute" and h not in crossover:
                crossover[h] = link_bandwidth * l
        print()
    print("where the bottleneck moves off the network:")
    for h in HBM_SCALES:
        where = (f"from {crossover[h] / 1e9:.0f} GB/s per link" if h in crossover
                 else f"not below {link_bandwidth * LINK_SCALES[-1] / 1e9:.0f} GB/s per link")
        print(f"  HBM {hbm * h / 1e9:>5.0f} GB/s: the largest category is compute {where}")


if __name__ == "__main__":
    main()
