"""podsim.Module and podsim.simulate: costs, partitioning and step times derived by hand."""
import json
import os
import threading

import pytest

import podsim

N = 1 << 20
ADD = f"""HloModule add
ENTRY %main {{
  %a = f32[{N}] parameter(0)
  %b = f32[{N}] parameter(1)
  ROOT %c = f32[{N}] add(%a, %b)
}}
"""
DOT = """HloModule dot
ENTRY %main {
  %x = f32[8,16] parameter(0), sharding={devices=[4,1]<=[4]}
  %w = f32[16,4] parameter(1), sharding={replicated}
  ROOT %y = f32[8,4] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def device_preset(source_dir, name="tpu-v3-core"):
    with open(os.path.join(source_dir, "sim", "device", "presets", name + ".json")) as f:
        return json.load(f)


def test_parse_print_cost():
    m = podsim.Module.parse(DOT)
    assert (m.name, m.instruction_count) == ("dot", 3)
    cost = m.cost()
    # A [8,16] x [16,4] matmul: 2 * 8 * 16 * 4 multiply-adds counted as flops.
    assert cost["total"]["flops"] == 2 * 8 * 16 * 4
    by_name = {row["instruction"]: row for row in cost["instructions"]}
    assert by_name["y"]["opcode"] == "dot"
    assert podsim.Module.parse(m.text()).text() == m.text()


def test_save_and_load_text_and_proto(tmp_path):
    m = podsim.Module.parse(DOT)
    for name in ("m.hlo", "m.pb"):
        path = str(tmp_path / name)
        m.save(path)
        assert podsim.Module.load(path).text() == m.text()


def test_partition_splits_the_batch():
    spmd = podsim.Module.parse(DOT).partition(4)
    # x split 4 ways on dim 0: each partition holds 8/4 rows and computes its own [2,4] block.
    text = spmd.text()
    assert "f32[2,16] parameter(0)" in text
    assert "f32[2,4] dot(" in text
    assert spmd.cost()["total"]["flops"] == 2 * 2 * 16 * 4
    assert podsim.Module.parse(DOT).partition("2x2").text() == text
    assert podsim.Module.parse(DOT).partition([4]).text() == text


def test_memory_bound_step_time(source_dir):
    device = device_preset(source_dir)
    m = podsim.Module.parse(ADD)
    r = podsim.simulate(m, "torus-4x4", mesh=1)
    # One elementwise add: read 2 x 4 MiB, write 4 MiB at the HBM bandwidth, plus the op overhead.
    expected = device["op_overhead_us"] + 3 * 4 * N / device["hbm_bandwidth"] * 1e6
    assert r["step_time_us"] == pytest.approx(expected)
    assert r["memory"]["peak_bytes"] == 3 * 4 * N
    faster = podsim.simulate(m, "torus-4x4", mesh=1,
                             overrides={"device.hbm_bandwidth": 2 * device["hbm_bandwidth"]})
    assert faster["step_time_us"] == pytest.approx(
        device["op_overhead_us"] + 3 * 4 * N / (2 * device["hbm_bandwidth"]) * 1e6)
    as_dict = podsim.simulate(m, "torus-4x4", mesh=1,
                              device=dict(device, hbm_bandwidth=2 * device["hbm_bandwidth"]))
    assert as_dict["step_time_us"] == faster["step_time_us"]


def test_fusion_keeps_the_intermediate_out_of_hbm(source_dir):
    device = device_preset(source_dir)
    m = podsim.Module.parse(f"""HloModule chain
