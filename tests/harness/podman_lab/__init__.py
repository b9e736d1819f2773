"""The lab tier's podman "VMs" (tests/harness/nodes.py is its command line)."""
