"""Emulated nodes: several machines on one (`faasgd up --nodes N --node-link RATE`).

links      namespaces, shaped veth links, a bridge, removed by name prefix (shared with the store-scaling bench)
network    the runtime's nodes: their names, addresses and links, the bytes each link carried
placement  where a replica or a store goes, as the Kubernetes scheduler would place its pod
"""
