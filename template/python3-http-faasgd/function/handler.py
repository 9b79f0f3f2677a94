"""Example handler of the python3-http-faasgd template: echoes the request back as JSON."""

TEMPLATE_EXAMPLE = True  # handler_test.py only tests this example; replace both together


def handle(event, context):
    """Return what was asked: method, path, query, parsed JSON body and the serving host."""
    return {
        "statusCode": 200,
        "body": {
            "method": event.method,
            "path": event.path,
            "query": dict(event.query),
            "json": event.json(),
            "hostname": context.hostname,
        },
        "headers": {"X-Handler": "echo"},
    }
