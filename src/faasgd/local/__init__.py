"""The local runtime, an OpenFaaS emulator on one machine (`faasgd up` / `faasgd down`); it knows no SGD.

It runs a stack.yml as faas-cli and faas-netes would on a cluster: build folders laid out from the
template (build), replicas as processes kept at their scale (replicas), an OpenFaaS-compatible
gateway with its async queue (gateway; its rules in queue_rules), redis-server and memcached
standing in for the k8s/ Services (stores), nats-server with JetStream keeping the queue (broker),
and cluster DNS emulated by rewriting the in-cluster Service addresses in each replica's
environment (services). The daemon runs it all in one process tree; control starts and
stops the daemon; processes is the one place that checks or signals a process (pid + create time).
"""
