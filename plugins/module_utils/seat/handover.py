# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A login host's seats handed over to the next group in one pass (module seat_handover).

In this order, for every seat account of the list (only members of the seat group: accounts the role made): its
password locked (one chpasswd -e), its crontabs, linger flag and at jobs gone, its sessions ended and every process
of its user ID killed until none is left, its files in the shared temporary folders removed, and its home removed.
With `remove`, its systemd drop-ins, its account and its own group go too (a seat moved to another login host, or
the teardown). Nothing that is not the seats' is touched: the temporary folders are walked through folder handles,
never through a link, and only entries whose owner is a handed-over seat are removed.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import shutil
import signal
import stat
import time

from ansible_collections.dralab.workshop.plugins.module_utils.seat import accounts, dropins, host_facts

LINGER_DIR = '/var/lib/systemd/linger'
KILL_ROUNDS = 50
KILL_PAUSE = 0.2


def seat_accounts(seats, group):
    """Seat -> its passwd entry, for the seats of the list that are members of group (the accounts the role made);
    an account outside the group keeps everything."""
    try:
        members = grp.getgrnam(group).gr_mem
    except KeyError:
        return {}
    return host_facts.seat_members(seats, members, _passwd_entry)


def _passwd_entry(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def process_owners(proc='/proc'):
    """PID -> the real and effective user IDs of every process now."""
    found = {}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, 'status'), encoding='utf-8') as handle:
                for line in handle:
                    if line.startswith('Uid:'):
                        real, effective = line.split()[1:3]
                        found[int(name)] = {int(real), int(effective)}
                        break
        except (OSError, ValueError):
            continue  # gone meanwhile
    return found


def at_jobs_of(atq_output, seats):
    """(job ID, seat) of atq's lines (ID, date, queue, user last) whose user is one of seats."""
    return [(fields[0], fields[-1]) for fields in map(str.split, atq_output.splitlines())
            if len(fields) > 1 and fields[-1] in seats]


def remove_owned(top, uids, dry_run=False):
    """Remove every entry below the folder top (not top itself) whose owner is one of uids, on top's file system
    only; folders are entered through handles opened without following links. Returns (path, owner) of what was
    removed (with dry_run: what would be); a seat's folder that still holds another's file stays."""
    removed = []
    try:
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return removed
    try:
        _remove_owned_in(fd, top, os.fstat(fd).st_dev, uids, dry_run, removed)
    finally:
        os.close(fd)
    return removed


def _remove_owned_in(fd, path, device, uids, dry_run, removed):
    for name in os.listdir(fd):
        try:
            found = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        full = os.path.join(path, name)
        is_dir = stat.S_ISDIR(found.st_mode)
        if is_dir and found.st_dev != device:
            continue  # another file system mounted there (find -xdev)
        if is_dir:
            try:
                child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                child = None
            if child is not None:
                try:
                    if os.fstat(child).st_ino == found.st_ino:  # still the folder that was looked at
                        _remove_owned_in(child, full, device, uids, dry_run, removed)
                finally:
                    os.close(child)
        if found.st_uid not in uids:
            continue
        if dry_run:
            removed.append((full, found.st_uid))
            continue
        try:
            if is_dir:
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
            removed.append((full, found.st_uid))
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST):
                raise


