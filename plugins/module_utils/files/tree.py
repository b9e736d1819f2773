# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tree of files copied from the controller to a node with one module call when nothing differs (copy_tree).

The controller lists its files and their digests (`local_files`, `file_digest`); the node answers which of them it
lacks or holds with other bytes (`differences`) and which have other modes or owners (`attribute_fixes`); only those
are sent and written (`write_file`), each atomically.
"""

from __future__ import annotations

import hashlib
import os
import stat

from ansible_collections.dralab.workshop.plugins.module_utils.files import write

# Left out of every tree: Python's byte-code caches, which the controller writes beside the sources it imports.
SKIPPED_DIRS = frozenset({'__pycache__'})
CHUNK = 1 << 16


def file_digest(path, algorithm='sha256'):
    """The digest (hashlib's algorithm, sha256 unless named) of a file's bytes, or None when there is no regular file
    at path."""
    try:
        with open(path, 'rb') as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            digest = hashlib.new(algorithm)
            for chunk in iter(lambda: handle.read(CHUNK), b''):
                digest.update(chunk)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    return digest.hexdigest()


def relative_problem(rel):
    """Why rel cannot name a file below the destination, or None."""
    parts = rel.split('/')
    if not rel or rel.startswith('/') or any(part in ('', '.', '..') for part in parts):
        return '%r is not a relative path below the destination (no leading /, no . or .. parts)' % rel
    return None


def local_files(sources):
    """sources: (local path, folder below the destination) pairs -> {relative path: local path}, sorted.

    A file lands as folder/<its name>; a directory's files land below folder/<its name>/ (as ansible.builtin.copy
    copies a src without a trailing slash). Raises ValueError for a missing source or two sources landing on one
    path."""
    found = {}

    def add(rel, path):
        if rel in found and found[rel] != path:
            raise ValueError('%s and %s would both be copied to %s' % (found[rel], path, rel))
        found[rel] = path

    for path, folder in sources:
        path = path.rstrip('/') or '/'
        prefix = '/'.join(part for part in (folder or '').strip('/').split('/') if part)
        base = (prefix + '/' if prefix else '') + os.path.basename(path)
        if os.path.isfile(path):
            add(base, path)
        elif os.path.isdir(path):
            for top, dirs, names in os.walk(path):
                dirs[:] = sorted(name for name in dirs if name not in SKIPPED_DIRS)
                for name in names:
                    if name.endswith('.pyc'):
                        continue
                    full = os.path.join(top, name)
                    add(base + '/' + os.path.relpath(full, path).replace(os.sep, '/'), full)
        else:
            raise ValueError('source %s does not exist on the controller' % path)
    return dict(sorted(found.items()))


def differences(dest, digests):
    """The relative paths of digests whose file below dest is missing or holds other bytes, sorted."""
    return sorted(rel for rel, digest in digests.items() if file_digest(os.path.join(dest, rel)) != digest)


def _parents(dest, rel):
    """The folders from dest down to rel's folder, dest included."""
    folders = [dest]
    for part in rel.split('/')[:-1]:
        folders.append(os.path.join(folders[-1], part))
    return folders


def attribute_fixes(dest, rels, mode, directory_mode, uid, gid):
    """The existing paths (dest, the files of rels and the folders between) whose mode, owner or group differ, as
    (path, wanted mode) pairs; uid/gid -1 leave owner/group as they are."""
    wanted = {}
    for rel in rels:
        for folder in _parents(dest, rel):
            wanted[folder] = directory_mode
        wanted[os.path.join(dest, rel)] = mode
    fixes = []
    for path, path_mode in sorted(wanted.items()):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if (stat.S_IMODE(info.st_mode) != path_mode or (uid != -1 and info.st_uid != uid)
                or (gid != -1 and info.st_gid != gid)):
            fixes.append((path, path_mode))
    return fixes


def fix_attributes(fixes, uid, gid):
    for path, path_mode in fixes:
        os.chown(path, uid, gid, follow_symlinks=False)
        os.chmod(path, path_mode)


def write_file(dest, rel, data, mode, directory_mode, uid, gid):
    """Write data to dest/rel atomically (a temporary file beside it, then a rename), making the folders between
    with directory_mode."""
    for folder in _parents(dest, rel):
        if not os.path.isdir(folder):
            os.makedirs(folder, directory_mode)
            os.chown(folder, uid, gid)
            os.chmod(folder, directory_mode)
    write.replace_file(os.path.join(dest, rel), data, mode, uid, gid)
