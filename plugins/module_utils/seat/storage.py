# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The seats' file system on a login host, converged in one pass (module seat_storage).

A btrfs image of its own, made once (an existing image holds the seats' files and is never touched), loop-mounted
at the seats' home base as ansible.posix.mount state=mounted mounts it (its /etc/fstab line, its folder, mounted;
remounted when that line changed), quotas on, and for each shared temporary folder (/tmp, /var/tmp) a subvolume
open to everyone (1777) bound over the folder the same way, unless the folder is a tmpfs: that uses memory, which
the seat's slice limits, and stays as it is. What is read (fstab, mountinfo, the quota groups, the folders' file
system types) decides which commands run; a rerun over the result runs none that changes anything.
"""

from __future__ import annotations

import os
import re
import shlex
import stat

from ansible_collections.dralab.workshop.plugins.module_utils.files import write

IMAGE_FOLDER_MODE = 0o700
BASE_MODE = 0o755
SHARED_MODE = 0o1777
FSTAB_MODE = 0o644
LABEL_BYTES = 255  # mkfs.btrfs: BTRFS_LABEL_SIZE less its terminating NUL
# An absolute size: truncate -s also takes relative ones (+1G, <1G, %1G), which make no sense for a new image.
SIZE = re.compile(r'[0-9]+[A-Za-z]*')
MOUNT_OPTIONS = re.compile(r'[^\s#]+')
# Whitespace fstab's fields cannot hold (ansible.posix.mount escapes only the space).
FIELD_BREAK = re.compile(r'[^\S ]')
MOUNTINFO_ESCAPE = re.compile(r'\\([0-7]{3})')


class StorageError(Exception):
    """A step that failed, in words that name the step."""


def _path_problem(path):
    if not isinstance(path, str) or not os.path.isabs(path):
        return 'give an absolute path, not %r' % (path,)
    if os.path.normpath(path) == '/':
        return 'not / itself'
    if FIELD_BREAK.search(path):
        return 'no tab or line break (it is a field of /etc/fstab)'
    return None


def input_problems(params):
    """What is wrong with the arguments (module seat_storage's options), before anything is changed."""
    problems = ['%s: %s' % (option, _path_problem(params[option])) for option in ('image', 'path')
                if _path_problem(params[option])]
    if not SIZE.fullmatch(params['size'] or ''):
        problems.append("size: give the image's size as truncate -s takes it, like 16G (not %r)" % (params['size'],))
    if not params['label']:
        problems.append('label: give the file system a label')
    elif len(params['label'].encode('utf-8')) > LABEL_BYTES:
        problems.append('label: at most %d bytes (mkfs.btrfs)' % LABEL_BYTES)
    if not MOUNT_OPTIONS.fullmatch(params['mount_options'] or ''):
        problems.append('mount_options: give the options as one field of /etc/fstab, like loop,nodev,nosuid,discard '
                        '(not %r)' % (params['mount_options'],))
    for folder, name in (params['shared'] or {}).items():
        problem = _path_problem(folder)
        if problem:
            problems.append('shared: %s: %s' % (folder, problem))
        if not isinstance(name, str) or name in ('', '.', '..') or '/' in name or FIELD_BREAK.search(name):
            problems.append("shared: %s: give its subvolume's name below path, one folder name (not %r)"
                            % (folder, name))
    return problems


def mount_points(mountinfo='/proc/self/mountinfo'):
    """The mount points of a mountinfo file (field 5), their octal escapes (\\040 for a space) decoded."""
    with open(mountinfo, encoding='utf-8', errors='surrogateescape') as handle:
        return {MOUNTINFO_ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), fields[4])
                for fields in (line.split() for line in handle) if len(fields) > 4}


def fstab_escape(field):
    """A field as ansible.posix.mount writes it into fstab."""
    return field.replace('\\', '\\134').replace(' ', '\\040').replace('&', '\\046')


