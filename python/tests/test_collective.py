"""podsim.collective: times, per-link bytes and transfers against formulas derived by hand."""
import subprocess
import sys

import pytest

import podsim

MIB = 1 << 20


def ring(n, bandwidth=1e11, latency_us=1.0):
    """A 1D torus of n chips, one core each: a ring whose neighbours are one hop apart."""
    return {"kind": "torus", "name": f"ring-{n}", "dims": [n], "wraparound": [True],
            "cores_per_chip": 1, "link_bandwidth": bandwidth, "hop_latency_us": latency_us}


def ring_all_reduce_us(n, payload, bandwidth, latency_us):
    # A unidirectional ring all-reduce: 2(n-1) steps (reduce-scatter, then all-gather), each
    # sending one 1/n piece one hop: a hop latency plus the piece over one link.
    return 2 * (n - 1) * (latency_us + payload / n / bandwidth * 1e6)


@pytest.mark.parametrize("network", ["flow", "packet", "analytic"])
def test_ring_all_reduce_time(network):
    r = podsim.collective("all-reduce", ring(8), MIB, algorithm="ring", network=network)
    expected = ring_all_reduce_us(8, MIB, 1e11, 1.0)
    # The packet model pipelines a piece's packets over its one hop: within a few packet times.
    assert r["time_us"] == pytest.approx(expected, rel=0.02 if network == "packet" else 1e-9)
    assert (r["algorithm"], r["partitions"], r["steps"]) == ("ring", 8, 14)


def test_link_bytes_and_utilization():
    n, payload = 8, 4 * MIB
    t = podsim.Topology(ring(n))
    r = podsim.collective("all-reduce", t, payload, algorithm="ring")
    # Every ring edge carries 2(n-1) pieces of payload/n; the other direction carries nothing.
    per_edge = 2 * (n - 1) * payload / n
    loaded = [b for b in r["link_bytes"] if b > 0]
    assert loaded == [per_edge] * n
    assert len(r["link_bytes"]) == t.num_links == 2 * n
    seconds = r["time_us"] * 1e-6
    for l, b, u in zip(t.links(), r["link_bytes"], r["link_utilization"]):
        assert u == pytest.approx(b / (l["bandwidth_bytes_per_s"] * seconds))
    assert r["busiest_link_bytes"] == per_edge
    assert r["link_bytes"][r["busiest_link"]] == per_edge


