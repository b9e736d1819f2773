# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""release_binaries on a folder of tmp_path, the downloads served from a dict: what is fetched, replaced and
recorded, and what is refused."""

from __future__ import annotations

import hashlib
import io
import os

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.files import release_binaries as rb

BASE = "http://mirror.test/dl.k8s.io/release/v1.35.4/bin/linux/amd64/"
RELEASE = "v1.35.4 linux/amd64"


class Server:
    def __init__(self, files):
        self.files, self.asked = files, []

    def fetch(self, url):
        self.asked.append(url)
        if url not in self.files:
            raise rb.BinaryError("download %s: Not Found (HTTP 404); is the files mirror up?" % url)
        return io.BytesIO(self.files[url])


def sha(data):
    return hashlib.sha256(data).hexdigest()


def binary(name, data, pinned=False, release=RELEASE):
    url = BASE + name
    return {"name": name, "url": url, "release": release,
            "checksum": "sha256:" + (sha(data) if pinned else url + ".sha256")}


def served(**files):
    content = {}
    for name, data in files.items():
        content[BASE + name] = data
        content[BASE + name + ".sha256"] = sha(data).encode()
    return Server(content)


def params(tmp_path, binaries):
    return {"binaries": binaries, "bin_dir": str(tmp_path / "bin"), "marker_dir": str(tmp_path / "installed"),
            "timeout": 60}


def converge(tmp_path, server, binaries, check_mode=False):
    work = rb.ReleaseBinaries(server.fetch, params(tmp_path, binaries), check_mode)
    return work, work.converge()


def test_a_new_node_gets_each_binary_with_its_record_then_a_rerun_fetches_nothing(tmp_path):
    server = served(kubeadm=b"adm", kubectl=b"ctl")
    binaries = [binary("kubeadm", b"adm"), binary("kubectl", b"ctl", pinned=True)]
    work, changed = converge(tmp_path, server, binaries)
    assert changed and work.installed == ["kubeadm", "kubectl"] and work.recorded == []
    assert (tmp_path / "bin" / "kubectl").read_bytes() == b"ctl"
    assert os.stat(tmp_path / "bin" / "kubeadm").st_mode & 0o777 == 0o755
    assert (tmp_path / "installed" / "kubeadm").read_text() == RELEASE + "\n"
    assert os.stat(tmp_path / "installed").st_mode & 0o777 == 0o755
    # The checksum file for the one that is not pinned, then the two binaries.
    assert server.asked == [BASE + "kubeadm.sha256", BASE + "kubeadm", BASE + "kubectl"]
    server.asked.clear()
    work, changed = converge(tmp_path, server, binaries)
    assert not changed and server.asked == []
    work, changed = converge(tmp_path, server, binaries, check_mode=True)
    assert not changed and server.asked == []


def test_another_release_is_downloaded_and_check_mode_says_so_without_a_request(tmp_path):
    converge(tmp_path, served(kubectl=b"old"), [binary("kubectl", b"old")])
    newer = [binary("kubectl", b"new", release="v1.35.5 linux/amd64")]
    server = served(kubectl=b"new")
    work, changed = converge(tmp_path, server, newer, check_mode=True)
    assert changed and work.installed == ["kubectl"] and server.asked == []
    assert (tmp_path / "bin" / "kubectl").read_bytes() == b"old"
    work, changed = converge(tmp_path, server, newer)
    assert changed and (tmp_path / "bin" / "kubectl").read_bytes() == b"new"
    assert (tmp_path / "installed" / "kubectl").read_text() == "v1.35.5 linux/amd64\n"


def test_a_file_with_the_right_bytes_only_gets_its_record(tmp_path):
    (tmp_path / "bin").mkdir(mode=0o755)
    (tmp_path / "bin" / "kubelet").write_bytes(b"let")
    server = served(kubelet=b"let")
    work, changed = converge(tmp_path, server, [binary("kubelet", b"let")])
    assert changed and work.recorded == ["kubelet"] and work.installed == []
    assert server.asked == [BASE + "kubelet.sha256"]
    assert os.stat(tmp_path / "bin" / "kubelet").st_mode & 0o777 == 0o755


def test_a_gone_file_is_downloaded_again_although_its_record_is_right(tmp_path):
    converge(tmp_path, served(kubectl=b"ctl"), [binary("kubectl", b"ctl")])
    (tmp_path / "bin" / "kubectl").unlink()
    work, _changed = converge(tmp_path, served(kubectl=b"ctl"), [binary("kubectl", b"ctl")])
    assert work.installed == ["kubectl"] and (tmp_path / "bin" / "kubectl").read_bytes() == b"ctl"


def test_bytes_that_do_not_match_replace_nothing_and_leave_no_temporary_file(tmp_path):
    converge(tmp_path, served(kubectl=b"old"), [binary("kubectl", b"old")])
    server = served(kubectl=b"tampered")
    wanted = binary("kubectl", b"expected", pinned=True, release="v1.35.5 linux/amd64")
    with pytest.raises(rb.BinaryError, match=r"kubectl: .*/kubectl has sha256 [0-9a-f]+, not [0-9a-f]+ as its "
                                             r"checksum says; nothing was replaced"):
        converge(tmp_path, server, [wanted])
    assert (tmp_path / "bin" / "kubectl").read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path / "bin")) == ["kubectl"]
    assert (tmp_path / "installed" / "kubectl").read_text() == RELEASE + "\n"


def test_a_missing_download_names_the_url(tmp_path):
    with pytest.raises(rb.BinaryError, match=r"download http://mirror.test/.*/kubeadm.sha256: Not Found"):
        converge(tmp_path, Server({}), [binary("kubeadm", b"adm")])


@pytest.mark.parametrize("text, digest", [
    ("abc123\n", "abc123"),
    ("ABC123  kubectl\n", "abc123"),
    ("111  kubeadm\n222 *kubectl\n", "222"),
    ("111  ./bin/kubectl\n", "111"),
    ("111  kubeadm\n", None),
])
def test_the_digest_of_a_checksum_file(text, digest):
    assert rb.checksum_in(text, "kubectl") == digest


def test_a_checksum_file_without_the_binary_fails_naming_both(tmp_path):
    server = Server({BASE + "kubectl.sha256": b"111  kubeadm\n"})
    with pytest.raises(rb.BinaryError, match=r"kubectl: the checksum file .*kubectl.sha256 has no digest for .*kubectl"):
        converge(tmp_path, server, [binary("kubectl", b"ctl")])


def test_bad_input_names_the_field():
    problems = rb.input_problems([
        {"name": "a/b", "url": "u", "checksum": "sha256:1", "release": "r"},
        {"name": "k", "url": "u", "checksum": "md6:1", "release": "r"},
        {"name": "k", "url": "u", "checksum": "sha256:", "release": "two\nlines"},
    ])
    assert problems == [
        "binaries[0].name: 'a/b' is no file name",
        "binaries[1].checksum: 'md6:1' must be algorithm:hex or algorithm:URL of a checksum file (for example sha256:...)",
        "binaries[2].name: k is named twice",
        "binaries[2].checksum: 'sha256:' must be algorithm:hex or algorithm:URL of a checksum file (for example "
        "sha256:...)",
        "binaries[2].release: one line, not empty",
    ]
