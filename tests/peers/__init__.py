"""Real peers for tests and benchmarks: pulsar-lite, Apache Pulsar standalone, a fault proxy.

Every process started here binds 127.0.0.1 only and is stopped by PID.
"""
