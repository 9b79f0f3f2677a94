"""What a cluster offers its functions besides the gateway, played on this machine: the stores (redis-server and
memcached: stores; a Redis Cluster and a memcached pool: redis_cluster, memcached_pool, store_groups, planned from
the stack by stack_groups, added on demand by optional_stores; resp joins a cluster's nodes), the queue's
nats-server (broker, kept alive by broker_watch), an S3-compatible server (s3), Kubernetes Secrets as files
(secrets), cluster DNS (dns: in-cluster Service addresses rewritten to the local ones), and under
`--backend docker` the Docker network, registry and wall (docker_site, docker_wall, over docker_cli).

It owns each server's start, identity and stop; it knows no function and no call.
"""
