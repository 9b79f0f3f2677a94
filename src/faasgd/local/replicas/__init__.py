"""Function replicas, kept as faas-netes and Kubernetes keep a cluster's: the stack read as faas-cli reads it
(stack), each function's build folder and image environment (build, dockerfile), the deployed functions (deployments),
the supervisor that keeps each at its scale (supervisor), one replica as a process (pods: its environment,
quantities, logs) under of-watchdog or bare (watchdog, netns), forked from a zygote (zygote, zygote_server), or as a
container (containers).

It owns what runs a function's code and how it is started, watched, replaced and stopped; it knows no call.
"""
