"""Running faasgd on one machine: loopback store servers now, the local OpenFaaS-compatible runtime later."""
