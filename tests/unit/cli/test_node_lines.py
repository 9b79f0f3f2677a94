"""What `faasgd up` and `faasgd status` say of emulated nodes, from a runtime's state: a line per node with its
address, link and what runs there, and `status --json`'s nodes with their stores and replicas; nothing without."""

from faasgd.cli.runtime import node_lines
from faasgd.cli.status import node_entries

STATE = {
    "nodes": {"prefix": "fgabc123", "rate_mbit": 100.0, "list": [
        {"name": "node-1", "address": "198.18.7.11", "netns": "fgabc123-1", "link": "fgabc123-h1"},
        {"name": "node-2", "address": "198.18.7.12", "netns": "fgabc123-2", "link": "fgabc123-h2"}]},
    "stores": {"redis": {"url": "redis://198.18.7.11:1/0", "node": "node-1"},
               "memcached-local/node-2": {"url": "memcached://198.18.7.12:2", "node": "node-2"}},
    "replicas": [{"name": "emnist-train-1", "function": "emnist-train", "node": "node-1"},
                 {"name": "emnist-setup-1", "function": "emnist-setup", "node": "node-2"}],
}


def test_a_line_per_node_names_its_address_link_stores_and_replicas():
    assert node_lines(STATE) == [
        "node-1     198.18.7.11  link fgabc123-h1 (100 Mbit/s): redis, emnist-train-1",
        "node-2     198.18.7.12  link fgabc123-h2 (100 Mbit/s): memcached-local/node-2, emnist-setup-1"]
    assert node_lines({"stores": {}, "replicas": []}) == []


def test_status_json_lists_each_nodes_stores_and_replicas():
    entries = node_entries(STATE)
    assert [(e["name"], e["address"], e["stores"], e["replicas"]) for e in entries] == [
        ("node-1", "198.18.7.11", ["redis"], ["emnist-train-1"]),
        ("node-2", "198.18.7.12", ["memcached-local/node-2"], ["emnist-setup-1"])]