class Handover(accounts.SeatPass):
    """The handover. run(argv, data=None) runs a command and returns (rc, out, err); sleep(seconds) waits between
    the rounds of killing."""

    def __init__(self, run, params, check_mode, sleep=time.sleep):
        super().__init__(run, params, check_mode)
        self.sleep = sleep

    def must(self, argv, data=None):
        rc, out, err = self.run(argv, data)
        if rc != 0:
            raise accounts.AccountError('%s failed (rc %d): %s' % (' '.join(argv[:2]), rc, (err or out).strip()))
        return out

    def lock(self, found):
        shadow = accounts.read_shadow(self.params['shadow_file'])
        locked = []
        for seat in found:
            field = shadow.get(seat, '')
            if not field.startswith('!'):
                locked.append('%s:!%s\n' % (seat, field))
                self.note(seat, ['password locked'])
        if locked and not self.check_mode:
            self.must(['chpasswd', '-e'], ''.join(locked))

    def jobs(self, found):
        for seat in found:
            paths = [os.path.join(folder, seat) for folder in self.params['cron_spool_dirs']]
            paths.append(os.path.join(self.params['linger_dir'], seat))
            for path in paths:
                if os.path.lexists(path) and not os.path.isdir(path):
                    self.note(seat, ['%s removed' % path])
                    if not self.check_mode:
                        os.unlink(path)
        if not shutil.which('atq'):
            return
        jobs = at_jobs_of(self.must(['atq']), set(found))
        for job, seat in jobs:
            self.note(seat, ['at job %s removed' % job])
        if jobs and not self.check_mode:
            self.must(['atrm'] + [job for job, _seat in jobs])

    def end_processes(self, found):
        uids = {account.pw_uid: seat for seat, account in found.items()}
        if shutil.which('loginctl'):
            rc, out, _err = self.run(['loginctl', 'list-users', '--no-legend'], None)
            logged_in = {int(line.split()[0]) for line in out.splitlines() if rc == 0 and line.split()
                         and line.split()[0].isdigit()}
            for uid in sorted(logged_in & set(uids)):
                self.note(uids[uid], ['sessions ended'])
                if not self.check_mode:
                    self.run(['loginctl', 'terminate-user', str(uid)], None)
        for _round in range(KILL_ROUNDS):
            running = {pid: owners & set(uids) for pid, owners in process_owners(self.params['proc']).items()}
            running = {pid: owners for pid, owners in running.items() if owners}
            if not running:
                return
            for pid, owners in running.items():
                for uid in owners:
                    if 'processes killed' not in self.changes.get(uids[uid], []):
                        self.note(uids[uid], ['processes killed'])
            if self.check_mode:
                return
            for pid in running:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
            self.sleep(KILL_PAUSE)
        raise accounts.AccountError('processes of %s still run after %d attempts to kill them (PIDs %s)' % (
            ', '.join(sorted({uids[uid] for owners in running.values() for uid in owners})), KILL_ROUNDS,
            ', '.join(str(pid) for pid in sorted(running)[:5])))

    def shared_files(self, found):
        uids = {account.pw_uid: seat for seat, account in found.items()}
        counts = {}
        for top in self.params['tmp_dirs']:
            for _path, owner in remove_owned(top, set(uids), dry_run=self.check_mode):
                counts[uids[owner]] = counts.get(uids[owner], 0) + 1
        for seat, count in counts.items():
            self.note(seat, ['%d entries of the shared temporary folders removed' % count])

    def homes(self, found):
        for seat in found:
            home = os.path.join(self.params['home_base'], seat)
            if os.path.lexists(home):
                self.note(seat, ['home removed'])
                if not self.check_mode:
                    if os.path.islink(home) or not os.path.isdir(home):
                        os.unlink(home)
                    else:
                        shutil.rmtree(home)

    def remove_accounts(self, found):
        for seat, account in found.items():
            for folder in dropins.folders(account.pw_uid):
                path = os.path.join(self.params['systemd_dir'], folder)
                if os.path.lexists(path):
                    self.note(seat, ['%s removed' % folder])
                    if not self.check_mode:
                        shutil.rmtree(path)
            self.note(seat, ['account removed'])
            if not self.check_mode:
                self.must(['userdel', seat])
                if accounts.group_id(seat) is not None:
                    self.must(['groupdel', seat])

    def converge(self):
        """Everything, in order; returns the seats handed over (those that have an account of the role here)."""
        found = seat_accounts(self.params['seats'], self.params['group'])
        if not found:
            return []
        self.lock(found)
        self.jobs(found)
        self.end_processes(found)
        self.shared_files(found)
        self.homes(found)
        if self.params['remove']:
            self.remove_accounts(found)
        return sorted(found)
