"""The local runtime, an OpenFaaS emulator on one machine (`faasgd up` / `faasgd down`); it knows no SGD.

It runs a stack.yml as faas-cli and faas-netes would on a cluster, in five rooms, each a sub-package whose docstring
says what it owns:
  gateway/    the OpenFaaS-compatible gateway: routes, forwarding, the /system API, auth, limits, metrics
  queue/      the async queue: delivery rules (ce, pro), queue-workers, messages, the JetStream broker
  replicas/   the stack read, build folders, deployed functions, the supervisor, a replica as a process
              (under of-watchdog, forked from the zygote) or as a container
  services/   what a cluster offers beside the gateway: redis-server, memcached, store groups, nats-server, an
              S3 server, Secrets as files, cluster DNS, the Docker network and registry
  lifecycle/  `faasgd up` / `faasgd down`, the daemon that runs it all in one process tree, its state file
Beside them, what every room speaks: api (OpenFaaS's provider API: a FunctionDeployment, the refusals), processes
(the one place that checks or signals a process: pid + create time) and clock (the gateway's and the queue's time).
"""
