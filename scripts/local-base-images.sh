#!/usr/bin/env bash
# Stand-ins for the two base images the function template builds FROM, for a machine whose Docker
# daemon reaches no registry. With internet access nobody needs this: `faas-cli build` pulls
#   python:3.11-slim-bookworm            (Docker Hub's Python image)
#   ghcr.io/openfaas/of-watchdog:0.11.3  (one static binary, /fwatchdog, on scratch)
# and the real images are better. Here the first is made from Debian bookworm's own packages
# (debootstrap: Python 3.11, pip, adduser, CA certificates and the host's own local CAs; `python` and `pip` on /usr/local/bin as
# in the Docker Hub image; Debian's EXTERNALLY-MANAGED marker removed, as that image has none) and
# the second from an of-watchdog binary on scratch. Both are tagged with the real names, so the
# template's Dockerfile builds unchanged, and marked with the label faasgd.stand-in=true.
#
# Usage: scripts/local-base-images.sh [--force]      (root; needs docker, debootstrap)
#   FWATCHDOG    the of-watchdog binary (default: on PATH, else ../shared/bin/fwatchdog)
#   DEBIAN_MIRROR  where debootstrap fetches from (default: the mirror apt uses, else deb.debian.org)
# An image that already exists is kept unless --force is given.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
python_image="python:3.11-slim-bookworm"
watchdog_image="ghcr.io/openfaas/of-watchdog:0.11.3"
force=0
[ "${1:-}" = "--force" ] && force=1

have() { docker image inspect "$1" >/dev/null 2>&1; }

mirror="${DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
    mirror=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    mirror="${mirror:-http://deb.debian.org/debian}"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "$force" = 1 ] || ! have "$python_image"; then
    echo "building $python_image from Debian bookworm ($mirror)"
    root="$work/rootfs"
    debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,adduser,ca-certificates \
        bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; exit 1; }
    ln -sf /usr/bin/python3 "$root/usr/local/bin/python"
    ln -sf /usr/bin/pip3 "$root/usr/local/bin/pip"
    rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
    # Trust what this host trusts: where the package registries are reached through a TLS-inspecting
    # proxy, its CA is among the host's local certificates, and pip inside a build needs it too.
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
        cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
        chroot "$root" update-ca-certificates >/dev/null 2>&1
    fi
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'ENV PYTHON_VERSION=3.11' \
        --change 'LABEL faasgd.stand-in=true' \
        --change 'CMD ["python3"]' - "$python_image" >/dev/null
    echo "built $python_image"
fi

if [ "$force" = 1 ] || ! have "$watchdog_image"; then
    watchdog="${FWATCHDOG:-$(command -v fwatchdog || true)}"
    watchdog="${watchdog:-$here/../shared/bin/fwatchdog}"
    [ -x "$watchdog" ] || { echo "no of-watchdog binary (set FWATCHDOG)" >&2; exit 1; }
    mkdir -p "$work/watchdog"
    cp "$watchdog" "$work/watchdog/fwatchdog"
    chmod 0755 "$work/watchdog/fwatchdog"
    tar -C "$work/watchdog" -c fwatchdog | docker import \
        --change 'LABEL faasgd.stand-in=true' \
        --change 'ENTRYPOINT ["/fwatchdog"]' - "$watchdog_image" >/dev/null
    echo "built $watchdog_image"
fi
