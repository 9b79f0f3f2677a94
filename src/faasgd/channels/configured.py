"""The S3 space and the DynamoDB space a function has configured: its environment, then its secret files.

    space = configured_space(os.environ)     one S3Space (one boto3 client) per settings, kept while the replica is warm
    tables = configured_dynamodb(os.environ)  one DynamoSpace per settings (faasgd.channels.dynamodb_settings), as well

A request never names an S3 location or a key: like `store_url`, `s3_url` is the function's own configuration
(stack.yml environment), and the keys are its secrets (faasgd.channels.s3_settings).
"""

from __future__ import annotations

import importlib.util
import threading
from typing import Mapping

from faasgd.channels.dynamodb import DynamoSpace
from faasgd.channels.dynamodb_settings import read_dynamodb_settings
from faasgd.channels.s3 import S3Space
from faasgd.channels.s3_settings import parse_s3_url, read_s3_settings
from faasgd.errors import ConfigError

S3_URL_KEY = "s3_url"  # the function's environment: s3://bucket[/prefix] its S3 objects live under
_spaces: dict[tuple, S3Space | DynamoSpace] = {}
_lock = threading.Lock()


def configured_space(env: Mapping[str, str]) -> S3Space:
    """This function's S3Space (ConfigError naming s3_url or the missing secret file when it has none)."""
    url = str(env.get(S3_URL_KEY) or "").strip()
    if not url:
        raise ConfigError(S3_URL_KEY, "not set: the function's environment names its S3 location, s3://bucket/prefix "
                                      "(on the local runtime `faasgd up --stores s3` gives every function one)")
    key = (parse_s3_url(url, S3_URL_KEY), read_s3_settings(env))
    if importlib.util.find_spec("boto3") is None:
        raise ConfigError(S3_URL_KEY, "the S3 channel needs boto3, which this function does not have: install the "
                                      "extra `s3` (pip install 'faasgd[s3]', or boto3 in its requirements.txt)")
    with _lock:
        if key not in _spaces:
            _spaces[key] = S3Space(*key)
        return _spaces[key]


def configured_dynamodb(env: Mapping[str, str]) -> DynamoSpace:
    """This function's DynamoSpace (ConfigError naming the missing secret file or the bad setting when it has none)."""
    settings = read_dynamodb_settings(env)
    if importlib.util.find_spec("boto3") is None:
        raise ConfigError("channel", "the DynamoDB channel needs boto3, which this function does not have: install "
                                     "the extra `s3` (pip install 'faasgd[s3]', or boto3 in its requirements.txt)")
    with _lock:
        if ("dynamodb", settings) not in _spaces:
            _spaces[("dynamodb", settings)] = DynamoSpace(settings)
        return _spaces[("dynamodb", settings)]
