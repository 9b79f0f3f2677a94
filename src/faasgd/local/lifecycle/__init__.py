"""The runtime's life: `faasgd up` and `faasgd down` (control), the daemon they start and stop (daemon), its state
file and folders (state_file), the gateway's login (credentials) and the images a docker runtime waits for
(waiting_images).

It owns the order things start in and stop in, and what state.json says about them; what each started thing does
is its room's (services, replicas, gateway, queue).
"""
