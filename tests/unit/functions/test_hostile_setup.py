"""emnist-setup as a hostile caller meets it: through the template's shim (index.py's Flask app, in process)
to the real handler, over memory stores installed as the function's own. Every table row is refused with
its status and a JSON error naming the field first, and writes nothing to either store nor invokes any
function (support/hostile.py counts both), and the replica stays ready.

Tables: JSON bodies (types, unknown keys, store locations, ranges, sizes past memory_limit/store_budget,
more workers than rows), bodies the shim cannot read (nesting, encodings, duplicates, size), forms,
content types, methods, X-Callback-Url, and the status query (job_id forms, unknown parameters, stores).
"""

import pytest

from support.hostile import NESTED_ARRAYS, NESTED_OBJECTS, as_json, function_env, nested_value
from support.shim import load_shim

SHIM = load_shim("emnist-setup")


@pytest.fixture
def replica(monkeypatch):
    from faasgd.functions import replica_cache

    yield function_env(monkeypatch, SHIM)
    replica_cache.forget()


# (body, status, field, words in the message)
JSON_BODIES = {
    "null": (None, 400, "body", "must be a JSON object"),
    "array": ([], 400, "body", "got list"),
    "zero": (0, 400, "body", "got int"),
    "false": (False, 400, "body", "got bool"),
    "empty string": ("", 400, "body", "got str"),
    "a float": (1.5, 400, "body", "got float"),
    "a list of objects": ([{"number_of_workers": 2}], 400, "body", "got list"),
    "unknown key": ({"batchsize": 3}, 400, "batchsize", "unknown key"),
    "empty key": ({"": 1}, 400, "", "unknown key"),
    "__proto__": ({"__proto__": {"admin": True}}, 400, "__proto__", "unknown key"),
    "unicode key": ({"número_de_workers": 2}, 400, "número_de_workers", "unknown key"),
    "unknown key, null value": ({"number_of_workers": 2, "extra": None}, 400, "extra", "unknown key"),
    "renamed mode": ({"mode": "loop"}, 400, "mode", "invocation_mode"),
    "store_url": ({"store_url": "redis://attacker.example:6379/0"}, 400, "store_url", "never from a request"),
    "store_url with password": ({"store_url": "redis://:pw@10.0.0.1:6379/0"}, 400, "store_url", "never from a request"),
    "store_url memory": ({"store_url": "memory://anything"}, 400, "store_url", "never from a request"),
    "store_url null": ({"store_url": None}, 400, "store_url", "never from a request"),
    "local_store_url": ({"local_store_url": "memcached://attacker:11211"}, 400, "local_store_url", "never"),
    "store as a URL": ({"store": "redis://127.0.0.1:6379/0"}, 400, "store", "name of a configured store"),
    "store as host:port": ({"store": "10.0.0.1:6379"}, 400, "store", "name of a configured store"),
    "store with ../": ({"store": "../etc"}, 400, "store", "name of a configured store"),
    "store not configured": ({"store": "elsewhere"}, 400, "store", "configured: default, memcached"),
    "store a number": ({"store": 5}, 400, "store", "got 5"),
    "store a list": ({"store": ["memcached"]}, 400, "store", "name of a configured store"),
    "workers a shell line": ({"number_of_workers": "2; rm -rf /"}, 400, "number_of_workers", "integer"),
    "workers true": ({"number_of_workers": True}, 400, "number_of_workers", "got True"),
    "workers 0": ({"number_of_workers": 0}, 400, "number_of_workers", "[1, 1024]"),
    "workers -1": ({"number_of_workers": -1}, 400, "number_of_workers", "[1, 1024]"),
    "workers 1e308": ({"number_of_workers": 1e308}, 400, "number_of_workers", "[1, 1024]"),
    "more workers than rows": ({"number_of_workers": 601}, 400, "number_of_workers", "600 training rows"),
    "batch 10**30": ({"batch_size": 10**30}, 400, "batch_size", "[1, 65536]"),
    "keep_s 0": ({"keep_s": 0}, 400, "keep_s", "[1, 2592000]"),
    "keep_s past 30 days": ({"keep_s": 30 * 86400 + 1}, 400, "keep_s", "[1, 2592000]"),
    "keep_s a fraction": ({"keep_s": 1.5}, 400, "keep_s", "integer"),
    "keep_s shorter than the workers' start": ({"keep_s": 2}, 400, "keep_s", "start_timeout_s (240 s)"),
    "keep_s under 2 x start_timeout_s": ({"keep_s": 9, "start_timeout_s": 5}, 400, "keep_s", "start_timeout_s 5"),
    "batch a dict": ({"batch_size": {"$gt": 0}}, 400, "batch_size", "integer"),
    "seed -1": ({"seed": -1}, 400, "seed", "integer"),
    "seed 2**31": ({"seed": 2**31}, 400, "seed", "integer"),
    "learning rate hex": ({"learning_rate": "0x10"}, 400, "learning_rate", "number"),
    "dropout 1": ({"dropout": 1.0}, 400, "dropout", "[0.0, 1.0)"),
    "target 0": ({"target_accuracy": 0}, 400, "target_accuracy", "(0.0, 1.0]"),
    "dataset a path": ({"dataset": "../../etc/passwd"}, 400, "dataset", "must be one of"),
    "dataset NUL": ({"dataset": "synthetic\u0000"}, 400, "dataset", "must be one of"),
    "dataset fullwidth": ({"dataset": "ｓｙｎｔｈｅｔｉｃ"}, 400, "dataset", "must be one of"),
    "dataset a list": ({"dataset": ["synthetic"]}, 400, "dataset", "must be one of"),
    "dataset oversize": ({"dataset": "x" * 500_000}, 400, "dataset", "must be one of"),
    "hidden 0": ({"hidden_sizes": [0]}, 400, "hidden_sizes", "layer sizes"),
    "hidden 9 layers": ({"hidden_sizes": [1] * 9}, 400, "hidden_sizes", "1 to 8"),
    "hidden 1e3": ({"hidden_sizes": "1e3"}, 400, "hidden_sizes", "layer sizes"),
    "hidden nested": ({"hidden_sizes": [[8]]}, 400, "hidden_sizes", "layer sizes"),
    "hidden 65537": ({"hidden_sizes": 65537}, 400, "hidden_sizes", "layer sizes"),
    "mode unknown": ({"invocation_mode": "parallel"}, 400, "invocation_mode", "loop, per-iteration, single"),
    "activation": ({"activation": "sigmoid"}, 400, "activation", "tanh, relu"),
    "topology": ({"store_topology": "mesh"}, 400, "store_topology", "global, node-local"),
    "update rule unknown": ({"update_rule": "mean"}, 400, "update_rule", "sum, average, adagrad"),
    "update rule a list": ({"update_rule": ["sum"]}, 400, "update_rule", "sum, average, adagrad"),
    "communication unknown": ({"communication": "async"}, 400, "communication", "background, coalesce, blocking"),
    "algorithm unknown": ({"algorithm": "hogwild"}, 400, "algorithm", "downpour, grad_avg, model_avg, admm"),
    "downpour with reduce": ({"sync": "reduce"}, 400, "sync", "downpour is asynchronous"),
    "grad_avg with async": ({"algorithm": "grad_avg", "sync": "async"}, 400, "sync", "synchronous rounds"),
    "downpour on s3": ({"channel": "s3"}, 400, "channel", "no atomic add on S3"),
    "admm on the mlp": ({"algorithm": "admm"}, 400, "model", "lr or svm"),
    "svm on ten classes": ({"algorithm": "grad_avg", "model": "svm"}, 400, "model", "binary"),
    "the mlp on higgs-like": ({"algorithm": "grad_avg", "dataset": "higgs-like"}, 400, "dataset", "lr and svm"),
    "s3 unconfigured": ({"algorithm": "grad_avg", "model": "lr", "channel": "s3"}, 400, "s3_url", "not set"),
    "downpour on dynamodb": ({"channel": "dynamodb"}, 400, "channel", "no atomic add"),
    "dynamodb unconfigured": ({"algorithm": "grad_avg", "model": "lr", "channel": "dynamodb"}, 400,
                              "dynamodb-access-key", "needs the secret file"),
    "libsvm a secret": ({"algorithm": "grad_avg", "model": "lr", "dataset": "libsvm:/var/openfaas/secrets/store-password"},
                        400, "dataset", "relative path"),
    "libsvm dot dot": ({"algorithm": "grad_avg", "model": "lr", "dataset": "libsvm:../../etc/passwd"}, 400, "dataset",
                       "relative path"),
    "local steps 0": ({"algorithm": "model_avg", "local_steps": 0}, 400, "local_steps", "[1, 100000]"),
    "round timeout 0": ({"algorithm": "grad_avg", "round_timeout_s": 0}, 400, "round_timeout_s", "number"),
    "lease 0": ({"lease_s": 0}, 400, "lease_s", "[1, 86400]"),
    "epochs 0": ({"max_epochs": 0}, 400, "max_epochs", "[1, 100000]"),
    "n_push 10**7": ({"n_push": 10**7}, 400, "n_push", "[1, 1000000]"),
    "reinvocations 101": ({"max_reinvocations": 101}, 400, "max_reinvocations", "[0, 100]"),
    "start timeout -5": ({"start_timeout_s": -5}, 400, "start_timeout_s", "number"),
    "refresh 0": ({"local_refresh_s": 0}, 400, "local_refresh_s", "number"),
    "store timeout words": ({"store_timeout_s": "forever"}, 400, "store_timeout_s", "number"),
    "a 3.6 GiB shard": ({"train_samples": 5_000_000, "number_of_workers": 1}, 413, "number_of_workers", "memory_limit=1Gi"),
    "64 M parameters": ({"hidden_sizes": "8000,8000"}, 413, "hidden_sizes", "memory_limit=1Gi"),
    "a huge minibatch": ({"batch_size": 60000, "hidden_sizes": 4000, "train_samples": 60000}, 413, "batch_size",
                         "memory_limit"),
    "over the store budget": ({"hidden_sizes": "4000,4000"}, 413, "hidden_sizes", "store_budget=64Mi"),
    "adagrad's G over the store budget": ({"hidden_sizes": "3000,3000", "update_rule": "adagrad"}, 413,
                                          "hidden_sizes", "store_budget=64Mi"),
    "memcached push copies": ({"store": "memcached", "hidden_sizes": "2000,2000", "number_of_workers": 4}, 413,
                              "hidden_sizes", "store_budget=64Mi"),
}


