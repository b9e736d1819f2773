"""The integration tier's local control plane (tests/harness/cluster.py is its command line)."""
