#!/usr/bin/env bash
# Installs the Debian packages faasgd's real runs and tests need, when they are missing.
# Usage: scripts/ensure-debian-packages.sh   (as root; otherwise prints what to install and fails)
set -euo pipefail

packages=(redis-server memcached nats-server dataset-fashion-mnist iproute2 iptables)
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v memcached >/dev/null 2>&1 || missing+=(memcached)
# the async queue's broker (JetStream); Debian installs it in /usr/sbin, off a user's PATH
command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || missing+=(nats-server)
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || missing+=(dataset-fashion-mnist)
# network namespaces and shaped links (a replica's own namespace under of-watchdog; bench/store_scaling.py and its
# tests): ip and tc, and iptables for the one FORWARD rule a shaped Redis Cluster's nodes need between them
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing+=(iproute2)
command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || missing+=(iptables)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "faasgd needs these Debian packages: ${missing[*]}" >&2
    echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q "${missing[@]}"
# The Debian packages start system services where systemd runs; faasgd starts its own on free ports.