@pytest.mark.parametrize("case", list(JSON_BODIES))
def test_a_json_body_out_of_bounds_is_refused_naming_its_field(replica, case):
    body, status, field, words = JSON_BODIES[case]
    replica.refuses(status, field, words, body=as_json(body))


# Bodies the shim itself refuses before the handler sees a value: (raw bytes, field, words)
RAW_BODIES = {
    "NaN": (b'{"learning_rate": NaN}', 400, "learning_rate", "got nan"),
    "Infinity": (b'{"learning_rate": Infinity}', 400, "learning_rate", "got inf"),
    "-Infinity": (b'{"dropout": -Infinity}', 400, "dropout", "got -inf"),
    "1e999": (b'{"batch_size": 1e999}', 400, "batch_size", "got inf"),
    "a 5000-digit number": (b'{"seed": ' + b"9" * 5000 + b"}", 400, "body", "invalid JSON"),
    "arrays 100k deep": (NESTED_ARRAYS, 400, "body", "nested too deeply"),
    "objects 5000 deep": (NESTED_OBJECTS, 400, "body", "nested too deeply"),
    "a value 5000 deep": (nested_value("hidden_sizes"), 400, "body", "nested too deeply"),
    "invalid UTF-8": (b'{"dataset": "\xff"}', 400, "body", "must be encoded as UTF-8"),
    "UTF-16": ('{"number_of_workers": 1}'.encode("utf-16"), 400, "body", "must be encoded as UTF-8 (JSON's "
                                                                        "encoding), got UTF-16"),
    "UTF-16 without a byte order mark": ('{"number_of_workers": 1}'.encode("utf-16-le"), 400, "body", "got UTF-16"),
    "empty": (b"", 400, "body", "a job needs a JSON object body"),
    "truncated": (b'{"number_of_workers": ', 400, "body", "invalid JSON"),
    "trailing garbage": (b'{} {"number_of_workers": 600}', 400, "body", "invalid JSON"),
    "comments": (b'{"number_of_workers": 2 /* two */}', 400, "body", "invalid JSON"),
    "single quotes": (b"{'number_of_workers': 2}", 400, "body", "invalid JSON"),
    "a key given twice": (b'{"number_of_workers": 1000, "number_of_workers": 2}', 400, "number_of_workers",
                          "given twice"),
    "over max_request_bytes": (b'{"a": "' + b"x" * (1 << 20) + b'"}', 413, "body", "max_request_bytes=1048576"),
}


