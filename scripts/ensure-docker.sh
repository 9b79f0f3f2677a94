#!/usr/bin/env bash
# Gets Docker ready for the container tests (`make test`; `make run` needs no Docker and never calls this):
#   1. Debian's docker.io (dockerd), debootstrap and docker-registry, installed when missing (as root);
#   2. dockerd started in the background when no daemon answers `docker info`, its output in $DOCKERD_LOG,
#      waited for until `docker info` answers (at most $DOCKERD_WAIT_S seconds);
#   3. the template's two base images, built by scripts/local-base-images.sh only when one is missing
#      (a machine with internet pulls the real ones instead and never needs this step, but the tests
#      build with --pull never, so they must be present).
# Fails soft: when Docker cannot be had, it says why on stderr, writes that one line to $DOCKER_UNAVAILABLE
# (the Docker tests skip with it as their reason) and exits 0, so the rest of `make test` still runs.
# When Docker is ready that file is removed. Everything present: a few `docker` calls, well under a second.
#
# Usage: scripts/ensure-docker.sh
#   DOCKERD_LOG         dockerd's output (default /var/log/faasgd-dockerd.log)
#   DOCKERD_WAIT_S      how long a started dockerd may take to answer (default 30)
#   DOCKER_UNAVAILABLE  where the reason goes (default build/docker-unavailable in the repository)
#   BASE_IMAGES_SCRIPT  what builds the base images (default scripts/local-base-images.sh)
#   SBIN_DIRS           searched after PATH for dockerd and debootstrap (default /usr/local/sbin:/usr/sbin:/sbin)
set -uo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$PATH${SBIN_DIRS-:/usr/local/sbin:/usr/sbin:/sbin}"  # off a user's PATH, where Debian puts them
dockerd_log="${DOCKERD_LOG:-/var/log/faasgd-dockerd.log}"
wait_s="${DOCKERD_WAIT_S:-30}"
reason_file="${DOCKER_UNAVAILABLE:-$here/build/docker-unavailable}"
base_images="${BASE_IMAGES_SCRIPT:-$here/scripts/local-base-images.sh}"
images=(python:3.11-slim-bookworm ghcr.io/openfaas/of-watchdog:0.11.3)  # the template's FROM lines

unavailable() {  # the reason, for the terminal and for the Docker tests; never a failure of `make test`
    echo "Docker is not available, the Docker tests will skip: $1" >&2
    mkdir -p "$(dirname "$reason_file")"
    printf '%s\n' "$1" >"$reason_file"
    exit 0
}

answers() { docker info >/dev/null 2>&1; }

install_missing() {
    local missing=()
    command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
    command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
    command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "the Docker tests need these Debian packages: ${missing[*]}" >&2
        echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
        command -v dockerd >/dev/null 2>&1 || answers || unavailable "docker.io is not installed (not root: sudo apt-get install -y ${missing[*]})"
        return 0
    fi
    echo "installing Debian packages for the Docker tests: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q && apt-get install -y -q "${missing[@]}" \
        || unavailable "apt-get install ${missing[*]} failed"
}

start_dockerd() {
    answers && return 0
    command -v dockerd >/dev/null 2>&1 || unavailable "no dockerd on PATH (Debian's docker.io installs it)"
    [ "$(id -u)" -eq 0 ] || unavailable "no Docker daemon answers and dockerd needs root to start"
    mkdir -p "$(dirname "$dockerd_log")"
    echo "starting dockerd in the background (log: $dockerd_log)"
    setsid dockerd >>"$dockerd_log" 2>&1 </dev/null &
    local pid=$! waited=0
    until answers; do
        if ! kill -0 "$pid" 2>/dev/null; then
            answers && break  # a daemon that came up between the two looks (one that forks, a fake) is up
            unavailable "dockerd exited: $(tail -n 1 "$dockerd_log" 2>/dev/null)"
        fi
        [ "$waited" -ge "$wait_s" ] && unavailable "dockerd did not answer within ${wait_s}s (log: $dockerd_log)"
        sleep 1
        waited=$((waited + 1))
    done
    echo "dockerd answers after ${waited}s"
}

ensure_base_images() {
    local image
    for image in "${images[@]}"; do
        docker image inspect "$image" >/dev/null 2>&1 && continue
        echo "base image $image missing: building the stand-ins ($base_images)"
        "$base_images" || unavailable "$base_images failed: the base images are missing"
        return 0
    done
}

install_missing
start_dockerd
ensure_base_images
rm -f "$reason_file"
