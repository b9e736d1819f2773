"""Build a workshop's offline mirror (and the podman lab's) from the Go module proxy and Debian's packages.

What the roles download when dralab_download_mirror / dralab_registry_mirror
point at the mirror (see docs/offline-mirror.md), built from source instead of
downloaded, into ${DRALAB_CACHE:-~/.cache/dralab}/mirror/:

    files/    laid out like the upstream URLs, with the checksum files the roles
              check (mirror_files_src): kubeadm/kubelet/kubectl, the containerd,
              runc, CNI plugins and crictl releases, helm, kube-flannel.yml,
              charts/dra-example-driver-<version>.tgz, and wheels/: the wheel of
              can-has-gpu + dralab-lease-reaper (dralab_build/wheels.py), its
              dependencies for the nodes' Python and pip (participant_tool role),
              listed in wheels/wheels.json
    images/   one docker-archive per image, <last name part>_<tag>.tar, under its
              upstream name (mirror_images_src), index.json (the mirror_images
              list: archive, name, tag) and the chart again (mirror_charts)
    mirror.json   written last: what the mirror holds. A mirror without it (or
              with one for other versions) is incomplete and gets built.

Versions come from the roles' defaults (roles/*/defaults/main.yml), with the
podman lab's inventory variables (inventories/local/group_vars/all.yml) and
--set NAME=VALUE on top, as Ansible would see them; the control plane images
are the ones `kubeadm config images list` names for that Kubernetes version.
Binaries come from dralab_build/binaries (cached by version under bin/; a
build with the lab's own source edits, such as the example driver's, under the
version plus a hash of the edits, which is also part of its image's key).
Images are built with `podman build` FROM scratch + COPY of static binaries,
reproducibly (the same inputs give the same image ID); kube-proxy and flannel
also get a Debian rootfs (debootstrap minbase with iptables, nftables and
conntrack, ADDed as a tarball) because they run those tools. busybox is Debian's
busybox-static. podman runs with a private configuration and image store under
${DRALAB_CACHE}/mirror-work/, which also holds the base rootfs, the build
contexts and one state file per mirror item.

Every output is written under a temporary name and renamed when complete; an
item counts as built when its state file matches its versions. A warm run
(nothing changed) only reads mirror.json and stats the files.

Needs: Go (see dralab_build/binaries), gcc and Debian's libseccomp-dev (runc), podman,
debootstrap, dpkg-deb and apt-get (busybox-static is downloaded, not installed).

Examples:
    nice -n 10 python -m dralab_build.mirror
    python -m dralab_build.mirror --set containerd_crictl_version=1.34.0
    python -m dralab_build.mirror --summary      # what the mirror holds, build nothing
"""

from __future__ import annotations

import argparse
import platform
import time

from dralab_build.binaries.cli import add_role_var_arguments, apply_role_var_arguments
from dralab_build.binaries.components import BuildError
from dralab_build.cache import file_lock
from dralab_build.mirror.builder import Builder
from dralab_build.mirror.images import BASE_PACKAGES
from dralab_build.mirror.output import MirrorError, log
from dralab_build.mirror.plan import BUSYBOX_TAG, make_plan
from dralab_build.mirror.summary import print_summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dralab_build.mirror", description=__doc__.split("\n\n", maxsplit=1)[0],
                                     epilog="Output: $DRALAB_CACHE/mirror (default ~/.cache/dralab/mirror).")
    parser.add_argument("--go", help="the go binary to use (see python -m dralab_build.binaries --help)")
    parser.add_argument("--busybox-tag", default=BUSYBOX_TAG,
                        help=f"tag of docker.io/library/busybox (default {BUSYBOX_TAG}, what the exercises run)")
    parser.add_argument("--debian-suite", default=platform.freedesktop_os_release().get("VERSION_CODENAME")
                        or "bookworm", help="Debian suite of the kube-proxy/flannel base (default: this host's)")
    parser.add_argument("--debian-mirror", default="http://deb.debian.org/debian",
                        help="Debian mirror for debootstrap")
    parser.add_argument("--base-packages", default=BASE_PACKAGES,
                        help=f"packages of the kube-proxy/flannel base (default {BASE_PACKAGES})")
    parser.add_argument("--force", action="store_true", help="remake every mirror item (binaries stay cached)")
    parser.add_argument("--summary", action="store_true", help="print what the mirror holds; build nothing")
    add_role_var_arguments(parser)
    args = parser.parse_args(argv)
    overrides = apply_role_var_arguments(parser, args)

    builder = Builder(args)
    if args.summary:
        if not builder.manifest_path().is_file():
            log(f"no complete mirror at {builder.root}")
            return 1
        print_summary(builder.root)
        return 0

    started = time.monotonic()
    try:
        with file_lock(builder.cache / "mirror-work" / "build.lock"):
            builder.plan = make_plan(args, overrides, builder)
            if not args.force and builder.is_complete():
                log(f"up to date ({time.monotonic() - started:.1f}s)")
            else:
                builder.manifest_path().unlink(missing_ok=True)  # incomplete until the end
                pending = [i for i in builder.plan.items if args.force or not builder.is_built(i)]
                log(f"{len(pending)} of {len(builder.plan.items)} items to make")
                for item in pending:
                    builder.make(item)
                for rel in builder.prune():
                    log(f"removed {rel} (not in the mirror any more)")
                builder.write_manifest()
                log(f"built in {time.monotonic() - started:.0f}s")
    except (MirrorError, BuildError) as exc:
        log(f"FAILED: {exc}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    print_summary(builder.root)
    print(f"\nTime: {time.monotonic() - started:.1f}s")
    return 0