@pytest.mark.parametrize("case", list(RAW_BODIES))
def test_a_body_the_shim_cannot_take_is_refused_before_the_handler(replica, case):
    body, status, field, words = RAW_BODIES[case]
    replica.refuses(status, field, words, body=body)


@pytest.mark.parametrize("body", [b"", b"{}", b'{"number_of_workers": 1}'])
def test_a_post_with_a_query_string_starts_nothing(replica, body):
    """`POST ?job_id=J&model=npz` (a status read sent as a POST) never starts a default job."""
    replica.refuses(400, "job_id", "never by a POST", body=body, query="job_id=j0123456789abcde&model=npz")


FORMS = {
    "not a number": (b"batch_size=abc", 400, "batch_size", "got 'abc'"),
    "empty value": (b"number_of_workers=", 400, "number_of_workers", "integer"),
    "store_url": (b"store_url=redis%3A%2F%2Fattacker%3A6379%2F0", 400, "store_url", "never from a request"),
    "local_store_url": (b"local_store_url=memcached://attacker:11211", 400, "local_store_url", "never"),
    "store as a URL": (b"store=redis%3A%2F%2F127.0.0.1%3A6379", 400, "store", "name of a configured store"),
    "a key twice": (b"number_of_workers=1&number_of_workers=999", 400, "number_of_workers", "given twice"),
    "an unknown key twice": (b"a=1&a=2", 400, "a", "given twice"),
    "bad escape": (b"%zz", 400, "body", "invalid form"),
    "no key": (b"=1", 400, "body", "a form field has no name"),
    "not UTF-8": (b"dataset=\xff\xfe", 400, "body", "must be encoded as UTF-8"),
    "semicolon smuggling": (b"dataset=synthetic;number_of_workers=3", 400, "dataset", "must be one of"),
    "renamed mode": (b"mode=loop", 400, "mode", "invocation_mode"),
    "64 M parameters": (b"hidden_sizes=8000,8000", 413, "hidden_sizes", "memory_limit"),
    "more workers than rows": (b"number_of_workers=601", 400, "number_of_workers", "training rows"),
}


