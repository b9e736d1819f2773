# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""seat_storage's pass over the seats' file system on real files (fstab, mountinfo, the folders) with recorded
commands: what a cold host gets, in storage.yml's order, and that a converged one gets nothing (the image, the
mounts and the quotas themselves are made on the lab's login hosts: tests/lab/test_seat_host.py)."""

from __future__ import annotations

import os
import stat

import pytest
import yaml

from ansible_collections.dralab.workshop.plugins.module_utils.seat import storage
from ansible_collections.dralab.workshop.plugins.modules import seat_storage

from module_runner import run_module

FSTAB = "# /etc/fstab: static file system information.\nUUID=0a1b / ext4 errors=remount-ro 0 1\n"
MOUNTINFO = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
OPTIONS = 'loop,nodev,nosuid,discard'
NOT_QUOTAS = "ERROR: can't list qgroups: quotas not enabled"
CHANGING = ('truncate', 'mkfs.btrfs', 'mount', 'umount', ['btrfs', 'quota'], ['btrfs', 'subvolume'])


class Host:
    """A login host's commands, recorded and answered: mkfs.btrfs makes an image, mount adds its mount point to
    mountinfo, and a folder mounted over reads as btrfs from then on."""

    def __init__(self, mountinfo, fstypes=None, failing=None):
        self.mountinfo = mountinfo
        self.fstypes = dict(fstypes or {})
        self.failing = failing
        self.quotas = False
        self.commands = []

    def run(self, argv):
        self.commands.append(argv)
        if self.failing and argv[:len(self.failing)] == self.failing:
            return 32, '', '%s: it failed\n' % argv[0]
        if argv[0] == 'mkfs.btrfs':
            with open(argv[-1], 'wb') as handle:
                handle.write(b'btrfs image')
        elif argv[0] == 'mount':
            with open(self.mountinfo, 'a', encoding='utf-8') as handle:
                handle.write('40 22 0:50 / %s rw,relatime shared:9 - btrfs /dev/loop0 rw\n'
                             % argv[-1].replace(' ', '\\040'))
            self.fstypes[argv[-1]] = 'btrfs'
        elif argv[:3] == ['btrfs', 'qgroup', 'show']:
            return (0, 'qgroupid rfer excl\n', '') if self.quotas else (1, '', NOT_QUOTAS)
        elif argv[:3] == ['btrfs', 'quota', 'enable']:
            self.quotas = True
        elif argv[:3] == ['btrfs', 'subvolume', 'create']:
            os.mkdir(argv[-1], 0o755)
        elif argv[0] == 'stat':
            return 0, self.fstypes.get(argv[-1], 'ext2/ext3') + '\n', ''
        return 0, '', ''

    def changing(self):
        return [argv for argv in self.commands
                if any(argv[:len(name)] == name if isinstance(name, list) else argv[0] == name for name in CHANGING)]


