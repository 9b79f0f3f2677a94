"""An in-memory stand-in for boto3's DynamoDB client: the calls faasgd.channels.dynamodb makes, for unit tests.

Items are kept per table by their key `k`; put_item evaluates the three conditions the channel writes (absent;
absent or unchunked; this write) and fails as DynamoDB does, with ConditionalCheckFailedException and, asked for,
the old item. Item sizes are checked against DynamoDB's 400 KB limit as DynamoDB counts them (names + values).
The real server's behaviour is tested in tests/integration/test_dynamodb_channel.py.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

ITEM_LIMIT = 400 * 1024


def item_size(item: dict) -> int:
    """DynamoDB's item size: each attribute's name plus its value's bytes (a number: its digits)."""
    total = 0
    for name, value in item.items():
        (_, v), = value.items()
        total += len(name.encode()) + (len(v) if isinstance(v, (bytes, bytearray)) else len(str(v).encode()))
    return total


class FakeDynamo:
    def __init__(self, tables=("faasgd-temp", "faasgd-merged")):
        self.tables = {name: {} for name in tables}
        self.calls: list[tuple[str, str]] = []  # (operation, key or table)

    def _table(self, name: str, operation: str) -> dict:
        if name not in self.tables:
            raise ClientError({"Error": {"Code": "ResourceNotFoundException", "Message": "no table"}}, operation)
        return self.tables[name]

    def describe_table(self, TableName):
        self._table(TableName, "DescribeTable")
        self.calls.append(("describe_table", TableName))
        return {"Table": {"TableName": TableName}}

    def put_item(self, TableName, Item, ConditionExpression=None, ExpressionAttributeNames=None,
                 ExpressionAttributeValues=None, ReturnValuesOnConditionCheckFailure=None):
        table, key = self._table(TableName, "PutItem"), Item["k"]["S"]
        self.calls.append(("put_item", key))
        if item_size(Item) > ITEM_LIMIT:
            raise ClientError({"Error": {"Code": "ValidationException",
                                         "Message": "Item size has exceeded the maximum allowed size"}}, "PutItem")
        old, values = table.get(key), ExpressionAttributeValues or {}
        holds = {None: True,
                 "attribute_not_exists(#k)": old is None,
                 "attribute_not_exists(#k) OR #c = :zero": old is None or old.get("chunks") == values.get(":zero"),
                 "#w = :old": old is not None and old.get("write") == values.get(":old"),
                 "attribute_not_exists(#w)": old is None or "write" not in old}[ConditionExpression]
        if not holds:
            error = {"Error": {"Code": "ConditionalCheckFailedException", "Message": "The conditional request failed"}}
            if ReturnValuesOnConditionCheckFailure == "ALL_OLD" and old is not None:
                error["Item"] = dict(old)
            raise ClientError(error, "PutItem")
        table[key] = dict(Item)
        return {}

    def get_item(self, TableName, Key, ConsistentRead=False):
        table = self._table(TableName, "GetItem")
        self.calls.append(("get_item", Key["k"]["S"]))
        found = table.get(Key["k"]["S"])
        return {"Item": dict(found)} if found is not None else {}

    def delete_item(self, TableName, Key):
        self._table(TableName, "DeleteItem").pop(Key["k"]["S"], None)
        self.calls.append(("delete_item", Key["k"]["S"]))
        return {}
