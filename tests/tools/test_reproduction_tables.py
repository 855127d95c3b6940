"""tools/reproduction_tables.py on small results.csv files written here; every expected cell
is worked out by hand in its comment."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "tools", "reproduction_tables.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import reproduction_tables as rt  # noqa: E402


def write(tmp_path, name, text):
    d = tmp_path / name
    d.mkdir()
    (d / "results.csv").write_text(text)
    return str(d)


def test_fig9_errors_statuses_and_series_without_paper(tmp_path):
    d = write(tmp_path, "fig9",
              "collective,payload_bytes,partitions,topology,status,time_us,paper_us,error\n"
              "all-reduce,8388608,2,t,ok,110.04,100,\n"
              "all-reduce,8388608,4,t,failed,,90,boom\n"
              "all-to-all,33554432,2,t,ok,50,,\n")
    lines = rt.fig9_table(rt.read_csv(d)).split("\n")
    # The 32 MiB series has no paper points: no paper or error column for it. 110.04 against
    # 100 is +10.0%; the failed point shows its status and no error; a missing point is "-".
    assert lines[0] == ("| partitions | all-reduce 8 MiB podsim us | all-reduce 8 MiB paper us | "
                        "error | all-to-all 32 MiB podsim us |")
    assert lines[2] == "| 2 | 110.0 | 100 | +10.0% | 50.0 |"
    assert lines[3] == "| 4 | failed | 90 | - | - |"


def test_fig8_paper_columns_error_share_and_growth(tmp_path):
    d = write(tmp_path, "fig8",
              "experts,category,roofline_us,modelled_us,paper_roofline_us,paper_measured_us,status\n"
              "4,moe_ffn,90,120,80,100,ok\n"
              "4,dispatch_combine,10,30,20,50,ok\n"
              "4,total,100,150,100,150,ok\n"
              "8,moe_ffn,90,120,,,oom\n"
              "8,dispatch_combine,20,80,,,oom\n"
              "8,total,110,200,,,oom\n")
    out = rt.fig8_table(rt.read_csv(d))
    lines = out.split("\n")
    assert lines[0] == ("| category | paper 4E roofline | paper 4E measured | 4E roofline | "
                        "4E modelled | 8E roofline (oom) | 8E modelled (oom) | "
                        "4E modelled vs measured |")
    # moe_ffn: 120 against 100 measured: +20.0%; dispatch_combine 30 against 50: -40.0%.
    assert lines[2] == "| moe_ffn | 80 | 100 | 90 | 120 | 90 | 120 | +20.0% |"
    assert lines[3] == "| dispatch_combine | 20 | 50 | 10 | 30 | 20 | 80 | -40.0% |"
    assert lines[4] == "| total | 100 | 150 | 100 | 150 | 110 | 200 | +0.0% |"
    # Shares 30/150 = 20.0% and 80/200 = 40.0%; growth 200/150 = 1.33x.
    assert lines[-1] == ("AllToAll (dispatch_combine) share of the modelled total: 4E 20.0%, "
                         "8E 40.0%; total growth 4E to 8E: 1.33x.")


def test_table3_and_fig7_rows(tmp_path):
    header = ("model,cores,batch_tokens,params,step_ms,steps_per_s,core_years,days,"
              "paper_steps_per_s,paper_core_years,remat,recompute_pct,mfu,peak_gib,weights_gib,"
              "activations_gib,no_remat_peak_gib,paper_weights_gb,paper_activations_gb,status\n")
    d = write(tmp_path, "t3", header +
              '"8E,2L",8,1048576,1,500,2.0,3.0,1,2.5,2.0,selective,12.5,0.4,1.5,0.5,1.0,2.0,'
              '1.0,0.5,ok\n'
              '"16E,2L",16,262144,1,,,,,1,1,,,,,,,,,,oom\n')
    lines = rt.table3_table(rt.read_csv(d)).split("\n")
    # 2.0 steps/s against 2.5: -20.0%; 3.0 core-years against 2.0: +50.0%; MFU 0.4 = 40.0%;
    # 1048576 tokens = 1M, 262144 = 256K.
    assert lines[2] == ("| 8E,2L | 8 | 1M | 2.000 | 2.50 | -20.0% | selective (12.5%) | 1.50 | "
                        "40.0% | 3.00 | 2.0 | +50.0% |")
    assert lines[3] == "| 16E,2L | 16 | 256K | oom | - | - | - | - | - | - | - | - |"
    f7 = rt.fig7_table(rt.read_csv(d)).split("\n")
    # Weights 0.5 GiB = 0.537 GB against 1.0 GB: -46.3%; activations 1.0 GiB = 1.074 GB
    # against 0.5: +114.7%.
    assert f7[2] == ("| 8E,2L | 0.500 | 1.000 | 1.500 | selective (12.5%) | 2.000 | 1.00 | "
                     "-46.3% | 0.50 | +114.7% |")


def test_update_rewrites_only_the_blocks_and_check_tells(tmp_path):
    d = write(tmp_path, "fig9",
              "collective,payload_bytes,partitions,topology,status,time_us,paper_us,error\n"
              "all-reduce,8388608,2,t,ok,100,100,\n")
    doc = tmp_path / "doc.md"
    doc.write_text("before\n<!-- generated: fig9 -->\nold\n<!-- end generated: fig9 -->\nafter\n")
    run = [sys.executable, SCRIPT, "--fig9", d]
    assert subprocess.run(run + ["--check", str(doc)], capture_output=True).returncode == 1
    assert subprocess.run(run + ["--update", str(doc)], capture_output=True).returncode == 0
    text = doc.read_text()
    assert text.startswith("before\n<!-- generated: fig9 -->\n| partitions |")
    assert "old" not in text and text.endswith("<!-- end generated: fig9 -->\nafter\n")
    assert subprocess.run(run + ["--check", str(doc)], capture_output=True).returncode == 0
    # A document without the block is an error naming it.
    (tmp_path / "bare.md").write_text("nothing here\n")
    r = subprocess.run(run + ["--check", str(tmp_path / "bare.md")], capture_output=True, text=True)
    assert r.returncode != 0 and "no generated block for fig9" in r.stderr


def test_table1_counts_in_billions(tmp_path):
    d = write(tmp_path, "t1",
              "model,experts,layers,params,expert_params,replicated_params,f32_params,"
              "bf16_params,per_core_weight_gib,expert_formula,paper_billion,paper_vs_expert,"
              "status\n"
              '"4E,2L",4,2,1100000000,1000000000,100000000,1100000000,0,0.25,1000000000,1.0,1,ok\n')
    lines = rt.table1_table(rt.read_csv(d)).split("\n")
    # 1.1 B against the paper's 1.0 B: +10.0%; 1.0 B of experts, 0.1 B replicated.
    assert lines[2] == "| 4E,2L | 1.10 | 1.0 | +10.0% | 1.00 | 0.10 | 0.25 |"


def test_dense_baseline_best_point_and_ratio_to_table3(tmp_path):
    d = write(tmp_path, "dense",
              "stages,micro_batches,replicas,micro_batch_tokens,step_s,bubble,forward_ms,"
              "backward_ms,send_ms,allreduce_ms,optimizer_ms,peak_gib,mfu,days,core_years,status\n"
              "4,8,512,1024,2.5,0.25,1,2,0,0,0,5.2,0.2,6,47.1,ok\n"
              "4,32,,,,,,,,,,,,,,invalid\n"
              "8,8,256,2048,2.0,0.4,1,2,0,0,0,3.0,0.25,5,23.55,ok\n")
    t3 = write(tmp_path, "table3",
               "model,core_years,status\n2048E,36L,22.4,ok\n".replace("2048E,36L", '"2048E,36L"'))
    lines = rt.dense_table(rt.read_csv(d), rt.read_csv(t3)).split("\n")
    # Grid rows as given (bubble and MFU in percent); the invalid row keeps only its status.
    assert lines[2] == "| 4 | 8 | 512 | 1024 | 2.500 | 25.0% | 5.20 | 20.0% | 47.1 | ok |"
    assert lines[3] == "| 4 | 32 | - | - | - | - | - | - | - | invalid |"
    # The fastest point is 8 x 8 (2.0 s): 23.55 core-years against 235.5 is -90.0%; MoE 22.4
    # against 22.4 is +0.0%; the ratio 23.55 / 22.4 = 1.05 against 235.5 / 22.4 = 10.51 is -90.0%.
    assert lines[6] == "| fastest point (8 stages x 8 micro-batches) | podsim | paper | error |"
    assert lines[8] == "| T(96L) core-years | 23.6 | 235.5 | -90.0% |"
    assert lines[9] == "| MoE(2048E, 36L) core-years | 22.4 | 22.4 | +0.0% |"
    assert lines[10] == "| dense / MoE core-years | 1.05 | 10.51 | -90.0% |"