@pytest.mark.parametrize("case", list(FORMS))
def test_a_form_is_held_to_the_same_rules(replica, case):
    body, status, field, words = FORMS[case]
    replica.refuses(status, field, words, body=body, content_type="application/x-www-form-urlencoded")


@pytest.mark.parametrize("content_type", ["application/xml", "multipart/form-data; boundary=x", "text/html",
                                          "application/octet-stream"])
def test_a_body_of_another_type_is_415(replica, content_type):
    replica.refuses(415, "Content-Type", "is not served", body=b"<number_of_workers>2</number_of_workers>",
                    content_type=content_type)


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS"])
def test_a_method_that_starts_nothing_is_405_with_allow(replica, method):
    answer = replica.refuses(405, "method", f"{method} is not served", method=method, body=as_json({}))
    assert answer.headers["Allow"] == "GET, HEAD, POST"


@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "BREW", "PROPFIND"])
def test_a_method_the_shim_passes_on_to_no_handler_is_405_naming_it(replica, method):
    """TRACE echoes what it is sent; the shim answers these itself, with the methods it hands to handlers."""
    answer = replica.refuses(405, "method", f"{method} is not served", method=method, body=as_json({}))
    assert answer.headers["Allow"] == "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"


def test_head_reads_a_status_and_starts_nothing(replica):
    replica.refuses(400, "job_id", method="HEAD", body=as_json({"number_of_workers": 2}))


CALLBACKS = {
    "ftp": "ftp://x/", "file": "file:///etc/passwd", "javascript": "javascript:alert(1)", "gopher": "gopher://x",
    "no host": "http://", "no host, a path": "http:///x", "no scheme": "//x/y", "empty": "", "a space": "http://h/a b",
    "a DEL": "http://h/\x7f", "CR LF": "http://h/a\r\nX-Evil: 1", "a bare LF": "http://h/\nx", "3000 characters":
    "http://h/" + "a" * 3000,
}


