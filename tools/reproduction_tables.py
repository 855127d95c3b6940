#!/usr/bin/env python3
"""The tables of docs/reproduction.md, made from the results.csv of podsim's runs.

    tools/reproduction_tables.py --fig9 DIR --fig8 DIR --table1 DIR --table3 DIR --fig7 DIR
        --dense_baseline DIR --spatial_partitioning DIR
        [--update docs/reproduction.md | --check docs/reproduction.md]

Each DIR is the output of `podsim run experiments/gshard_<name>.json --out DIR` (of
experiments/<name>.json for spatial_partitioning). The dense baseline's comparison with
MoE(2048E, 36L) takes the MoE core-years from the Table 3 run when --table3 is given. Without
--update or --check the tables are printed. In the document each table stands between
`<!-- generated: NAME -->` and `<!-- end generated: NAME -->`; --update rewrites those blocks
and nothing else, --check exits 1 naming each block that differs from the runs. Errors are
podsim's against the paper: (podsim - paper) / paper, signed.
"""

import argparse
import csv
import os
import sys

TABLES = ("fig9", "fig8", "table1", "table3", "fig7", "dense_baseline", "spatial_partitioning")

# The paper's T(96L) and MoE(2048E, 36L) core-years (its section 5 and Table 3).
PAPER_DENSE_CORE_YEARS = 235.5
PAPER_MOE_CORE_YEARS = 22.4


def read_csv(run_dir):
    path = os.path.join(run_dir, "results.csv")
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"reproduction_tables: {path}: {e.strerror}")


def number(cell):
    return None if cell in ("", None) else float(cell)


def error_pct(podsim, paper):
    """'+10.0%' for podsim 110 against paper 100; '-' without a paper value."""
    if podsim is None or paper is None or paper == 0:
        return "-"
    return f"{(podsim - paper) / paper * 100:+.1f}%"


def fixed(v, decimals):
    return "-" if v is None else f"{v:.{decimals}f}"


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def fig9_table(rows):
    """Per slice, each collective and payload: podsim's time, the paper's and the error."""
    series = []  # (collective, payload_bytes) in first-seen order
    by_key = {}
    for r in rows:
        key = (r["collective"], int(r["payload_bytes"]))
        if key not in series:
            series.append(key)
        by_key[(key, int(r["partitions"]))] = r
    with_paper = {k for k in series
                  if any(number(r["paper_us"]) is not None
                         for (kk, _), r in by_key.items() if kk == k)}
    header = ["partitions"]
    for c, b in series:
        name = f"{c} {b // 2**20} MiB"
        header += [name + " podsim us"] + ([name + " paper us", "error"] if (c, b) in with_paper
                                            else [])
    table = []
    for p in sorted({p for (_, p) in by_key}):
        row = [str(p)]
        for k in series:
            r = by_key.get((k, p))
            podsim = number(r["time_us"]) if r and r["status"] == "ok" else None
            paper = number(r["paper_us"]) if r else None
            row.append(fixed(podsim, 1) if r is None or r["status"] == "ok" else r["status"])
            if k in with_paper:
                row += [fixed(paper, 0), error_pct(podsim, paper)]
        table.append(row)
    return markdown(header, table)


def fig8_table(rows):
    """Categories down, the paper's bars and podsim's per size across; the error of podsim's
    modelled bar against the paper's measured one where the paper has the size."""
    sizes = []
    cats = []
    cell = {}
    for r in rows:
        e = int(r["experts"])
        if e not in sizes:
            sizes.append(e)
        if r["category"] not in cats:
            cats.append(r["category"])
        cell[(e, r["category"])] = r
    paper_size = next((e for e in sizes
                       if any(number(cell[(e, c)]["paper_measured_us"]) is not None
                              for c in cats if (e, c) in cell)), None)
    header = ["category"]
    if paper_size is not None:
        header += [f"paper {paper_size}E roofline", f"paper {paper_size}E measured"]
    for e in sizes:
        status = cell[(e, cats[0])]["status"]
        note = "" if status == "ok" else f" ({status})"
        header += [f"{e}E roofline{note}", f"{e}E modelled{note}"]
    if paper_size is not None:
        header.append(f"{paper_size}E modelled vs measured")
    table = []
    for c in cats:
        row = [c]
        if paper_size is not None:
            p = cell[(paper_size, c)]
            row += [fixed(number(p["paper_roofline_us"]), 0),
                    fixed(number(p["paper_measured_us"]), 0)]
        for e in sizes:
            r = cell.get((e, c))
            row += [fixed(number(r["roofline_us"]) if r else None, 0),
                    fixed(number(r["modelled_us"]) if r else None, 0)]
        if paper_size is not None:
            p = cell[(paper_size, c)]
            row.append(error_pct(number(p["modelled_us"]), number(p["paper_measured_us"])))
        table.append(row)
    out = markdown(header, table)
    # The AllToAll's share of each size's modelled total, and the total's growth.
    shares = []
    for e in sizes:
        total = number(cell[(e, "total")]["modelled_us"]) if (e, "total") in cell else None
        a2a = (number(cell[(e, "dispatch_combine")]["modelled_us"])
               if (e, "dispatch_combine") in cell else None)
        if total and a2a is not None:
            shares.append(f"{e}E {a2a / total * 100:.1f}%")
    if shares:
        out += "\n\nAllToAll (dispatch_combine) share of the modelled total: " + ", ".join(shares)
        first, last = sizes[0], sizes[-1]
        if (first, "total") in cell and (last, "total") in cell and first != last:
            growth = (number(cell[(last, "total")]["modelled_us"])
                      / number(cell[(first, "total")]["modelled_us"]))
            out += f"; total growth {first}E to {last}E: {growth:.2f}x."
        else:
            out += "."
    return out


