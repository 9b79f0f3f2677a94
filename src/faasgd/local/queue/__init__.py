"""The gateway's async queue, as OpenFaaS's queue-worker runs it: the delivery rules of `ce` and `pro` (rules), the
queue-workers that deliver calls through the gateway and post their callbacks (workers), what travels (messages:
the call a broker keeps, the answer a delivery gets, the Broker protocol), its errors (errors), and the broker on
nats-server's JetStream (jetstream).

It owns when a call is delivered, retried, given up and reported; the broker's process is services.broker's.
"""
