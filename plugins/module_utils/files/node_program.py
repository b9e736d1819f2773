# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node program of the collection on one host in one pass (`NodeProgram.converge`): its venv and the venv's pip,
the package (from the files mirror's wheels, or from the collection's source copied beside the venv), the program's
files and links, and for a service its system user, its own files, its systemd unit, enabled and running the
package as installed; module node_program (roles participant_tool and lab_board).

A service is restarted when its unit or one of its files changed, or when the package was installed after the
service started (by this run, or by another role's run into the same venv)."""

from __future__ import annotations

import errno
import grp
import os
import pwd
import shlex
import stat
import time
from urllib.parse import urlsplit

from ansible_collections.dralab.workshop.plugins.module_utils.files import write

UNIT_FOLDER = '/etc/systemd/system'
UNIT_MODE = 0o644
FOLDER_MODE = 0o755
NOLOGIN = '/usr/sbin/nologin'
# The installed release of a package and when it was installed (its dist-info folder's time), read by the venv's
# own Python: one line each, nothing when it is not installed.
INSTALLED_SCRIPT = (
    "import importlib.metadata as m, os, sys\n"
    "try:\n"
    "    d = m.distribution(sys.argv[1])\n"
    "except m.PackageNotFoundError:\n"
    "    sys.exit(0)\n"
    "print(d.version)\n"
    "print(os.stat(str(d._path)).st_mtime)\n"
)
# systemd_service's test for a unit that runs: a unit in auto-restart is "activating".
RUNNING = ('active', 'activating', 'reloading')
# A package installed this long after its service started is newer than the running program.
INSTALL_AFTER_START_SLACK = 0.5


class ProgramError(Exception):
    """A step that failed; the message names it and what to do."""


def _mode(value, option):
    """A file mode as a task writes it ("0600", 0o600 or 384) as an int."""
    try:
        return int(value, 8) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise ProgramError('%s: %r is not a file mode such as "0644"' % (option, value)) from None


def input_problems(params):
    """What is wrong with the arguments, before anything is changed: each problem names its option."""
    problems = []
    for option in ('venv', 'python'):
        if not os.path.isabs(params[option]):
            problems.append('%s: %r is not an absolute path' % (option, params[option]))
    if not params['wheels_url'] and not params['source']:
        problems.append('wheels_url or source: one is needed (the mirror\'s wheels, or the package source on the '
                        'host)')
    if params['wheels_url'] and urlsplit(params['wheels_url']).scheme not in ('http', 'https', 'file'):
        problems.append('wheels_url: %r is not an http(s) or file URL' % params['wheels_url'])
    service = params.get('service') or {}
    lists = [('files', params['files'] or [])]
    if service:
        lists.append(('service.files', service.get('files') or []))
        if not service.get('name') or '/' in service['name'] or service['name'].startswith('.'):
            problems.append('service.name: %r is not a unit name' % service.get('name'))
    for option, files in lists:
        for number, item in enumerate(files):
            where = '%s[%d]' % (option, number)
            if not os.path.isabs(item['path']) or item['path'].endswith('/'):
                problems.append('%s.path: %r is not an absolute file path' % (where, item['path']))
            try:
                _mode(item['mode'], where + '.mode')
            except ProgramError as exc:
                problems.append(str(exc))
    for number, link in enumerate(params['links'] or []):
        if not os.path.isabs(link['dest']):
            problems.append('links[%d].dest: %r is not an absolute path' % (number, link['dest']))
    return problems


def _file_state(path, data, uid, gid, mode):
    """Whether the regular file at path (a link is never followed) has data, and uid, gid and mode."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP):
            return False
        raise
    with os.fdopen(handle, 'rb') as source:
        found = os.fstat(source.fileno())
        if not stat.S_ISREG(found.st_mode):
            return False
        return (source.read() == data and (found.st_uid, found.st_gid) == (uid, gid)
                and stat.S_IMODE(found.st_mode) == mode)


def parse_show(text):
    """`systemctl show -p A -p B` output as a dict."""
    return dict(line.split('=', 1) for line in text.splitlines() if '=' in line)


class NodeProgram:
    """One pass over a node program on its host, with what it changed (or, in check mode, would change) in words
    (`changes`), whether the package was installed (`upgraded`) and the service restarted or started (`restarted`).
    run(argv) -> (rc, stdout, stderr); download(url, dest) writes a URL's body to dest; monotonic() is the clock
    systemd's ActiveEnterTimestampMonotonic is read on."""

    def __init__(self, run, download, params, check_mode, unit_folder=UNIT_FOLDER, monotonic=time.monotonic,
                 now=time.time):
        self.run = run
        self.download = download
        self.params = params
        self.check_mode = check_mode
        self.unit_folder = unit_folder
        self.monotonic = monotonic
        self.now = now
        self.service = params.get('service') or None
        self.changes = []
        self.upgraded = False
        self.restarted = False
        self.venv = params['venv']
        self.folders_made = set()

    def note(self, words):
        self.changes.append(words)

    def command(self, step, argv):
        rc, out, err = self.run(argv)
        if rc != 0:
            raise ProgramError('%s: %s failed (rc %d): %s' % (step, shlex.join(argv), rc, (err or out).strip()))
        return out

    # The venv and the package.

    def make_venv(self):
        if os.path.exists(os.path.join(self.venv, 'bin', 'python')):
            return
        self.note('venv %s made' % self.venv)
        if not self.check_mode:
            self.command('make the venv', [self.params['python'], '-m', 'venv', '--without-pip', self.venv])

    def bootstrap_pip(self):
        if os.path.exists(os.path.join(self.venv, 'bin', 'pip')):
            return
        self.note('pip %s installed in the venv' % self.params['pip_version'])
        if self.check_mode:
            return
        wheel = os.path.join(self.venv, 'pip-%s-py3-none-any.whl' % self.params['pip_version'])
        self.download(self.params['pip_wheel_url'], wheel)
        os.chmod(wheel, 0o644)
        self.command('install pip from its wheel', [os.path.join(self.venv, 'bin', 'python'), wheel + '/pip',
                                                    'install', '--no-index', '--quiet', wheel])

    def installed(self):
        """(release, install time) of the package in the venv, or (None, None)."""
        python = os.path.join(self.venv, 'bin', 'python')
        if not os.path.exists(python):
            return None, None
        lines = self.command('read the installed package',
                             [python, '-c', INSTALLED_SCRIPT, self.params['package']]).split()
        if len(lines) < 2:
            return None, None
        return lines[0], float(lines[1])

    def install_argv(self):
        pip = os.path.join(self.venv, 'bin', 'pip')
        url = self.params['wheels_url']
        if url:
            trusted = ['--trusted-host', urlsplit(url).hostname] if url.startswith('http://') else []
            return [pip, 'install', '--no-index', '--find-links', url] + trusted + [
                '--upgrade-strategy', 'only-if-needed', '%s==%s' % (self.params['package'], self.params['version'])]
        index = ['--index-url', self.params['pip_index_url']] if self.params['pip_index_url'] else []
        return [pip, 'install'] + index + [self.params['source']]

    def install(self):
        """The package at its release (wheels) or from the source when that changed; the install time after."""
        release, when = self.installed()
        wanted = (release != self.params['version'] if self.params['wheels_url']
                  else release is None or self.params['source_changed'])
        if not wanted:
            return when
        self.note('%s %s installed' % (self.params['package'], self.params['version']))
        if self.check_mode:
            self.upgraded = True
            return None
        out = self.command('install %s' % self.params['package'], self.install_argv())
        self.upgraded = 'Successfully installed' in out
        if not self.upgraded:
            self.changes.pop()
        return self.installed()[1]

    # Files, links, the service.

    def owner_ids(self, owner, group):
        try:
            return pwd.getpwnam(owner).pw_uid, grp.getgrnam(group).gr_gid
        except KeyError:
            if self.check_mode:  # its user is made by the real run
                return None, None
            raise ProgramError('the owner %s:%s does not exist' % (owner, group)) from None

    def folder(self, path):
        if os.path.isdir(path) or path in self.folders_made:
            return
        self.folders_made.add(path)
        self.note('folder %s made' % path)
        if self.check_mode:
            return
        missing = []
        while not os.path.lexists(path):
            missing.append(path)
            path = os.path.dirname(path)
        for made in reversed(missing):
            os.mkdir(made, FOLDER_MODE)
            os.chown(made, 0, 0)
            os.chmod(made, FOLDER_MODE)

    def file(self, item, label):
        """The file of item (path, content, owner, group, mode); whether it changed (or would)."""
        path = item['path']
        data = item['content'].encode('utf-8')
        mode = _mode(item['mode'], label)
        self.folder(os.path.dirname(path))
        uid, gid = self.owner_ids(item['owner'], item['group'])
        if uid is not None and _file_state(path, data, uid, gid, mode):
            return False
        self.note('%s written' % path)
        if not self.check_mode:
            write.replace_file(path, data, mode, uid, gid)
        return True

    def link(self, item):
        src, dest = item['src'], item['dest']
        if os.path.islink(dest) and os.readlink(dest) == src:
            return
        if os.path.lexists(dest) and not os.path.islink(dest):
            raise ProgramError('links: %s is there and is not a link; move it away and run again' % dest)
        self.note('link %s -> %s' % (dest, src))
        if not self.check_mode:
            temporary = '%s.dralab-new' % dest
            if os.path.lexists(temporary):
                os.unlink(temporary)
            os.symlink(src, temporary)
            os.replace(temporary, dest)

    def system_user(self, user):
        try:
            pwd.getpwnam(user)
            return
        except KeyError:
            pass
        self.note('system user %s made' % user)
        if not self.check_mode:
            self.command('make the system user %s' % user, ['useradd', '--system', '--shell', NOLOGIN,
                                                            '--home-dir', '/nonexistent', '--no-create-home', user])

    def unit_state(self, name):
        out = self.command('read the state of %s' % name, [
            'systemctl', 'show', '-p', 'ActiveState', '-p', 'UnitFileState', '-p', 'ActiveEnterTimestampMonotonic',
            '%s.service' % name])
        return parse_show(out)

    def started_at(self, state):
        """When the running service started, on the clock of the files' times (from systemd's monotonic time)."""
        try:
            since = int(state.get('ActiveEnterTimestampMonotonic') or 0) / 1e6
        except ValueError:
            return None
        return self.now() - (self.monotonic() - since) if since else None

    def run_service(self, installed_at):
        service = self.service
        name = service['name']
        self.system_user(service['user'])
        changed = False
        for number, item in enumerate(service['files'] or []):
            changed = self.file(item, 'service.files[%d]' % number) or changed
        unit = {'path': os.path.join(self.unit_folder, '%s.service' % name), 'content': service['unit'],
                'owner': 'root', 'group': 'root', 'mode': UNIT_MODE}
        unit_changed = self.file(unit, 'service.unit')
        if unit_changed and not self.check_mode:
            self.command('reload systemd', ['systemctl', 'daemon-reload'])
        state = self.unit_state(name)
        if state.get('UnitFileState') != 'enabled':
            self.note('%s enabled' % name)
            if not self.check_mode:
                self.command('enable %s' % name, ['systemctl', 'enable', '%s.service' % name])
        if state.get('ActiveState') not in RUNNING:
            action = 'start'
        else:
            started = self.started_at(state)
            stale = (installed_at is not None and started is not None
                     and installed_at > started + INSTALL_AFTER_START_SLACK)
            action = 'restart' if (changed or unit_changed or self.upgraded or stale) else None
        if action:
            self.note('%s %sed' % (name, action))
            self.restarted = True
            if not self.check_mode:
                self.command('%s %s' % (action, name), ['systemctl', action, '%s.service' % name])

    def converge(self):
        """Everything in order; returns `changes`."""
        problems = input_problems(self.params)
        if problems:
            raise ProgramError('; '.join(problems) + '. Nothing was changed.')
        for number, item in enumerate(self.params['files'] or []):
            self.file(item, 'files[%d]' % number)
        self.make_venv()
        self.bootstrap_pip()
        installed_at = self.install()
        for item in self.params['links'] or []:
            self.link(item)
        if self.service:
            self.run_service(installed_at)
        return self.changes