def batch(tokens):
    t = int(tokens)
    return f"{t // 2**20}M" if t % 2**20 == 0 else f"{t // 2**10}K"


def remat(r):
    return r["remat"] if r["remat"] == "none" else f"{r['remat']} ({r['recompute_pct']}%)"


def table3_table(rows):
    header = ["model", "cores", "batch", "podsim steps/s", "paper", "error", "remat (recompute)",
              "peak GiB", "MFU", "podsim core-years", "paper core-years", "error"]
    table = []
    for r in rows:
        if r["status"] != "ok":
            table.append([r["model"], r["cores"], batch(r["batch_tokens"]), r["status"]]
                         + ["-"] * (len(header) - 4))
            continue
        sps, paper_sps = number(r["steps_per_s"]), number(r["paper_steps_per_s"])
        cy, paper_cy = number(r["core_years"]), number(r["paper_core_years"])
        table.append([r["model"], r["cores"], batch(r["batch_tokens"]), fixed(sps, 3),
                      fixed(paper_sps, 2), error_pct(sps, paper_sps), remat(r),
                      fixed(number(r["peak_gib"]), 2), fixed(number(r["mfu"]) * 100, 1) + "%",
                      fixed(cy, 2), fixed(paper_cy, 1), error_pct(cy, paper_cy)])
    return markdown(header, table)


def fig7_table(rows):
    gb = 2**30 / 1e9  # GiB -> GB
    header = ["model", "weights GiB", "activations GiB", "peak GiB", "remat (recompute)",
              "peak without remat GiB", "paper weights GB", "error", "paper activations GB",
              "error"]
    table = []
    for r in rows:
        if r["status"] != "ok":
            table.append([r["model"], r["status"]] + ["-"] * (len(header) - 2))
            continue
        w, a = number(r["weights_gib"]), number(r["activations_gib"])
        pw, pa = number(r["paper_weights_gb"]), number(r["paper_activations_gb"])
        table.append([r["model"], fixed(w, 3), fixed(a, 3), fixed(number(r["peak_gib"]), 3),
                      remat(r), fixed(number(r["no_remat_peak_gib"]), 3), fixed(pw, 2),
                      error_pct(w * gb, pw), fixed(pa, 2), error_pct(a * gb, pa)])
    return markdown(header, table)


def table1_table(rows):
    """Parameters: podsim's exact count against the paper's (rounded) one, in billions."""
    header = ["model", "podsim params B", "paper B", "error", "expert params B",
              "replicated params B", "per-core weights GiB"]
    table = []
    for r in rows:
        params, paper = number(r["params"]), number(r["paper_billion"])
        table.append([r["model"], fixed(params / 1e9, 2), fixed(paper, 1),
                      error_pct(params / 1e9, paper), fixed(number(r["expert_params"]) / 1e9, 2),
                      fixed(number(r["replicated_params"]) / 1e9, 2),
                      fixed(number(r["per_core_weight_gib"]), 2)])
    return markdown(header, table)


