"""Channels: blob spaces beyond the parameter store, for the patterns that move objects rather than add them.

A blob space is any object with
    put_blob(job_id, name, data: bytes) -> None      overwrites; a reader sees the whole new object or the old
    get_blob(job_id, name) -> bytes | None           None: absent
ParameterStore (Redis, Memcached; faasgd.store.blobs) is one; S3Space (an S3-compatible service, faasgd.channels.s3)
is another; DynamoSpace (LambdaML's two DynamoDB tables, faasgd.channels.dynamodb) a third, which also writes a
round's merged result once (put_merged). boto3, the extra `s3`, is imported only when a space first talks to its
service.
"""

from faasgd.channels.configured import S3_URL_KEY, configured_dynamodb, configured_space
from faasgd.channels.dynamodb import DynamoSpace, open_dynamodb
from faasgd.channels.dynamodb_settings import DynamoSettings, read_dynamodb_settings
from faasgd.channels.s3 import S3Space, open_s3
from faasgd.channels.s3_settings import S3Settings, S3Url, parse_s3_url, read_s3_settings

__all__ = ["S3_URL_KEY", "configured_dynamodb", "configured_space", "DynamoSettings", "DynamoSpace", "open_dynamodb",
           "read_dynamodb_settings", "S3Space", "open_s3", "S3Settings", "S3Url", "parse_s3_url", "read_s3_settings"]
