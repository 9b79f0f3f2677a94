"""`faasgd model JOB -o model.npz` and `faasgd evaluate model.npz`: the job's model leaves the job and comes back.

`model` asks emnist-setup (GET ?job_id=J&model=npz, through the gateway) or, with --direct, the store for
the job's model (faasgd.job.model_file: the parameters that met the target, else the final ones), checks the
file reads back without pickle, and places it atomically (a temporary file beside -o, then a rename).
`evaluate` reads such a file as data (faasgd.job.npz_reader: every size it declares checked before it is
inflated, no pickle) and reports its test accuracy on this machine.
"""

from __future__ import annotations

import os

from faasgd import api
from faasgd.api.jobs import in_store, through_gateway
from faasgd.api.models import output_path
from faasgd.cli import output
from faasgd.cli.connect import gateway
from faasgd.config import read_setting
from faasgd.errors import ConfigError
from faasgd.store import open_store
from faasgd.store.keys import check_job_id


def add_parsers(sub, add_runtime_flags) -> None:
    """Register `faasgd model` and `faasgd evaluate` on the main parser's subcommands."""
    model = sub.add_parser("model", help="save a job's model (the parameters that met the target) as an npz file")
    model.add_argument("job_id", help="the job whose model to save")
    model.add_argument("-o", "--output", required=True, help="where to write the npz file")
    model.add_argument("--store", default=None, help="the function's configured store holding the job, by name")
    model.add_argument("--store-url", default=None, help="with --direct: the store holding the job")
    model.add_argument("--direct", action="store_true", help="read the store directly, not through the gateway")
    add_runtime_flags(model)
    evaluate = sub.add_parser("evaluate", help="load a model file and report its test accuracy")
    evaluate.add_argument("file", help="the npz model file (from `faasgd model`)")
    evaluate.add_argument("--dataset", default=None, help="default: the one the model was trained on")
    evaluate.add_argument("--test-samples", type=int, default=None,
                          help="the first N test rows, 0 all (default: as many as the job measured)")
    output.add_flags(evaluate, "print the accuracies as one JSON document on stdout")


def save(args) -> int:
    check_job_id(args.job_id)
    target = output_path(args.output)
    if args.store:
        read_setting({"store": args.store}, "store")  # a name, never a location
    if args.direct:
        job = in_store(open_store(args.store_url or read_setting(os.environ, "store_url")), args.job_id)
    else:
        if args.store_url:
            raise ConfigError("store_url", "only with --direct; through a gateway name the function's store with --store")
        job = through_gateway(gateway(args), {"job_id": args.job_id, **({"store": args.store} if args.store else {})})
    found = api.save_model(job, target)
    print(f"{target}: model of job {found.job_id} ({found.source}, parameter version {found.version}, "
          f"{found.params.size:,} parameters {list(found.sizes)} {found.activation}), validation accuracy "
          f"{found.validation_accuracy:.4f}, test accuracy {found.test_accuracy:.4f} on {found.dataset}")
    return 0


def evaluate(args) -> int:
    answer = api.evaluate(args.file, args.dataset, args.test_samples)
    if args.json:
        output.emit_json(answer)
        return 0
    reported = answer["reported_test_accuracy"]
    print(f"{args.file}: test accuracy {answer['test_accuracy']:.4f} on {answer['rows']:,} rows of {answer['dataset']}"
          + (f" (the job reported {reported:.4f})" if reported is not None else ""))
    return 0