def dense_table(rows, table3_rows=None):
    """The GPipe grid, then the fastest point that fits against the paper's T(96L), and the
    core-years ratio to MoE(2048E, 36L) (podsim's from the Table 3 run, when given)."""
    header = ["stages", "micro-batches", "replicas", "micro-batch tokens", "step s", "bubble",
              "peak GiB", "MFU", "core-years", "status"]
    table, best = [], None
    for r in rows:
        if r["status"] != "ok":
            table.append([r["stages"], r["micro_batches"], r["replicas"] or "-",
                          r["micro_batch_tokens"] or "-", "-", "-", r["peak_gib"] or "-", "-",
                          "-", r["status"]])
            continue
        step = number(r["step_s"])
        if best is None or step < number(best["step_s"]):
            best = r
        table.append([r["stages"], r["micro_batches"], r["replicas"], r["micro_batch_tokens"],
                      fixed(step, 3), fixed(number(r["bubble"]) * 100, 1) + "%",
                      fixed(number(r["peak_gib"]), 2), fixed(number(r["mfu"]) * 100, 1) + "%",
                      fixed(number(r["core_years"]), 1), r["status"]])
    out = markdown(header, table)
    if best is None:
        return out + "\n\nNo point fits."
    cy = number(best["core_years"])
    summary = [["T(96L) core-years", fixed(cy, 1), fixed(PAPER_DENSE_CORE_YEARS, 1),
                error_pct(cy, PAPER_DENSE_CORE_YEARS)]]
    moe = next((m for m in table3_rows or [] if m["model"] == "2048E,36L" and m["status"] == "ok"),
               None)
    if moe is not None:
        mcy = number(moe["core_years"])
        ratio, paper_ratio = cy / mcy, PAPER_DENSE_CORE_YEARS / PAPER_MOE_CORE_YEARS
        summary.append(["MoE(2048E, 36L) core-years", fixed(mcy, 1),
                        fixed(PAPER_MOE_CORE_YEARS, 1), error_pct(mcy, PAPER_MOE_CORE_YEARS)])
        summary.append(["dense / MoE core-years", fixed(ratio, 2), fixed(paper_ratio, 2),
                        error_pct(ratio, paper_ratio)])
    best_name = f"fastest point ({best['stages']} stages x {best['micro_batches']} micro-batches)"
    return out + "\n\n" + markdown([best_name, "podsim", "paper", "error"], summary)


def spatial_table(rows):
    header = ["series", "cores", "mesh", "image", "tile", "step ms", "compute ms",
              "CollectivePermutes", "halo MiB", "AllReduce MiB", "peak GiB",
              "one image on one core GiB", "status"]
    table = []
    for r in rows:
        ok = r["status"] == "ok"
        table.append([r["series"], r["partitions"], r["mesh"], r["image"], r["tile"],
                      r["step_ms"] if ok else "-", r["compute_ms"] if ok else "-",
                      r["permutes"] or "-", r["halo_mib"] or "-", r["allreduce_mib"] or "-",
                      r["peak_gib"] or "-", r["one_image_gib"] or "-", r["status"]])
    return markdown(header, table)


def make_tables(dirs):
    makers = {"fig9": fig9_table, "fig8": fig8_table, "table1": table1_table,
              "table3": table3_table, "fig7": fig7_table, "spatial_partitioning": spatial_table}
    tables = {}
    for name, d in dirs.items():
        if name == "dense_baseline":
            table3 = read_csv(dirs["table3"]) if "table3" in dirs else None
            tables[name] = dense_table(read_csv(d), table3)
        else:
            tables[name] = makers[name](read_csv(d))
    return tables


def splice(text, tables):
    """`text` with each generated block replaced by its table; (new text, names not found)."""
    missing = []
    for name, table in tables.items():
        begin, end = f"<!-- generated: {name} -->", f"<!-- end generated: {name} -->"
        i, j = text.find(begin), text.find(end)
        if i < 0 or j < i:
            missing.append(name)
            continue
        text = text[:i + len(begin)] + "\n" + table + "\n" + text[j:]
    return text, missing


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in TABLES:
        ap.add_argument(f"--{name}", metavar="DIR", help=f"the output of experiments/gshard_{name}.json")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--update", metavar="DOC", help="rewrite DOC's generated blocks")
    mode.add_argument("--check", metavar="DOC", help="exit 1 if DOC's blocks differ")
    args = ap.parse_args(argv)
    dirs = {n: getattr(args, n) for n in TABLES if getattr(args, n)}
    if not dirs:
        ap.error("give at least one of --" + ", --".join(TABLES))
    tables = make_tables(dirs)
    doc = args.update or args.check
    if not doc:
        for name, table in tables.items():
            print(f"<!-- generated: {name} -->\n{table}\n<!-- end generated: {name} -->\n")
        return 0
    with open(doc) as f:
        text = f.read()
    new, missing = splice(text, tables)
    if missing:
        sys.exit(f"reproduction_tables: {doc} has no generated block for {', '.join(missing)}")
    if args.update:
        if new != text:
            tmp = doc + ".tmp"
            with open(tmp, "w") as f:
                f.write(new)
            os.replace(tmp, doc)
        print(f"reproduction_tables: {doc}: {len(tables)} table(s) written")
        return 0
    stale = [n for n in tables if splice(text, {n: tables[n]})[0] != text]
    if stale:
        print(f"reproduction_tables: {doc} is out of date for {', '.join(stale)}; rerun the "
              f"experiments and tools/reproduction_tables.py --update {doc}")
        return 1
    print(f"reproduction_tables: {doc}: {len(tables)} table(s) match the runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