def fstab_with(text, entry):
    """fstab text with the line of entry (its six fields) as ansible.posix.mount state=mounted leaves it: each line
    for entry's mount point (2nd field) with other fields replaced in place by the fields separated by single
    spaces, or that line appended when there is none; other lines kept. A line with the same fields in other
    whitespace (or with a comment after them) is the line. Returns the new text, or None when text has the line."""
    wanted = [fstab_escape(field) for field in entry]
    lines = text.split('\n')
    if lines[-1] == '':
        lines.pop()
    kept, found, changed = [], False, False
    for line in lines:
        fields = line.split('#')[0].split()
        # Linux lines hold 4 to 6 fields (dump and pass may be left out); anything else is no line for a mount.
        if len(fields) in (4, 5, 6) and fields[1] == wanted[1]:
            found = True
            if fields != wanted:
                line, changed = ' '.join(wanted), True
        kept.append(line + '\n')
    if not found:
        kept.append(' '.join(wanted) + '\n')
        changed = True
    return ''.join(kept) if changed else None


def make_folders(path, mode):
    """path and its missing parents made, each root's with mode (as the file module makes them); returns those
    made, top first."""
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        path = os.path.dirname(path)
    missing.reverse()
    for folder in missing:
        os.mkdir(folder, mode)
        os.chown(folder, 0, 0)
        os.chmod(folder, mode)
    return missing


