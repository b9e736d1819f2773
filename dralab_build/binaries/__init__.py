"""Upstream binaries built from the Go module proxy: what is built, at which version, how (python -m dralab_build.binaries)."""
