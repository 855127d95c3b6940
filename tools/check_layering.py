#!/usr/bin/env python3
"""Checks every #include "folder/..." of the tree against the layering table of DESIGN.md.

A folder may include only the folders listed for it (and itself). Exits 1 listing each include
that runs the wrong way, as FILE:LINE: FOLDER may not include TARGET.
"""
import os
import re
import sys

# folder -> the folders it may include besides itself (DESIGN.md, "Layout").
SIM = ["sim/engine", "sim/network", "sim/collectives", "sim/device", "sim/program"]
ALLOWED = {
    "base": [],
    "ir": ["base"],
    "partitioner": ["base", "ir"],
    "topologies": ["base"],
    "sim/engine": ["base"],
    "sim/network": ["base", "topologies", "sim/engine"],
    "sim/collectives": ["base", "topologies", "sim/engine", "sim/network"],
    "sim/device": ["base", "ir"],
    "sim/program": ["base", "ir", "topologies"] + SIM,
    "models": ["base", "ir", "partitioner"],
    "report": ["base", "ir", "topologies"] + SIM,
    "pipeline": ["base", "ir", "partitioner", "topologies", "models", "report"] + SIM,
    "experiments": ["base", "ir", "partitioner", "topologies", "models", "report", "pipeline"]
    + SIM,
    "cli": ["base", "ir", "partitioner", "topologies", "models", "report", "pipeline",
            "experiments"] + SIM,
    # The Python module binds the library; it shares the CLI's module file I/O.
    "python": ["base", "ir", "partitioner", "topologies", "models", "report", "pipeline",
               "experiments", "cli"] + SIM,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(path):
    """The layering folder of a repository-relative path, or None."""
    for folder in sorted(ALLOWED, key=len, reverse=True):
        if path == folder or path.startswith(folder + "/"):
            return folder
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(__file__))
    bad = []
    checked = 0
    for folder in ALLOWED:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                if folder_of(rel) != folder:
                    continue  # a subfolder with its own row
                with open(path, encoding="utf-8") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        checked += 1
                        target = folder_of(m.group(1))
                        if target is None or target == folder or target in ALLOWED[folder]:
                            continue
                        bad.append(f"{rel}:{lineno}: {folder} may not include {m.group(1)}")
    for b in bad:
        print(b)
    print(f"layering: {checked} includes checked, {len(bad)} against the table")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
