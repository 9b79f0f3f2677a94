"""`python -m faasgd.testing.moto_atomic -H HOST -p PORT`: moto's S3 server with PUT atomic, as S3's is.

moto (5.2.5, S3Response.put_object) stores a new object in its bucket and then sets its metadata, so a GET
arriving between the two sees the object without its x-amz-meta-* headers; S3 (and MinIO) make an object
visible with its metadata or not at all. faasgd's S3Space rightly refuses an object without its sha256
metadata as "not written by faasgd", so a round reader racing a writer failed jobs on moto alone (seen once
in the lambdaml e2e under load). Here one lock covers moto's object PUT, GET and HEAD handlers: nothing else
of moto changes. $FAASGD_MOTO_PUT_GAP_S (tests of this file only) widens moto's window between the two to
that many seconds, so a GET landing in it is not left to chance.
"""

import os
import sys
import threading
import time

from moto.s3.models import FakeKey
from moto.s3.responses import S3Response
from moto.server import main

_OBJECTS = threading.RLock()


def _atomic(handler):
    def locked(self, *args, **kwargs):
        with _OBJECTS:
            return handler(self, *args, **kwargs)
    locked.__name__ = handler.__name__
    return locked


_GAP_S = float(os.environ.get("FAASGD_MOTO_PUT_GAP_S") or 0)
if _GAP_S > 0:
    _set_metadata = FakeKey.set_metadata

    def _late_metadata(self, *args, **kwargs):
        time.sleep(_GAP_S)  # the object is already in its bucket, without its metadata
        return _set_metadata(self, *args, **kwargs)
    FakeKey.set_metadata = _late_metadata

for _name in ("put_object", "get_object", "head_object"):
    setattr(S3Response, _name, _atomic(getattr(S3Response, _name)))

if __name__ == "__main__":
    sys.exit(main())