def test_link_arrays_are_numpy_or_lists():
    np = pytest.importorskip("numpy")
    r = podsim.collective("all-gather", "torus-4x4", "64KiB")
    assert isinstance(r["link_bytes"], np.ndarray) and r["link_bytes"].dtype == np.float64
    # Without NumPy (its import fails) the same figures come back as lists.
    code = ("import sys; sys.modules['numpy'] = None; import podsim; "
            "r = podsim.collective('all-gather', 'torus-4x4', '64KiB'); "
            "print(type(r['link_bytes']).__name__, sum(r['link_bytes']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == "list"
    assert float(out[1]) == pytest.approx(float(r["link_bytes"].sum()))


def test_transfers_and_steps():
    n, payload = 4, 64 * 1024
    r = podsim.collective("all-reduce", ring(n), payload, algorithm="ring", transfers=True)
    network = [t for t in r["transfers"] if not t["local"]]
    # n partitions each send one piece per step, 2(n-1) steps.
    assert len(network) == r["network_transfers"] == n * 2 * (n - 1)
    assert all(t["bytes"] == payload // n for t in network)
    # The reduce-scatter half reduces into its destination, the all-gather half copies.
    assert sum(t["reduce"] for t in network) == n * (n - 1)
    step_us = 1.0 + payload / n / 1e11 * 1e6
    for s in r["step_times"]:
        assert s["end_us"] == pytest.approx((s["step"] + 1) * step_us)
        assert s["transfers"] == n
    for t in network:
        assert t["end_us"] - t["start_us"] == pytest.approx(step_us)
    assert "explain" not in r


def test_arguments_and_overrides():
    base = podsim.collective("all-reduce", ring(8), "1MiB", algorithm="ring")
    assert podsim.collective("all-reduce", ring(8), MIB, algorithm="ring")["time_us"] == \
        base["time_us"]
    faster = podsim.collective("all-reduce", ring(8), MIB, algorithm="ring",
                               overrides={"topology.link_bandwidth": 2e11})
    assert faster["time_us"] == pytest.approx(ring_all_reduce_us(8, MIB, 2e11, 1.0))
    assert faster["config"]["topology"]["link_bandwidth"] == 2e11
    with_overhead = podsim.collective("all-reduce", ring(8), MIB, algorithm="ring",
                                      overhead_us=25)
    assert with_overhead["time_us"] == pytest.approx(base["time_us"] + 25)
    # A subgroup of the first 4 cores: a 4-partition ring over 3 hops and one 3-hop way back.
    sub = podsim.collective("all-gather", ring(8), MIB, partitions=4)
    assert sub["partitions"] == 4
    grouped = podsim.collective("all-gather", ring(8), MIB, groups=[[0, 1, 2, 3], [4, 5, 6, 7]])
    assert grouped["partitions"] == 4
    permute = podsim.collective("collective-permute", ring(8), MIB, pairs=[[0, 1], [1, 0]])
    assert permute["partitions"] == 2
    # One hop, one message of MIB: a latency plus the bytes over one link.
    assert permute["time_us"] == pytest.approx(1.0 + MIB / 1e11 * 1e6)
    explained = podsim.collective("all-reduce", "torus-4x4", "64KiB", explain=True)
    assert "step" in explained["explain"]


def test_chunks_dtype_and_network_options():
    one = podsim.collective("all-reduce", ring(8), MIB, algorithm="ring")
    two = podsim.collective("all-reduce", ring(8), MIB, algorithm="ring", chunks=2)
    # Two chunks per piece: twice the transfers, each half the bytes.
    assert two["network_transfers"] == 2 * one["network_transfers"] == 2 * 8 * 14
    half = podsim.collective("all-reduce", ring(8), MIB, algorithm="ring", dtype_bytes=2,
                             transfers=True)
    # 1 MiB of 2-byte elements cut in 8 pieces: 65536 elements a piece.
    assert {t["elements"] for t in half["transfers"] if not t["local"]} == {MIB // 2 // 8}
    assert half["time_us"] == pytest.approx(one["time_us"])
    packet = podsim.collective("all-reduce", ring(8), MIB, algorithm="ring", network="packet",
                               network_options={"packet_bytes": 4096})
    assert packet["config"]["network_options"]["packet_bytes"] == 4096
    with pytest.raises(podsim.ConfigError, match="network_options.packet_bytes"):
        podsim.collective("all-reduce", ring(8), MIB, network="packet",
                          network_options={"packet_bytes": 0})


def test_same_answer_as_the_cli_json(source_dir):
    import json
    import os
    binary = os.environ.get("PODSIM_BIN")
    if not binary:
        pytest.skip("PODSIM_BIN is not set")
    cli = json.loads(subprocess.run(
        [binary, "collective", "--op", "all-to-all", "--bytes", "2MiB", "--topology",
         "tpu-v3-32", "--json"], capture_output=True, text=True, check=True).stdout)
    r = podsim.collective("all-to-all", "tpu-v3-32", "2MiB")
    for key, value in cli.items():
        assert r[key] == value, key


def test_errors_carry_the_cli_message(cli_error):
    with pytest.raises(podsim.ConfigError) as e:
        podsim.collective("all-sum", "torus-4x4")
    assert str(e.value) == cli_error("collective", "--op", "all-sum", "--topology", "torus-4x4")
    with pytest.raises(podsim.Error) as e:
        podsim.collective("all-reduce", "torus-4x4", partitions=17)
    assert str(e.value) == cli_error("collective", "--op", "all-reduce", "--topology",
                                     "torus-4x4", "--partitions", "17")
    with pytest.raises(podsim.ConfigError):
        podsim.collective("all-reduce", "torus-4x4", "8 parsecs")
    with pytest.raises(TypeError):
        podsim.collective("all-reduce", "torus-4x4", object())
