# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The seats' Linux accounts on a login host, converged in one pass (module seat_accounts).

Per seat: its own primary group, an account in the shared seat group only, the instructor's comment and shell, its
password hash, a private home (a btrfs subvolume on the seats' file system, or a folder), the files the lab keeps in
the home (written as the seat: seat/home_files.py) and its systemd drop-ins (seat/dropins.py). The accounts are read
once (/etc/passwd, /etc/group, /etc/shadow); only what differs is changed, by the shadow tools (groupadd, useradd,
usermod, and one chpasswd -e for every password, which never shows a hash on a command line).
"""

from __future__ import annotations

import grp
import os
import pwd
import stat

from ansible_collections.dralab.workshop.plugins.module_utils.seat import dropins, home_files

HOME_MODE = 0o700


class AccountError(Exception):
    """A step that failed, in words that name the seat and the step."""


def read_shadow(path='/etc/shadow'):
    """Account name -> its password field."""
    found = {}
    with open(path, encoding='utf-8') as handle:
        for line in handle:
            fields = line.rstrip('\n').split(':')
            if len(fields) > 1:
                found[fields[0]] = fields[1]
    return found


def group_id(name):
    """The ID of group name, or None (a group check mode has not made)."""
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def supplementary_groups():
    """Account name -> the names of the groups that list it as a member."""
    found = {}
    for group in grp.getgrall():
        for member in group.gr_mem:
            found.setdefault(member, set()).add(group.gr_name)
    return found


def usermod_args(wanted, account, primary_gid, groups):
    """What usermod must change for an existing account (a pwd entry; groups: the names of its supplementary
    groups) to be wanted, and those changes in words. The password is chpasswd's."""
    args, words = [], []
    for flag, field, value, word in (('-c', account.pw_gecos, wanted['comment'], 'comment'),
                                     ('-s', account.pw_shell, wanted['shell'], 'shell'),
                                     ('-d', account.pw_dir, wanted['home'], 'home')):
        if field != value:
            args += [flag, value]
            words.append(word)
    if account.pw_gid != primary_gid:
        args += ['-g', wanted['name']]
        words.append('primary group')
    if groups != {wanted['group']}:
        args += ['-G', wanted['group']]
        words.append('groups')
    return args, words


class SeatPass:
    """One pass over the seats of a login host with what it changed per seat, in words (`changes`)."""

    def __init__(self, run, params, check_mode):
        self.run = run
        self.params = params
        self.check_mode = check_mode
        self.changes = {}

    def note(self, seat, words):
        if words:
            self.changes.setdefault(seat, []).extend(words)


class Converger(SeatPass):
    """The accounts, homes, home files and drop-ins. run(argv, data=None) runs a command and raises AccountError when
    it fails."""

    def groups(self):
        present = {group.gr_name for group in grp.getgrall()}
        for name in [self.params['group']] + self.params['seats']:
            if name not in present:
                self.note(name if name in self.params['seats'] else '(all)', ['group %s made' % name])
                if not self.check_mode:
                    self.run(['groupadd', name])

    def home(self, seat):
        home = os.path.join(self.params['home_base'], seat)
        if os.path.lexists(home):
            return home, False
        self.note(seat, ['home made' + (' (a subvolume)' if self.params['home_subvolumes'] else '')])
        if not self.check_mode:
            if self.params['home_subvolumes']:
                self.run(['btrfs', 'subvolume', 'create', home])
            else:
                os.mkdir(home, HOME_MODE)
        return home, True

    def accounts(self):
        """Make or fix each account and its home; returns seat -> (home, made now) for those that exist now."""
        passwords = self.params['passwords']
        shadow = read_shadow(self.params['shadow_file'])
        member_of = supplementary_groups()
        homes, new_passwords = {}, []
        for seat in self.params['seats']:
            home, made = self.home(seat)
            wanted = {'name': seat, 'group': self.params['group'], 'comment': self.params['comment'],
                      'shell': self.params['shell'], 'home': home}
            try:
                account = pwd.getpwnam(seat)
            except KeyError:
                account = None
            if account is None:
                self.note(seat, ['account made'])
                if not self.check_mode:
                    self.run(['useradd', '--no-create-home', '-c', wanted['comment'], '-g', seat,
                              '-G', wanted['group'], '-s', wanted['shell'], '-d', home, seat])
                new_passwords.append(seat)
            else:
                args, words = usermod_args(wanted, account, group_id(seat), member_of.get(seat, set()))
                self.note(seat, words)
                if args and not self.check_mode:
                    self.run(['usermod'] + args + [seat])
                # A locked account's '!' prefix differs too: the hash unlocks it.
                if shadow.get(seat) != passwords[seat]:
                    new_passwords.append(seat)
            if account is not None or not self.check_mode:
                homes[seat] = (home, made)
        for seat in new_passwords:
            self.note(seat, ['password'])
        if new_passwords and not self.check_mode:
            self.run(['chpasswd', '-e'], data=''.join('%s:%s\n' % (seat, passwords[seat]) for seat in new_passwords))
        return homes

    def private_home(self, seat, home, account):
        """The home is the seat's, mode 0700 (root may fix it: it sits in a root-owned folder)."""
        found = os.lstat(home)
        if not stat.S_ISDIR(found.st_mode):
            raise AccountError('%s: %s is not a folder; move it away and run again' % (seat, home))
        words = []
        if (found.st_uid, found.st_gid) != (account.pw_uid, account.pw_gid):
            words.append('home owner')
            if not self.check_mode:
                os.lchown(home, account.pw_uid, account.pw_gid)
        if stat.S_IMODE(found.st_mode) != HOME_MODE:
            words.append('home mode 0700')
            if not self.check_mode:
                os.chmod(home, HOME_MODE)
        self.note(seat, words)

    def converge(self, kubeconfigs, demos, skeleton):
        """Everything, in order; returns seat -> user ID for the seats that have an account."""
        self.groups()
        homes = self.accounts()
        uids = {}
        for seat, (home, made) in homes.items():
            account = pwd.getpwnam(seat)
            uids[seat] = account.pw_uid
            if made and self.check_mode:
                continue
            self.private_home(seat, home, account)
            try:
                self.note(seat, home_files.as_user(account.pw_uid, account.pw_gid, home_files.converge_home, home,
                                                   kubeconfigs.get(seat), demos, skeleton if made else None,
                                                   self.check_mode))
            except RuntimeError as exc:
                raise AccountError('%s: writing the files of %s as the seat failed: %s' % (seat, home, exc)) from None
            self.note(seat, dropins.converge(self.params['systemd_dir'], account.pw_uid, self.params['slice_dropin'],
                                             self.params['user_manager_dropin'], self.check_mode))
        return uids
