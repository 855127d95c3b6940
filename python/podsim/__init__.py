"""podsim from Python: topologies, collectives, modules, simulations and experiment configs.

    import podsim
    t = podsim.Topology("tpu-v3-128")
    r = podsim.collective("all-to-all", t, "8MiB")
    print(r["time_us"], r["busiest_link"])

The functions bind podsim's C++ library (the same code as the `podsim` CLI); docs/python.md
lists them. Configs are dicts with the keys of docs/config.md, results are dicts with the keys
the CLI's --json prints, and errors raise podsim.Error (podsim.ConfigError for a bad config
value) with the message the CLI prints.
"""
import os as _os

from ._podsim import *  # noqa: F401,F403  (the bindings)
from ._podsim import __version__, set_data_dir as _set_data_dir


def _find_data_dir():
    """share/podsim beside the package: build/share/podsim from build/python/podsim, or
    <prefix>/share/podsim from <prefix>/lib/python3.X/dist-packages/podsim."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    for up in ("../..", "../../../.."):
        candidate = _os.path.normpath(_os.path.join(here, up, "share", "podsim"))
        if _os.path.isdir(candidate):
            return candidate
    return ""


_set_data_dir(_find_data_dir())

# Show the bindings as podsim.X (not podsim._podsim.X) in reprs and tracebacks.
for _name in ("Error", "ConfigError", "Topology", "Module"):
    globals()[_name].__module__ = "podsim"
