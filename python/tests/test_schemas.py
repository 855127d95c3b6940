"""Every --json output and results.json validates against its schema in docs/schemas/, and
standard output is that one JSON object (notes and explanations go elsewhere)."""
import glob
import json
import os
import subprocess

import pytest

import podsim

jsonschema = pytest.importorskip("jsonschema")

SOURCE_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCHEMAS = os.path.join(SOURCE_DIR, "docs", "schemas")


def validator(name):
    store = {}
    for path in glob.glob(os.path.join(SCHEMAS, "*.schema.json")):
        with open(path) as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        store[schema["$id"]] = schema
    schema = next(s for s in store.values() if s["$id"].endswith("/" + name + ".schema.json"))
    resolver = jsonschema.RefResolver(base_uri=schema["$id"], referrer=schema, store=store)
    return jsonschema.Draft202012Validator(schema, resolver=resolver)


def cli_json(*args):
    binary = os.environ.get("PODSIM_BIN")
    if not binary:
        pytest.skip("PODSIM_BIN is not set")
    p = subprocess.run([binary, *args], capture_output=True, text=True, cwd=SOURCE_DIR, check=True)
    return json.loads(p.stdout)  # fails unless stdout is exactly one JSON document


def check(name, document):
    errors = sorted(validator(name).iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    assert document["podsim_version"] == podsim.__version__
    assert document["schema_version"] == 1


def test_collective():
    check("collective", cli_json("collective", "--op", "all-reduce", "--topology", "torus-4x4",
                                 "--bytes", "64KiB", "--json", "--explain"))
    doc = cli_json("collective", "--op", "all-to-all", "--topology", "hypercube-16", "--json")
    check("collective", doc)
    assert doc["bounds"]["bisection_us"] is None  # a custom graph has no grid cut
    check("collective", podsim.collective("all-gather", "tpu-v3-8", "1MiB"))


def test_topology():
    check("topology", cli_json("topology", "tpu-v4-256-twisted", "--json", "--links",
                               "--route", "0", "77", "--mesh", "8x16"))
    check("topology", podsim.Topology("hypercube-16").to_dict(links=True) |
          {"podsim_version": podsim.__version__, "schema_version": 1})


def test_simulate_and_cost():
    module = os.path.join(SOURCE_DIR, "experiments", "moe_layer.hlo")
    check("simulate", cli_json("simulate", module, "--topology", "tpu-v3-8", "--mesh", "4",
                               "--json", "--check"))
    check("ir-cost", cli_json("ir", "cost", module, "--json"))


def test_plan(tmp_path):
    model = tmp_path / "model.json"
    model.write_text(json.dumps({
        "experts": 8, "batch_tokens": 64, "num_layers": 2, "moe_every": 1, "d_model": 16,
        "d_ff": 32, "num_heads": 4, "head_dim": 4, "tokens_per_group": 8, "seq_len": 4,
        "source_vocab": 16, "target_vocab": 12}))
    doc = cli_json("plan", str(model), "--topology", "tpu-v3-8", "--finalists", "2", "--json",
                   "--price-per-chip-hour", "2")
    check("plan", doc)
    assert doc["candidates"][0]["status"] == "best"


def run_experiment(binary, tmp_path, config):
    """Runs `config` with `podsim run`; checks its results.json; returns the output dir."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "out"
    subprocess.run([binary, "run", str(path), "--out", str(out)], check=True, capture_output=True)
    with open(out / "results.json") as f:
        check("experiment-results", json.load(f))
    return out


def test_experiment_results(tmp_path):
    binary = os.environ.get("PODSIM_BIN")
    if not binary:
        pytest.skip("PODSIM_BIN is not set")
    config = {"experiment": "collective_sweep", "name": "tiny", "collectives": ["all-reduce"],
              "payloads": ["1MiB", "2MiB"],
              "slices": [{"partitions": 8, "topology": "tpu-v3-8"},
                         {"partitions": 16, "topology": "tpu-v3-16"}]}
    out = run_experiment(binary, tmp_path, config)
    results = podsim.read_results(str(out))
    del results["run_status"]
    check("experiment-results", results)


def test_training_step_results(tmp_path):
    binary = os.environ.get("PODSIM_BIN")
    if not binary:
        pytest.skip("PODSIM_BIN is not set")
    toy = {"name": "toy", "experts": 8, "groups": 8, "num_layers": 2, "moe_every": 1,
           "d_model": 16, "d_ff": 32, "num_heads": 2, "head_dim": 8, "tokens_per_group": 8,
           "seq_len": 4, "source_vocab": 16, "target_vocab": 12, "dtype": "f32"}
    config = {"experiment": "training_step", "name": "toy",
              "points": [{"model": toy, "topology": "tpu-v3-8"}]}
    run_experiment(binary, tmp_path, config)
