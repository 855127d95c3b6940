"""Shared fixtures of the Python tests (CTest runs them with PYTHONPATH=build/python and
PODSIM_BIN=build/podsim; docs/python.md)."""
import os
import subprocess

import pytest

SOURCE_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture
def source_dir():
    return SOURCE_DIR


@pytest.fixture
def cli_error():
    """Runs the podsim CLI with the given arguments, expects it to fail, and returns the message
    it printed after "podsim <command>: error: " (the Python exception must carry the same)."""
    binary = os.environ.get("PODSIM_BIN")
    if not binary:
        pytest.skip("PODSIM_BIN is not set (CTest sets it to the podsim binary)")

    def run(*args):
        p = subprocess.run([binary, *args], capture_output=True, text=True, cwd=SOURCE_DIR)
        assert p.returncode != 0, p.stdout
        line = p.stderr.strip().splitlines()[-1]
        prefix = f"podsim {args[0]}: error: "
        assert line.startswith(prefix), line
        return line[len(prefix):]

    return run