class Storage:
    """One pass over the seats' file system of a login host with what it changed (or, in check mode, would change)
    in words (`changes`), the shared folders bound to it (`bound`) and those left alone as tmpfs (`tmpfs`).
    run(argv) runs a command and returns (rc, stdout, stderr)."""

    def __init__(self, run, params, check_mode, fstab='/etc/fstab', mountinfo='/proc/self/mountinfo'):
        self.run = run
        self.params = params
        self.check_mode = check_mode
        self.fstab = fstab
        self.mountinfo = mountinfo
        self.shared = params['shared'] or {}
        self.changes = []
        self.bound = []
        self.tmpfs = []

    def note(self, words):
        self.changes.append(words)

    def command(self, step, argv):
        """Run argv for step; its stdout, or StorageError naming the step and what the command said."""
        rc, out, err = self.run(argv)
        if rc != 0:
            raise StorageError('%s: %s failed (rc %d): %s' % (step, shlex.join(argv), rc, (err or out).strip()))
        return out

    def folder(self, path, mode, label, follow=True):
        """path is a folder of root's with mode, made when missing; a link to one counts only with follow (as the
        file module's default), else it is refused like any other file."""
        if not os.path.lexists(path):
            self.note('folder %s made' % path)
            if not self.check_mode:
                make_folders(path, mode)
            return
        found = os.stat(path) if follow else os.lstat(path)
        if not stat.S_ISDIR(found.st_mode):
            raise StorageError('%s is not a folder%s; move it away and run again'
                               % (path, '' if follow else ' (a link is never followed)'))
        if (found.st_uid, found.st_gid) != (0, 0):
            self.note('%s owner root:root' % label)
            if not self.check_mode:
                os.chown(path, 0, 0, follow_symlinks=follow)
        if stat.S_IMODE(found.st_mode) != mode:
            self.note('%s mode %04o' % (label, mode))
            if not self.check_mode:
                os.chmod(path, mode)

    def image(self):
        """The image, made when there is none; True when this run makes it (or, in check mode, would)."""
        image = self.params['image']
        if os.path.lexists(image):
            return False
        self.note('image made')
        if not self.check_mode:
            step, new = "make the seats' file system image", image + '.new'
            self.command(step, ['truncate', '-s', self.params['size'], new])
            self.command(step, ['mkfs.btrfs', '-q', '-f', '-L', self.params['label'], new])
            os.replace(new, image)
        return True

    def read_fstab(self):
        try:
            with open(self.fstab, 'rb') as handle:
                return handle.read().decode('utf-8', 'surrogateescape')
        except FileNotFoundError:
            return ''

    def write_fstab(self, text):
        try:
            found = os.stat(self.fstab)
            mode, uid, gid = stat.S_IMODE(found.st_mode), found.st_uid, found.st_gid
        except FileNotFoundError:
            mode, uid, gid = FSTAB_MODE, 0, 0
        write.replace_file(self.fstab, text.encode('utf-8', 'surrogateescape'), mode, uid, gid)

    def mount(self, target, remount):
        """Mount target by its fstab line, or remount it (unmounted and mounted again when the remount fails, as
        ansible.posix.mount does); returns (rc, the last command, what it said)."""
        fstab_args = [] if self.fstab == '/etc/fstab' else ['-T', self.fstab]
        if remount:
            argv = ['mount', '-o', 'remount'] + fstab_args + [target]
            rc, out, err = self.run(argv)
            if rc == 0:
                return rc, argv, ''
            argv = ['umount', target]
            rc, out, err = self.run(argv)
            if rc != 0:
                return rc, argv, err or out
        argv = ['mount'] + fstab_args + [target]
        rc, out, err = self.run(argv)
        return rc, argv, err or out

    def mounted(self, step, entry, mounted_words):
        """entry's target mounted as ansible.posix.mount state=mounted leaves it: its folder, its fstab line, mounted
        (remounted when that line changed); a failed mount puts fstab back and removes the folders it made. Returns
        whether target was mounted before."""
        target, made = entry[1], []
        if not os.path.lexists(target):
            self.note('folder %s made' % target)
            if not self.check_mode:
                made = make_folders(target, BASE_MODE)
        before = self.read_fstab()
        after = fstab_with(before, entry)
        if after is not None:
            self.note('fstab line for %s' % target)
            if not self.check_mode:
                self.write_fstab(after)
        was_mounted = os.path.normpath(target) in mount_points(self.mountinfo)
        if was_mounted and after is None:
            return True
        self.note('remounted %s' % target if was_mounted else mounted_words)
        if not self.check_mode:
            rc, argv, said = self.mount(target, was_mounted)
            if rc != 0:
                if after is not None:
                    self.write_fstab(before)
                for folder in reversed(made):
                    os.rmdir(folder)
                raise StorageError('%s: %s failed (rc %d): %s; %s is as it was'
                                   % (step, shlex.join(argv), rc, said.strip(), self.fstab))
        return was_mounted

    def quotas(self, readable):
        path = self.params['path']
        if readable and self.run(['btrfs', 'qgroup', 'show', path])[0] == 0:
            return
        self.note('quotas on')
        if not self.check_mode:
            self.command("turn quotas on for the seats' file system", ['btrfs', 'quota', 'enable', path])

    def shared_subvolumes(self, readable):
        path = self.params['path']
        names = list(dict.fromkeys(self.shared.values()))
        new = set()
        for name in names:
            subvolume = '%s/%s' % (path, name)
            if readable and os.path.lexists(subvolume):
                continue
            new.add(name)
            self.note('subvolume %s made' % name)
            if not self.check_mode:
                self.command('make the shared subvolume %s' % name, ['btrfs', 'subvolume', 'create', subvolume])
        for name in names:
            if self.check_mode and name in new:
                # btrfs makes a subvolume root's, mode 0755.
                self.note('%s mode %04o' % (name, SHARED_MODE))
            else:
                self.folder('%s/%s' % (path, name), SHARED_MODE, name, follow=False)

    def bind_shared(self):
        """Each shared folder bound to its subvolume, unless it is a tmpfs. A folder bound already reads as the
        seats' btrfs, so a rerun finds its binding in place."""
        types = {folder: self.command('read the file system type of %s' % folder,
                                      ['stat', '--file-system', '--format', '%T', folder]).strip()
                 for folder in self.shared}
        for folder, name in self.shared.items():
            if types[folder] == 'tmpfs':
                self.tmpfs.append(folder)
                continue
            self.bound.append(folder)
            self.mounted("bind %s to the seats' file system" % folder,
                         ['%s/%s' % (self.params['path'], name), folder, 'none', 'bind', '0', '0'], '%s bound' % folder)

    def converge(self):
        """Everything, in storage.yml's order; returns `changes`."""
        problems = input_problems(self.params)
        if problems:
            raise StorageError('; '.join(problems) + '. Nothing was changed.')
        image, path = self.params['image'], self.params['path']
        self.folder(os.path.dirname(image), IMAGE_FOLDER_MODE, os.path.dirname(image))
        made = self.image()
        was_mounted = self.mounted("mount the seats' file system", [image, path, 'btrfs', self.params['mount_options'],
                                                                    '0', '0'], 'mounted %s' % path)
        # In check mode the seats' file system can be read only when it is there and mounted already.
        readable = not self.check_mode or (was_mounted and not made)
        if readable:
            self.folder(path, BASE_MODE, path)
        self.quotas(readable)
        self.shared_subvolumes(readable)
        self.bind_shared()
        return self.changes
