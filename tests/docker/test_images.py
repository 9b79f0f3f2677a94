"""The function images faas-cli built: a non-root user, no secret inside, no TensorFlow in emnist-train
unless FAASGD_EXTRAS=tf, no installed package's own test suite; each image's size is printed."""

from __future__ import annotations

import re

import pytest

from faasgd.local import docker_cli

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