class Lab:
    """A login host's files below tmp_path: /etc/fstab, mountinfo, /var/lib, /tmp and /var/tmp."""

    def __init__(self, tmp_path, fstab=FSTAB, home='home/seats'):
        self.root = tmp_path
        self.fstab, self.mountinfo = tmp_path / 'fstab', tmp_path / 'mountinfo'
        self.fstab.write_text(fstab)
        self.mountinfo.write_text(MOUNTINFO)
        self.tmp, self.var_tmp = tmp_path / 'tmp', tmp_path / 'var' / 'tmp'
        for folder in (self.tmp, self.var_tmp, tmp_path / 'var' / 'lib'):
            folder.mkdir(parents=True)
        self.image_dir = tmp_path / 'var' / 'lib' / 'dralab'
        self.image, self.path = self.image_dir / 'seat-storage.img', tmp_path / home
        self.params = {'image': str(self.image), 'size': '16G', 'label': 'dralab-seats', 'path': str(self.path),
                       'mount_options': OPTIONS, 'shared': {str(self.tmp): '.shared-tmp',
                                                            str(self.var_tmp): '.shared-var-tmp'}}

    def storage(self, host, check_mode=False, **params):
        return storage.Storage(host.run, dict(self.params, **params), check_mode, fstab=str(self.fstab),
                               mountinfo=str(self.mountinfo))

    def converge(self, host, check_mode=False):
        work = self.storage(host, check_mode)
        work.converge()
        return work

    def cold_changes(self):
        return [f'folder {self.image_dir} made', 'image made', f'folder {self.path} made',
                f'fstab line for {self.path}', f'mounted {self.path}', 'quotas on', 'subvolume .shared-tmp made',
                'subvolume .shared-var-tmp made', '.shared-tmp mode 1777', '.shared-var-tmp mode 1777',
                f'fstab line for {self.tmp}', f'{self.tmp} bound', f'fstab line for {self.var_tmp}',
                f'{self.var_tmp} bound']


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_cold_host_gets_every_step_in_order(tmp_path):
    lab = Lab(tmp_path)
    host = Host(lab.mountinfo)
    work = lab.converge(host)
    image, path, fstab = str(lab.image), str(lab.path), str(lab.fstab)
    assert host.commands == [
        ['truncate', '-s', '16G', image + '.new'],
        ['mkfs.btrfs', '-q', '-f', '-L', 'dralab-seats', image + '.new'],
        ['mount', '-T', fstab, path],
        ['btrfs', 'qgroup', 'show', path],
        ['btrfs', 'quota', 'enable', path],
        ['btrfs', 'subvolume', 'create', path + '/.shared-tmp'],
        ['btrfs', 'subvolume', 'create', path + '/.shared-var-tmp'],
        ['stat', '--file-system', '--format', '%T', str(lab.tmp)],
        ['stat', '--file-system', '--format', '%T', str(lab.var_tmp)],
        ['mount', '-T', fstab, str(lab.tmp)],
        ['mount', '-T', fstab, str(lab.var_tmp)]]
    assert work.changes == lab.cold_changes()
    assert (work.bound, work.tmpfs) == ([str(lab.tmp), str(lab.var_tmp)], [])
    assert lab.fstab.read_text() == FSTAB + (
        f'{image} {path} btrfs {OPTIONS} 0 0\n'
        f'{path}/.shared-tmp {lab.tmp} none bind 0 0\n'
        f'{path}/.shared-var-tmp {lab.var_tmp} none bind 0 0\n')
    assert lab.image.read_bytes() == b'btrfs image' and not os.path.lexists(image + '.new')
    assert (mode(lab.image_dir), mode(lab.path), mode(lab.path / '.shared-tmp')) == (0o700, 0o755, 0o1777)
    assert (os.stat(lab.image_dir).st_uid, os.stat(lab.image_dir).st_gid) == (0, 0)


def test_a_converged_host_runs_no_changing_command_and_writes_nothing(tmp_path):
    lab = Lab(tmp_path)
    host = Host(lab.mountinfo)
    lab.converge(host)
    fstab_before = os.stat(lab.fstab)
    for check_mode in (False, True):
        host.commands.clear()
        work = lab.converge(host, check_mode)
        assert work.changes == []
        assert (work.bound, work.tmpfs) == ([str(lab.tmp), str(lab.var_tmp)], [])
        # Bound, /tmp reads as the seats' btrfs: its binding is found in place, not skipped.
        assert host.commands == [['btrfs', 'qgroup', 'show', str(lab.path)]] + [
            ['stat', '--file-system', '--format', '%T', str(folder)] for folder in (lab.tmp, lab.var_tmp)]
    assert os.stat(lab.fstab).st_ino == fstab_before.st_ino


def test_check_mode_on_a_cold_host_reports_every_change_and_makes_none(tmp_path):
    lab = Lab(tmp_path)
    host = Host(lab.mountinfo)
    work = lab.converge(host, check_mode=True)
    assert work.changes == lab.cold_changes()
    assert work.bound == [str(lab.tmp), str(lab.var_tmp)]
    # Only the shared folders' file system types are read: the seats' file system is not there yet.
    assert host.changing() == [] and [argv[0] for argv in host.commands] == ['stat', 'stat']
    assert lab.fstab.read_text() == FSTAB and lab.mountinfo.read_text() == MOUNTINFO
    assert not os.path.lexists(lab.image_dir) and not os.path.lexists(lab.path)


def test_check_mode_reads_a_mounted_file_system_and_reports_only_what_differs(tmp_path):
    lab = Lab(tmp_path)
    host = Host(lab.mountinfo)
    lab.converge(host)
    os.chmod(lab.path / '.shared-var-tmp', 0o755)
    os.chown(lab.path, 1000, 1000)
    host.quotas = False
    host.commands.clear()
    work = lab.converge(host, check_mode=True)
    assert work.changes == [f'{lab.path} owner root:root', 'quotas on', '.shared-var-tmp mode 1777']
    assert host.changing() == []
    assert mode(lab.path / '.shared-var-tmp') == 0o755 and os.stat(lab.path).st_uid == 1000
    assert lab.converge(host).changes == work.changes
    assert mode(lab.path / '.shared-var-tmp') == 0o1777 and os.stat(lab.path).st_uid == 0


