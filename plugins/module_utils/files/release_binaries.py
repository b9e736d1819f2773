# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Binaries of one release in a folder, each with a record of the release it is (module release_binaries).

A binary is downloaded only when its record names another release or the file is gone, so a converged node makes
no network request (check mode neither). A download is checked against its checksum (algorithm:hex, or
algorithm:URL of a checksum file as dl.k8s.io publishes) before it replaces the file; then the record is written.
"""

from __future__ import annotations

import hashlib
import os

from ansible_collections.dralab.workshop.plugins.module_utils.files import write
from ansible_collections.dralab.workshop.plugins.module_utils.files.tree import file_digest

CHUNK = 1 << 20


class BinaryError(Exception):
    """A download that failed or did not match its checksum: the message says which and what to check."""


def input_problems(binaries):
    """What is wrong with the binaries' list, each naming the field; empty when nothing is."""
    problems, seen = [], set()
    for index, binary in enumerate(binaries):
        name = binary['name']
        where = 'binaries[%d]' % index
        if not name or '/' in name or name in ('.', '..'):
            problems.append('%s.name: %r is no file name' % (where, name))
        if name in seen:
            problems.append('%s.name: %s is named twice' % (where, name))
        seen.add(name)
        algorithm, _colon, value = binary['checksum'].partition(':')
        if algorithm not in hashlib.algorithms_guaranteed or not value:
            problems.append('%s.checksum: %r must be algorithm:hex or algorithm:URL of a checksum file (for example '
                            'sha256:...)' % (where, binary['checksum']))
        if not binary['release'].strip() or '\n' in binary['release']:
            problems.append('%s.release: one line, not empty' % where)
    return problems


def checksum_in(text, filename):
    """The digest a checksum file gives filename: a bare digest, or the line '<digest>  <file>' (sha256sum's
    format, '*' for binary mode) that names it."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    if len(lines) == 1 and len(lines[0]) == 1:
        return lines[0][0].lower()
    for parts in lines:
        if len(parts) == 2 and os.path.basename(parts[1].lstrip('*')) == filename:
            return parts[0].lower()
    return None


def recorded(marker):
    try:
        with open(marker, encoding='utf-8') as handle:
            return handle.read().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None


class ReleaseBinaries:
    """Converge params (module release_binaries' options) with fetch(url) -> an open response (read(n))."""

    def __init__(self, fetch, params, check_mode):
        self.fetch, self.params, self.check_mode = fetch, params, check_mode
        self.installed, self.recorded, self.folders = [], [], []

    def folder(self, path):
        if write.folder(path, 0o755, self.check_mode):
            self.folders.append(path)

    def expected(self, binary):
        algorithm, _colon, value = binary['checksum'].partition(':')
        if '://' not in value:
            return algorithm, value.lower()
        text = self.read(value).decode('utf-8', 'replace')
        digest = checksum_in(text, os.path.basename(binary['url'].split('?')[0]))
        if not digest:
            raise BinaryError('%s: the checksum file %s has no digest for %s' % (binary['name'], value, binary['url']))
        return algorithm, digest

    def read(self, url):
        response = self.fetch(url)
        try:
            return response.read()
        finally:
            response.close()

    def download(self, binary, algorithm, wanted, dest):
        """The binary's bytes in a new file beside dest, mode 0755, renamed over dest once they match."""
        digest = hashlib.new(algorithm)
        response = self.fetch(binary['url'])
        try:
            with write.new_file(dest, 0o755) as out:
                for chunk in iter(lambda: response.read(CHUNK), b''):
                    digest.update(chunk)
                    out.write(chunk)
                if digest.hexdigest() != wanted:
                    raise BinaryError('%s: %s has %s %s, not %s as its checksum says; nothing was replaced (is the '
                                      'files mirror serving another release?)'
                                      % (binary['name'], binary['url'], algorithm, digest.hexdigest(), wanted))
        finally:
            response.close()

    def binary(self, binary):
        dest = os.path.join(self.params['bin_dir'], binary['name'])
        marker = os.path.join(self.params['marker_dir'], binary['name'])
        if os.path.isfile(dest) and recorded(marker) == binary['release']:
            return
        if self.check_mode:
            self.installed.append(binary['name'])
            return
        algorithm, wanted = self.expected(binary)
        if file_digest(dest, algorithm) == wanted:
            self.recorded.append(binary['name'])  # the right bytes already, only the record was missing or old
        else:
            self.download(binary, algorithm, wanted, dest)
            self.installed.append(binary['name'])
        os.chmod(dest, 0o755)
        write.replace_file(marker, binary['release'] + '\n', 0o644)

    def converge(self):
        self.folder(self.params['bin_dir'])
        self.folder(self.params['marker_dir'])
        for binary in self.params['binaries']:
            self.binary(binary)
        return bool(self.installed or self.recorded or self.folders)
