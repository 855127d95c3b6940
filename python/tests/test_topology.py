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