ENTRY %main {{
  %a = f32[{N}] parameter(0)
  %b = f32[{N}] parameter(1)
  %c = f32[{N}] add(%a, %b)
  ROOT %d = f32[{N}] negate(%c)
}}""")
    hbm, overhead = device["hbm_bandwidth"], device["op_overhead_us"]
    # Fused: one kernel reads a and b and writes d (12 B per element). Unfused: the add reads
    # 8 B and writes c, 4 B; the negate reads c and writes d, 8 B: 20 B and two kernels.
    fused = podsim.simulate(m, "torus-4x4", mesh=1)
    assert fused["step_time_us"] == pytest.approx(overhead + 12 * N / hbm * 1e6)
    unfused = podsim.simulate(m, "torus-4x4", mesh=1, fusion=False)
    assert unfused["step_time_us"] == pytest.approx(2 * overhead + 20 * N / hbm * 1e6)


def test_options_reach_the_config():
    m = podsim.Module.parse(DOT)
    r = podsim.simulate(m, "tpu-v3-8", mesh=4, network="analytic", async_collectives=False)
    assert r["config"]["network"]["model"] == "analytic"
    assert r["config"]["async_collectives"] is False
    assert r["config"]["num_partitions"] == 4
    assert "tpu-v3-core" in podsim.device_presets()
    assert repr(m) == "<podsim.Module dot: 3 instructions>"
    assert str(m) == m.text()


def test_simulate_partitions_and_checks(tmp_path):
    m = podsim.Module.parse(DOT)
    trace = str(tmp_path / "t.json")
    r = podsim.simulate(m, "tpu-v3-8", mesh=4, functional=True, trace=trace)
    assert r["partitioned"] is True
    assert r["num_partitions"] == 4
    assert r["check"]["ok"] is True and r["check"]["max_error_vs_interpreter"] == 0
    assert any("partitioned dot for 4 partitions" in n for n in r["notes"])
    with open(trace) as f:
        assert json.load(f)["traceEvents"]
    # The module given is not changed by partitioning it.
    assert m.text() == podsim.Module.parse(DOT).text()


def test_moe_layer_pair_builds_and_checks():
    toy = {"tokens_per_group": 8, "d_model": 16, "d_ff": 32, "num_heads": 2, "head_dim": 8,
           "seq_len": 4}
    m = podsim.Module.moe_layer_pair(4, model=toy)
    r = podsim.simulate(m, "tpu-v3-8", mesh=4, functional=True)
    assert r["check"]["ok"] is True
    # The partitioner's two AllToAlls (dispatch and combine) per MoE layer.
    kinds = [c["kind"] for c in r["collectives"]]
    assert kinds.count("all-to-all") == 2
    with pytest.raises(podsim.ConfigError, match="model.d_model"):
        podsim.Module.moe_layer_pair(4, model={"d_model": 0})


def test_threads_run_in_parallel_and_agree():
    """The GIL is released while the library runs: Python code runs meanwhile, and threads
    running simulations at once get the results a serial run gets."""
    cases = [("all-to-all", "tpu-v3-64"), ("all-reduce", "tpu-v3-128"),
             ("all-gather", "tpu-v3-32"), ("reduce-scatter", "tpu-v3-64")]
    serial = [podsim.collective(op, t, "8MiB")["time_us"] for op, t in cases]
    results = [None] * len(cases)

    def work(i):
        results[i] = podsim.collective(cases[i][0], cases[i][1], "8MiB")["time_us"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == serial

    # While one long simulation runs on a thread, this thread keeps running Python code: with
    # the GIL held it could run only between the call's start and end (a few iterations).
    # (An all-reduce: a whole-pod all-to-all is solved by symmetry in a millisecond.)
    worker = threading.Thread(target=podsim.collective,
                              args=("all-reduce", "tpu-v3-1024", "8MiB"))
    iterations = 0
    worker.start()
    while worker.is_alive():
        iterations += 1
    worker.join()
    assert iterations > 10000


def test_errors_carry_the_cli_message(tmp_path, cli_error):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule bad\nENTRY %main {\n  ROOT %x = f32[2] negate(%nope)\n}\n")
    with pytest.raises(podsim.Error) as e:
        podsim.Module.load(str(bad))
    assert str(e.value) == cli_error("ir", "verify", str(bad))
    assert str(e.value).startswith(str(bad) + ":3:")
    with pytest.raises(podsim.Error) as e:
        podsim.Module.load(str(tmp_path / "missing.hlo"))
    assert str(e.value) == cli_error("ir", "verify", str(tmp_path / "missing.hlo"))
    with pytest.raises(podsim.ConfigError) as e:
        podsim.simulate(podsim.Module.parse(ADD), "torus-4x4", mesh=1,
                        overrides=["device.hbm_bandwidth=0"])
    good = tmp_path / "add.hlo"
    good.write_text(ADD)
    assert str(e.value) == cli_error("simulate", str(good), "--topology", "torus-4x4", "--mesh",
                                     "1", "--set", "device.hbm_bandwidth=0")
    with pytest.raises(podsim.Error, match="partitions do not fit"):
        podsim.simulate(podsim.Module.parse(ADD), "torus-4x4", mesh=32)
    with pytest.raises(podsim.Error):
        podsim.Module.parse(DOT).partition(3)
