"""The S3 channel without a server: URL and bucket rules, object keys, settings from secret files, no secret shown."""

from __future__ import annotations

import pytest

from faasgd.channels import S3Settings, S3Space, open_s3, parse_s3_url, read_s3_settings
from faasgd.channels.s3_settings import object_key, object_prefix
from faasgd.errors import ConfigError

SECRET = "wJalr/XUtnFEMI+K7MDENG/bPxRfiCYSECRET"  # AWS secret keys hold "/" and "+"
ACCESS = "AKIAFAASGDTESTKEY01"


class RecordingClient:
    """Stands for boto3's client: records every call, so a test can show nothing was sent."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.calls.append(name)


def secrets(tmp_path, **files) -> str:
    for name, value in files.items():
        (tmp_path / name.replace("_", "-")).write_text(value + "\n")
    return str(tmp_path)


@pytest.mark.parametrize("url, bucket, prefix", [
    ("s3://faasgd-jobs", "faasgd-jobs", ""),
    ("s3://faasgd-jobs/", "faasgd-jobs", ""),
    ("s3://faasgd.jobs.01/stacking", "faasgd.jobs.01", "stacking"),
    ("s3://abc/a/b.c/d_e-f/", "abc", "a/b.c/d_e-f"),
    ("S3://abc/X", "abc", "X"),
])
def test_urls_parse(url, bucket, prefix):
    parsed = parse_s3_url(url)
    assert (parsed.bucket, parsed.prefix) == (bucket, prefix)
    assert parsed.text == f"s3://{bucket}" + (f"/{prefix}" if prefix else "")


@pytest.mark.parametrize("url", [
    "", "   ", None, 3, "faasgd-jobs", "redis://127.0.0.1:6379/0", "s3://", "s3:///prefix",
    "s3://ab", "s3://" + "a" * 64, "s3://Faasgd", "s3://faasgd_jobs", "s3://-faasgd", "s3://faasgd-",
    "s3://faasgd..jobs", "s3://faasgd.-jobs", "s3://192.168.1.10", "s3://bucket:9000",
    "s3://bucket/../up", "s3://bucket/a/./b", "s3://bucket/a//b", "s3://bucket//a", "s3://bucket/a b",
    "s3://bucket/" + "p" * 65, "s3://bucket/" + "/".join(["p" * 60] * 5), "s3://bucket/a?versionId=1",
    "s3://bucket/a#frag", "s3://bucket/\u00e9t\u00e9", "s3://bucket/a\\b",
])
def test_bad_urls_name_the_field(url):
    with pytest.raises(ConfigError) as e:
        parse_s3_url(url)
    assert e.value.field == "s3_url"
    with pytest.raises(ConfigError) as e:
        parse_s3_url(url, "transfer_url")
    assert e.value.field == "transfer_url"


@pytest.mark.parametrize("url", [f"s3://{ACCESS}:{SECRET}@bucket/p", f"s3://{SECRET}@bucket", f"s3://:{SECRET}@b/p"])
def test_credentials_in_a_url_are_refused_and_never_shown(url):
    with pytest.raises(ConfigError) as e:
        parse_s3_url(url)
    text = str(e.value)
    assert "credentials" in text and SECRET not in text and ACCESS not in text
    assert not any(part in text for part in SECRET.split("/"))


def test_object_keys_are_prefix_job_name():
    assert object_key(parse_s3_url("s3://bkt/a/b"), "job-1", "grad:3:0") == "a/b/job-1/grad:3:0"
    assert object_key(parse_s3_url("s3://bkt"), "job-1", "model") == "job-1/model"
    assert object_prefix(parse_s3_url("s3://bkt/p"), "j1") == "p/j1/"  # ends in "/": j1's never covers j10's


@pytest.mark.parametrize("field, job_id, name", [
    ("job_id", "..", "a"), ("job_id", ".", "a"), ("job_id", "../x", "a"), ("job_id", "a/b", "a"),
    ("job_id", "j" * 65, "a"), ("job_id", "", "a"), ("job_id", 7, "a"), ("name", "j", ".."), ("name", "j", "."),
    ("name", "j", "../../etc/passwd"), ("name", "j", "a/b"), ("name", "j", "n" * 129), ("name", "j", "a\x00"),
    ("name", "j", None),
])
def test_hostile_names_are_refused_before_anything_is_sent(field, job_id, name):
    client = RecordingClient()
    space = S3Space(parse_s3_url("s3://bkt/p"), S3Settings(None, "us-east-1", ACCESS, SECRET), client=client)
    for call in (lambda: space.put_blob(job_id, name, b"x"), lambda: space.get_blob(job_id, name)):
        with pytest.raises(ConfigError) as e:
            call()
        assert e.value.field == field
    with pytest.raises(ConfigError) as e:
        space.put_blob("j", "a", "text, not bytes")
    assert e.value.field == "data"
    assert client.calls == []


def test_settings_come_from_secret_files(tmp_path):
    directory = secrets(tmp_path, s3_access_key=ACCESS, s3_secret_key=SECRET, s3_endpoint="http://127.0.0.1:9000/",
                        s3_region="eu-west-1")
    settings = read_s3_settings({}, directory)
    assert (settings.endpoint_url, settings.region, settings.access_key, settings.secret_key) == \
        ("http://127.0.0.1:9000", "eu-west-1", ACCESS, SECRET)
    assert read_s3_settings({"FAASGD_SECRETS_DIR": directory}).secret_key == SECRET
    env = {"s3_endpoint_url": "https://minio.storage:9000", "s3_region": "us-west-2"}  # the environment wins
    settings = read_s3_settings(env, directory)
    assert (settings.endpoint_url, settings.region) == ("https://minio.storage:9000", "us-west-2")
    for shown in (repr(settings), str(settings), repr(open_s3("s3://bkt/p", env, secrets_dir=directory))):
        assert SECRET not in shown and ACCESS not in shown


def test_keys_never_come_from_the_environment(tmp_path):
    env = {"s3_access_key": ACCESS, "s3_secret_key": SECRET, "AWS_ACCESS_KEY_ID": ACCESS,
           "AWS_SECRET_ACCESS_KEY": SECRET}
    with pytest.raises(ConfigError) as e:
        read_s3_settings(env, str(tmp_path))
    assert e.value.field == "s3-access-key" and SECRET not in str(e.value)
    with pytest.raises(ConfigError) as e:
        read_s3_settings(env, secrets(tmp_path, s3_access_key=ACCESS))
    assert e.value.field == "s3-secret-key" and SECRET not in str(e.value)
    assert read_s3_settings({}, secrets(tmp_path, s3_secret_key=SECRET)).endpoint_url is None  # AWS's own


@pytest.mark.parametrize("field, env", [
    ("s3_endpoint_url", {"s3_endpoint_url": f"http://{ACCESS}:{SECRET}@127.0.0.1:9000"}),
    ("s3_endpoint_url", {"s3_endpoint_url": f"http://{SECRET}@minio"}),
    ("s3_endpoint_url", {"s3_endpoint_url": "ftp://127.0.0.1"}),
    ("s3_endpoint_url", {"s3_endpoint_url": "http://127.0.0.1:99999"}),
    ("s3_endpoint_url", {"s3_endpoint_url": "http://:9000"}),
    ("s3_endpoint_url", {"s3_endpoint_url": "http://minio?x=1"}),
    ("s3_region", {"s3_region": "EU WEST"}),
    ("s3_region", {"s3_region": "r" * 40}),
])
def test_bad_settings_name_the_field_and_hide_secrets(tmp_path, field, env):
    directory = secrets(tmp_path, s3_access_key=ACCESS, s3_secret_key=SECRET)
    with pytest.raises(ConfigError) as e:
        read_s3_settings(env, directory)
    assert e.value.field == field
    assert SECRET not in str(e.value) and ACCESS not in str(e.value)


def test_space_limits_are_checked():
    settings = S3Settings(None, "us-east-1", ACCESS, SECRET)
    for kwargs, field in (({"timeout_s": 0}, "timeout_s"), ({"max_attempts": 0}, "max_attempts")):
        with pytest.raises(ConfigError) as e:
            S3Space(parse_s3_url("s3://bkt"), settings, **kwargs)
        assert e.value.field == field



def test_a_function_without_boto3_is_told_to_install_the_extra(tmp_path, monkeypatch):
    import importlib.util

    from faasgd.channels import configured_space

    directory = secrets(tmp_path, s3_access_key=ACCESS, s3_secret_key=SECRET)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "boto3" else real(name, *a))
    with pytest.raises(ConfigError) as e:
        configured_space({"s3_url": "s3://bkt/p", "FAASGD_SECRETS_DIR": directory})
    assert e.value.field == "s3_url" and "faasgd[s3]" in str(e.value)
    with pytest.raises(ConfigError) as e:
        configured_space({"FAASGD_SECRETS_DIR": directory})
    assert e.value.field == "s3_url" and "not set" in str(e.value)