@pytest.mark.parametrize("case", list(CALLBACKS))
def test_a_bad_callback_url_is_refused_before_any_job(replica, case):
    # environ_overrides: the test client itself refuses CR and LF in headers; a raw request carries them
    replica.refuses(400, "X-Callback-Url", "http or https URL", body=as_json({}),
                    environ={"HTTP_X_CALLBACK_URL": CALLBACKS[case]})


QUERIES = {
    "no job_id": ("", 400, "job_id", "required"),
    "only events": ("events=1", 400, "job_id", "required"),
    "a path": ("job_id=../../etc", 400, "job_id", "[A-Za-z0-9_.-]"),
    "70 characters": ("job_id=" + "a" * 70, 400, "job_id", "1-64 characters"),
    "a colon": ("job_id=j1:r:config", 400, "job_id", "[A-Za-z0-9_.-]"),
    "a glob": ("job_id=j*", 400, "job_id", "[A-Za-z0-9_.-]"),
    "NUL": ("job_id=%00", 400, "job_id", "[A-Za-z0-9_.-]"),
    "unicode": ("job_id=%EF%BD%8A1", 400, "job_id", "[A-Za-z0-9_.-]"),
    "given twice": ("job_id=j1&job_id=j2", 400, "job_id", "given more than once"),
    "unknown parameter": ("job_id=j1&x=1", 400, "x", "unknown query parameter"),
    "store_url": ("job_id=j1&store_url=redis://attacker:6379/0", 400, "store_url", "unknown query parameter"),
    "local_store_url": ("job_id=j1&local_store_url=memcached://a:1", 400, "local_store_url", "unknown"),
    "store as a URL": ("job_id=j1&store=redis://attacker:6379/0", 400, "store", "no store named"),
    "store with ../": ("job_id=j1&store=../", 400, "store", "no store named"),
    "store not configured": ("job_id=j1&store=nope", 400, "store", "configured: default, memcached"),
    "no such job": ("job_id=jmissing", 404, "job_id", "no job"),
    "no such job, events": ("job_id=jmissing&events=1", 404, "job_id", "no job"),
    "no such job, model": ("job_id=jmissing&model=npz", 404, "job_id", "no job"),
    "model in another format": ("job_id=j1&model=pickle", 400, "model", "must be one of npz"),
    "model empty": ("job_id=j1&model=", 400, "model", "must be one of npz"),
    "model given twice": ("job_id=j1&model=npz&model=npz", 400, "model", "given more than once"),
    "model with events": ("job_id=j1&model=npz&events=1", 400, "model", "without events"),
    "model, job a path": ("job_id=../x&model=npz", 400, "job_id", "[A-Za-z0-9_.-]"),
    "model, store as a URL": ("job_id=j1&model=npz&store=redis://a:1/0", 400, "store", "no store named"),
}


def test_the_model_route_answers_409_while_a_job_has_none_then_the_npz_file(replica):
    import numpy as np

    from faasgd import job
    from faasgd.job import model_file
    from faasgd.config import load_config

    store = replica.stores[0]
    config = load_config({}, {"dataset": "synthetic", "train_samples": 600, "hidden_sizes": [8]})
    job_id = job.create_job(store, config)
    replica.refuses(409, "model", "still training below its target", method="GET",
                    query=f"job_id={job_id}&model=npz", content_type=None)
    weights = store.get_weights(job_id)[0] + np.float32(0.25)
    model_file.keep_crossing(store, job_id, 0, weights, lambda: 0.5, {
        "validation_accuracy": 0.9, "at": store.server_time(), "samples": 10, "epochs": 0.02, "version": 0})
    answer = replica.send(method="GET", query=f"job_id={job_id}&model=npz", content_type=None)
    assert answer.status_code == 200 and answer.mimetype == "application/octet-stream"
    found = model_file.from_npz(answer.get_data())
    np.testing.assert_array_equal(found.params, weights)
    assert (found.job_id, found.validation_accuracy, found.test_accuracy) == (job_id, 0.9, 0.5)


@pytest.mark.parametrize("case", list(QUERIES))
def test_a_status_query_out_of_bounds_names_the_parameter(replica, case):
    query, status, field, words = QUERIES[case]
    replica.refuses(status, field, words, method="GET", query=query, content_type=None)
