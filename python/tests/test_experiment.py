"""podsim.run_experiment, check_experiment and read_results on small sweeps."""
import json

import pytest

import podsim

MIB = 1 << 20


def sweep(tmp_path, **changes):
    """A collective sweep over two 1D rings whose ring all-reduce time is known by hand (the
    rings are topology files in tmp_path)."""
    for n in (4, 8):
        (tmp_path / f"ring-{n}.json").write_text(json.dumps(
            {"kind": "torus", "name": f"ring-{n}", "dims": [n], "wraparound": [True],
             "cores_per_chip": 1, "link_bandwidth": 1e11, "hop_latency_us": 1.0}))
    config = {
        "experiment": "collective_sweep",
        "name": "rings",
        "collectives": ["all-reduce"],
        "payloads": ["1MiB"],
        "slices": [{"partitions": n, "topology": str(tmp_path / f"ring-{n}.json")}
                   for n in (4, 8)],
        "collective": {"algorithm": "ring", "network": "flow", "overhead_us": 0},
    }
    config.update(changes)
    return config


def ring_all_reduce_us(n, payload=MIB, bandwidth=1e11, latency_us=1.0):
    return 2 * (n - 1) * (latency_us + payload / n / bandwidth * 1e6)


def points(results):
    return {p["partitions"]: p for p in results["points"]}


def test_run_and_read_back(tmp_path):
    out = str(tmp_path / "run")
    summary = podsim.run_experiment(sweep(tmp_path), out)
    assert summary == {"name": "rings", "points": 2, "ok": 2, "oom": 0, "failed": 0,
                       "invalid": 0, "skipped": 0, "all_failed": False, "out": out}
    results = podsim.read_results(out)
    assert results["run_status"] == "done"
    got = points(results)
    for n in (4, 8):
        assert got[n]["time_us"] == pytest.approx(ring_all_reduce_us(n))
    assert (tmp_path / "run" / "results.csv").is_file()


def test_overrides_and_force(tmp_path):
    out = str(tmp_path / "run")
    podsim.run_experiment(sweep(tmp_path), out)
    with pytest.raises(podsim.Error, match="not empty|--force|force"):
        podsim.run_experiment(sweep(tmp_path), out)
    podsim.run_experiment(sweep(tmp_path), out, overrides={"collective.overhead_us": 10}, force=True)
    got = points(podsim.read_results(out))
    for n in (4, 8):
        assert got[n]["time_us"] == pytest.approx(ring_all_reduce_us(n) + 10)


def test_jobs_do_not_change_the_results(tmp_path):
    # The rings' times are known by hand; run on one thread and on three, the files are equal.
    files = []
    for jobs in (1, 3):
        out = tmp_path / f"run{jobs}"
        podsim.run_experiment(sweep(tmp_path), str(out), jobs=jobs)
        got = points(podsim.read_results(str(out)))
        for n in (4, 8):
            assert got[n]["time_us"] == pytest.approx(ring_all_reduce_us(n))
        files.append(((out / "results.csv").read_bytes(), (out / "results.json").read_bytes()))
    assert files[0] == files[1]
    with pytest.raises(podsim.ConfigError, match="jobs: must be >= 0"):
        podsim.run_experiment(sweep(tmp_path), str(tmp_path / "bad"), jobs=-1)


def test_a_config_file_gives_the_cli_message(tmp_path, cli_error):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(sweep(tmp_path, payloads=["one MiB"])))
    with pytest.raises(podsim.ConfigError) as e:
        podsim.run_experiment(str(path), str(tmp_path / "out"))
    assert str(e.value) == cli_error("run", str(path), "--out", str(tmp_path / "out2"))
    # A config error is found before the output directory is made.
    assert not (tmp_path / "out").exists()
    with pytest.raises(podsim.ConfigError) as e:
        podsim.check_experiment(str(path))
    assert "payloads" in str(e.value)
    with pytest.raises(podsim.ConfigError, match="experiment"):
        podsim.check_experiment({"name": "no kind"})


def test_shipped_configs_check(source_dir):
    for name in ("gshard_fig8", "gshard_fig9", "spmd_vs_mpmd"):
        podsim.check_experiment(f"{source_dir}/experiments/{name}.json")
    assert "collective_sweep" in podsim.experiment_kinds()


def test_read_results_of_a_missing_run(tmp_path):
    with pytest.raises(podsim.Error, match="results.json"):
        podsim.read_results(str(tmp_path))
