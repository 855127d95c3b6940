"""podsim.Topology: sizes, links, routes and errors, against counts derived by hand."""
import pytest

import podsim


def test_torus_sizes_and_links():
    t = podsim.Topology("torus-4x4")
    assert (t.name, t.num_chips, t.cores_per_chip, t.num_cores) == ("torus-4x4", 16, 1, 16)
    # A 2D torus: every chip has one outgoing link per dimension and direction: 16 * 2 * 2.
    assert t.num_links == 64
    links = t.links()
    assert [l["id"] for l in links] == list(range(64))
    assert all(l["bandwidth_bytes_per_s"] == 1e11 and l["latency_us"] == 1.0 for l in links)


def test_mesh_has_no_wrap_links():
    # A 4x4 mesh: 4 rows of 3 edges and 4 columns of 3 edges, both directions: 2 * 24.
    assert podsim.Topology("mesh-4x4").num_links == 48


def test_route_is_a_chain_of_links_of_the_hop_distance():
    t = podsim.Topology("torus-4x4")
    links = t.links()
    # Chips are numbered row-major: chip 10 is (2, 2), chip 15 is (3, 3). On a 4-ring the
    # distance from 0 to 2 is 2 and from 0 to 3 is 1 (through the wrap).
    for dst, hops in [(10, 4), (15, 2), (1, 1), (0, 0)]:
        route = t.route_links(0, dst)
        assert len(route) == hops
        chip = 0
        for link_id in route:
            assert links[link_id]["src_chip"] == chip
            chip = links[link_id]["dst_chip"]
        assert chip == dst
        assert t.route(0, dst)["hops"] == hops
    # Without the wrap, (0, 0) -> (3, 3) takes 3 + 3 hops.
    assert len(podsim.Topology("mesh-4x4").route_links(0, 15)) == 6


def test_dict_config_round_trips():
    spec = {"kind": "torus", "name": "ring-8", "dims": [8], "wraparound": [True],
            "cores_per_chip": 2, "link_bandwidth": 5e10, "hop_latency_us": 0.5}
    t = podsim.Topology(spec)
    assert (t.num_chips, t.num_cores) == (8, 16)
    again = podsim.Topology(t.config)
    assert again.config == t.config
    assert again.links() == t.links()


def test_overrides_reach_every_link():
    t = podsim.Topology("torus-4x4", overrides={"topology.link_bandwidth": 2.5e11})
    assert t.config["link_bandwidth"] == 2.5e11
    assert all(l["bandwidth_bytes_per_s"] == 2.5e11 for l in t.links())
    same = podsim.Topology("torus-4x4", overrides=["topology.hop_latency_us=3"])
    assert all(l["latency_us"] == 3.0 for l in same.links())


def test_mesh_mapping_is_row_major_over_cores():
    # Device (i, j) of a 2x4 mesh is partition 4i + j, on chip (4i + j) // 2 (2 cores a chip).
    devices = podsim.Topology("tpu-v3-8").mesh_mapping([2, 4])["devices"]
    assert len(devices) == 8
    for d in devices:
        i, j = d["mesh_index"]
        assert d["partition"] == 4 * i + j
        assert (d["chip"], d["local"]) == divmod(4 * i + j, 2)


def test_errors_carry_the_cli_message(cli_error):
    with pytest.raises(podsim.ConfigError) as e:
        podsim.Topology("no-such-pod")
    assert str(e.value) == cli_error("topology", "no-such-pod")
    with pytest.raises(podsim.ConfigError) as e:
        podsim.Topology("torus-4x4", overrides=["topology.dims[0]=0"])
    assert str(e.value) == cli_error("topology", "torus-4x4", "--set", "topology.dims[0]=0")
    assert str(e.value).startswith("topology.dims[0]")


def test_bad_arguments():
    t = podsim.Topology("torus-4x4")
    with pytest.raises(podsim.ConfigError, match="core 16 does not exist"):
        t.route(0, 16)
    with pytest.raises(TypeError):
        podsim.Topology(3)
    with pytest.raises(TypeError):
        podsim.Topology("torus-4x4", overrides="topology.dims[0]=2")
    assert issubclass(podsim.ConfigError, podsim.Error)
    assert "torus-4x4" in podsim.topology_presets()


def test_describe_and_to_dict():
    t = podsim.Topology("torus-4x4")
    assert t.describe().startswith("topology torus-4x4: 2D torus 4x4 = 16 chips")
    d = t.to_dict()
    assert d["grid"] == {"dims": [4, 4], "wraparound": [True, True]}
    # On a 4-ring the farthest chip is 2 hops away, so 2 + 2 on the torus. From any chip the
    # distances along one ring are 0, 1, 2, 1 (sum 4), so the 16 chips sum to 4*4 + 4*4 = 32
    # hops, over the 15 others: 32/15.
    assert d["diameter_hops"] == 4
    assert d["mean_hops"] == pytest.approx(32 / 15)
    assert "link_list" not in d and len(t.to_dict(links=True)["link_list"]) == 64
    assert repr(t) == "<podsim.Topology torus-4x4: 16 chips, 16 cores>"


def test_data_dir(tmp_path):
    import os
    default = podsim.data_dir()
    assert os.path.isfile(os.path.join(default, "topologies", "presets", "torus-4x4.json"))
    if os.environ.get("PODSIM_DATA_DIR"):
        return  # $PODSIM_DATA_DIR wins over set_data_dir
    try:
        podsim.set_data_dir(str(tmp_path / "nowhere"))
        with pytest.raises(podsim.Error, match="nowhere"):
            podsim.Topology("torus-4x4")
    finally:
        podsim.set_data_dir(default)
    assert podsim.Topology("torus-4x4").num_chips == 16


def test_a_json_file_and_its_errors(tmp_path, cli_error):
    import json
    good = tmp_path / "ring.json"
    good.write_text(json.dumps({"kind": "torus", "name": "ring-5", "dims": [5],
                                "wraparound": [True], "cores_per_chip": 1,
                                "link_bandwidth": 1e11, "hop_latency_us": 1.0}))
    t = podsim.Topology(str(good))
    # A 5-ring: 5 chips, one link each way per chip.
    assert (t.name, t.num_chips, t.num_links) == ("ring-5", 5, 10)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kind": "torus", "name": "bad", "dims": [5, 0]}))
    with pytest.raises(podsim.ConfigError) as e:
        podsim.Topology(str(bad))
    assert str(e.value) == cli_error("topology", str(bad))
    assert str(e.value).startswith(str(bad) + ": ")