def test_an_existing_image_is_never_made_again(tmp_path):
    lab = Lab(tmp_path)
    lab.image_dir.mkdir(mode=0o755)
    lab.image.write_bytes(b'the seats\' files')
    host = Host(lab.mountinfo)
    work = lab.converge(host)
    assert not [argv for argv in host.commands if argv[0] in ('truncate', 'mkfs.btrfs')]
    assert lab.image.read_bytes() == b'the seats\' files'
    assert work.changes[:3] == [f'{lab.image_dir} mode 0700', f'folder {lab.path} made', f'fstab line for {lab.path}']
    assert 'image made' not in work.changes and mode(lab.image_dir) == 0o700


def test_a_tmpfs_shared_folder_is_left_alone(tmp_path):
    lab = Lab(tmp_path)
    host = Host(lab.mountinfo, fstypes={str(lab.tmp): 'tmpfs'})
    first, rerun = lab.converge(host), lab.converge(host)
    for work in (first, rerun):
        assert (work.bound, work.tmpfs) == ([str(lab.var_tmp)], [str(lab.tmp)])
    assert f'{lab.var_tmp} bound' in first.changes and rerun.changes == []
    assert not [argv for argv in host.commands if argv[0] == 'mount' and argv[-1] == str(lab.tmp)]
    assert str(lab.tmp) + ' none bind' not in lab.fstab.read_text()
    # Its subvolume is made all the same, as storage.yml makes it.
    assert mode(lab.path / '.shared-tmp') == 0o1777


def test_a_line_for_the_mount_point_with_other_options_is_replaced_in_place_and_remounted(tmp_path):
    lab = Lab(tmp_path)
    head = '# /etc/fstab: static file system information.\n#\nUUID=0a1b\t/\text4\terrors=remount-ro  0  1\n'
    tail = '\n/dev/sdb1 /srv ext4 defaults 0 2 # data\n/swap.img none swap sw 0 0\n'
    lab.fstab.write_text(head + f'{lab.image} {lab.path} btrfs defaults 0 0\n' + tail)
    lab.image_dir.mkdir(mode=0o700)
    lab.image.write_bytes(b'btrfs image')
    lab.path.mkdir(parents=True)
    host = Host(lab.mountinfo)
    host.run(['mount', str(lab.path)])
    host.commands.clear()
    work = lab.converge(host)
    assert work.changes[:2] == [f'fstab line for {lab.path}', f'remounted {lab.path}']
    assert host.commands[0] == ['mount', '-o', 'remount', '-T', str(lab.fstab), str(lab.path)]
    text = lab.fstab.read_text()
    assert text.startswith(head + f'{lab.image} {lab.path} btrfs {OPTIONS} 0 0\n' + tail)
    assert text.count(f' {lab.path} ') == 1


def test_the_old_tasks_lines_in_other_whitespace_are_the_lines():
    entry = ['/var/lib/dralab/seat-storage.img', '/home/seats', 'btrfs', OPTIONS, '0', '0']
    assert storage.fstab_with(FSTAB + '/var/lib/dralab/seat-storage.img\t/home/seats  btrfs\t%s 0\t0 # seats\n'
                              % OPTIONS, entry) is None
    # dump and pass left out count as other fields (ansible.posix.mount writes them).
    assert storage.fstab_with('/var/lib/dralab/seat-storage.img /home/seats btrfs %s' % OPTIONS, entry) == \
        ' '.join(entry) + '\n'
    # A last line without its newline gets one before the new line.
    assert storage.fstab_with(FSTAB.rstrip('\n'), entry) == FSTAB + ' '.join(entry) + '\n'
    # Fields are escaped as ansible.posix.mount escapes them.
    assert storage.fstab_with('', ['/srv/a b', '/home/x&y', 'none', 'bind', '0', '0']) == \
        '/srv/a\\040b /home/x\\046y none bind 0 0\n'


def test_a_mount_point_with_a_space_is_escaped_in_fstab_and_found_in_mountinfo(tmp_path):
    lab = Lab(tmp_path, home='home/the seats')
    host = Host(lab.mountinfo)
    lab.converge(host)
    assert f'{lab.image} {str(lab.path).replace(" ", chr(92) + "040")} btrfs' in lab.fstab.read_text()
    assert str(lab.path) in storage.mount_points(str(lab.mountinfo))
    assert lab.converge(host).changes == []


