"""The function images faas-cli built: a non-root user, no secret inside, no TensorFlow in emnist-train
unless FAASGD_EXTRAS=tf, no installed package's own test suite; each image's size is printed."""

from __future__ import annotations

import re
import time

import pytest

from faasgd.local.services import docker_cli

pytestmark = [pytest.mark.docker, pytest.mark.serial, pytest.mark.timeout(1200)]
SECRET_NAMES = ("store-password", "basic-auth-user", "basic-auth-password", "s3-access-key", "s3-secret-key")
SECRETISH_ENV = re.compile(r"PASSWORD|SECRET|TOKEN|ACCESS_KEY", re.I)


def in_image(image: str, script: str, *flags: str) -> str:
    """`sh -c script` in a throwaway container of `image`, without a network; its stdout."""
    return docker_cli.docker("run", "--rm", "--pull", "never", "--network", "none", "--label",
                             "faasgd-docker-test=image-check", *flags, "--entrypoint", "sh", image, "-c", script)


def test_each_image_runs_as_a_non_root_user_and_holds_no_secret(deployed):
    sizes = []
    for image in deployed["images"]:
        config = docker_cli.inspect("image", image)
        assert config["Config"]["User"] == "app"
        assert in_image(image, "id -u").strip() != "0"
        assert not [e for e in config["Config"]["Env"] if SECRETISH_ENV.search(e.split("=", 1)[0])]
        names = " -o ".join(f"-name {name}" for name in SECRET_NAMES)
        found = in_image(image, f"find / -xdev \\( {names} \\) -print; test -e /var/openfaas && echo mount; true",
                         "--user", "0")  # root here: every folder searched, /root and /etc/ssl/private too
        assert found == ""
        sizes.append(f"{image}: {config['Size'] / 1e6:.0f} MB")
    print("\n" + "\n".join(sizes))


def test_emnist_train_without_the_tf_extra_has_no_tensorflow_and_no_package_test_suites(deployed):
    train = next(image for image in deployed["images"] if "/emnist-train:" in image)
    found = in_image(train, "python -c \"import importlib.util as u; print(u.find_spec('tensorflow'), "
                            "u.find_spec('numpy') is not None)\"")
    assert found.split() == ["None", "True"]
    assert in_image(train, "find /home/app/.local/lib -type d -name tests -path '*/site-packages/*'") == ""


def health_until_healthy(container: str, within_s: float) -> tuple[list[str], float]:
    """The container's health statuses as they change, polled every 0.2 s until `healthy` (or `within_s`), and the
    seconds it took."""
    seen, started = [], time.monotonic()
    while time.monotonic() - started < within_s:
        state = docker_cli.inspect("container", container)["State"]
        status = (state.get("Health") or {}).get("Status", "none")
        if not seen or seen[-1] != status:
            seen.append(status)
        if status == "healthy" or not state["Running"]:
            break
        time.sleep(0.2)
    return seen, time.monotonic() - started


@pytest.mark.parametrize("function", ["emnist-setup", "emnist-train"])
def test_a_slow_start_shows_starting_never_unhealthy_and_the_start_period_covers_a_real_start(deployed, function):
    """The image's HEALTHCHECK checked every second and unhealthy at the first failure (docker run's flags change only
    those): a start 5 s slow (a shell's sleep before the image's own command) shows `starting` until the function's
    lock is there, then `healthy`; the same start with the start period cut to 1 ms shows `unhealthy` first, as the
    image did before it had one. A real start, without the sleep, is timed against the start period."""
    image = next(image for image in deployed["images"] if f"/{function}:" in image)
    start_period = docker_cli.inspect("image", image)["Config"]["Healthcheck"]["StartPeriod"] / 1e9

    def started(slow: bool, *flags: str) -> tuple[list[str], float]:
        command = ["--entrypoint", "sh", image, "-c", "sleep 5; exec python -S bootstrap.py"] if slow else [image]
        container = docker_cli.docker("run", "-d", "--pull", "never", "--network", "none", "--label",
                                      "faasgd-docker-test=image-check", "--cpus", "1", "--health-interval", "1s",
                                      "--health-retries", "1", "--env", "healthcheck_interval=1s", *flags,
                                      *command).strip()
        try:
            return health_until_healthy(container, 30)
        finally:
            docker_cli.docker("rm", "-f", container, check=False)

    slow, _ = started(True)
    without, _ = started(True, "--health-start-period", "1ms")
    real, seconds = started(False)
    print(f"\n{function}: a real start healthy after {seconds:.1f} s (start period {start_period:g} s): {real}")
    assert slow[0] == "starting" and slow[-1] == "healthy" and "unhealthy" not in slow, slow
    assert "unhealthy" in without, without  # what the start period prevents
    assert real[-1] == "healthy" and "unhealthy" not in real and seconds < start_period / 4, (real, seconds)