def test_a_failed_mount_puts_fstab_and_the_folders_back_and_names_the_step(tmp_path):
    lab = Lab(tmp_path)
    host = Host(lab.mountinfo, failing=['mount'])
    work = lab.storage(host)
    with pytest.raises(storage.StorageError, match=r"^mount the seats' file system: mount -T \S+ \S+ failed "
                                                   r"\(rc 32\): mount: it failed; \S+ is as it was$"):
        work.converge()
    assert lab.fstab.read_text() == FSTAB and not os.path.lexists(lab.path.parent)
    assert work.changes == lab.cold_changes()[:5]


def test_a_half_made_image_is_never_put_in_place(tmp_path):
    lab = Lab(tmp_path)
    host = Host(lab.mountinfo, failing=['mkfs.btrfs'])
    with pytest.raises(storage.StorageError, match="^make the seats' file system image: mkfs.btrfs .* failed "
                                                   "\\(rc 32\\): mkfs.btrfs: it failed$"):
        lab.converge(host)
    assert not os.path.lexists(lab.image) and lab.fstab.read_text() == FSTAB


def test_a_link_in_place_of_a_shared_subvolume_is_refused_not_followed(tmp_path):
    lab = Lab(tmp_path)
    host = Host(lab.mountinfo)
    lab.converge(host)
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir(mode=0o700)
    (lab.path / '.shared-tmp').rmdir()
    (lab.path / '.shared-tmp').symlink_to(elsewhere)
    with pytest.raises(storage.StorageError, match=r'\.shared-tmp is not a folder \(a link is never followed\)'):
        lab.converge(host)
    assert mode(elsewhere) == 0o700


def test_mountinfo_mount_points_have_their_escapes_decoded(tmp_path):
    (tmp_path / 'mountinfo').write_text(MOUNTINFO + '41 22 0:51 / /mnt/a\\040b\\134c rw - tmpfs tmpfs rw\n\n')
    assert storage.mount_points(str(tmp_path / 'mountinfo')) == {'/', '/mnt/a b\\c'}


@pytest.mark.parametrize('option, value, problem', [
    ('image', 'seat-storage.img', "image: give an absolute path, not 'seat-storage.img'"),
    ('path', 'home/seats', "path: give an absolute path, not 'home/seats'"),
    ('path', '/', 'path: not / itself'),
    ('size', '', "size: give the image's size as truncate -s takes it, like 16G (not '')"),
    ('size', '+1G', "size: give the image's size"),
    ('label', '', 'label: give the file system a label'),
    ('mount_options', 'loop, nodev', 'mount_options: give the options as one field of /etc/fstab'),
    ('shared', {'/tmp': 'a/b'}, "shared: /tmp: give its subvolume's name below path, one folder name (not 'a/b')"),
    ('shared', {'/tmp': '..'}, "shared: /tmp: give its subvolume's name below path"),
    ('shared', {'/tmp': ''}, "shared: /tmp: give its subvolume's name below path"),
    ('shared', {'tmp': '.shared-tmp'}, "shared: tmp: give an absolute path, not 'tmp'"),
])
def test_bad_arguments_fail_before_any_change_naming_the_option(tmp_path, option, value, problem):
    lab = Lab(tmp_path)
    params = dict(lab.params, **{option: value})
    problems = storage.input_problems(params)
    assert len(problems) == 1 and problems[0].startswith(problem)
    host = Host(lab.mountinfo)
    work = lab.storage(host, **{option: value})
    with pytest.raises(storage.StorageError, match='^%s: .*Nothing was changed\\.$' % option):
        work.converge()
    assert host.commands == [] and work.changes == [] and not os.path.lexists(lab.image_dir)


def test_the_module_fails_on_bad_arguments_naming_the_option():
    code, result = run_module('seat_storage', {'image': 'seat-storage.img', 'size': '16G', 'path': '/home/seats',
                                               'shared': {'/tmp': '../tmp'}})
    assert code == 1 and result['failed'] and result['changes'] == []
    assert result['msg'] == ("image: give an absolute path, not 'seat-storage.img'; shared: /tmp: give its subvolume's "
                             "name below path, one folder name (not '../tmp'). Nothing was changed.")


def test_the_documented_options_are_the_argument_spec():
    documented = yaml.safe_load(seat_storage.DOCUMENTATION)['options']
    spec = seat_storage.argspec()
    assert sorted(documented) == sorted(spec)
    for option, entry in spec.items():
        doc = documented[option]
        assert (doc['type'], doc.get('required', False), doc.get('default'), doc.get('elements')) == \
            (entry['type'], entry.get('required', False), entry.get('default'), entry.get('elements')), option
