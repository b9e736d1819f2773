# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_program's pass with a fake host (venv, pip and systemctl answered by FakeHost; the files real, in a test
folder): a first run installs and starts, a rerun changes nothing and runs only reads, check mode writes nothing,
and the service restarts exactly when its unit, its files or its package changed (the lab's reaper and board:
tests/lab, molecule's verify)."""

from __future__ import annotations

import grp
import os
import pwd

import pytest

from fake_host import mode_owner, snapshot
from module_runner import run_module

from ansible_collections.dralab.workshop.plugins.module_utils.files import node_program

ME, MY_GROUP = pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name
READS = ('-c', 'show')  # the commands a pass may run that change nothing


class FakeHost:
    """The venv's Python and pip, useradd and systemctl, on a clock: what each command would do to the host."""

    def __init__(self, venv):
        self.venv = venv
        self.calls = []
        self.clock = 1000.0  # monotonic == realtime here
        self.package = None  # (release, install time)
        self.unit = {'ActiveState': 'inactive', 'UnitFileState': '', 'ActiveEnterTimestampMonotonic': '0'}
        self.pip_says = 'Successfully installed dralab-can-has-gpu-0.1.0'

    def tick(self, seconds=10.0):
        self.clock += seconds

    def touch(self, *parts):
        path = os.path.join(self.venv, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, 'w', encoding='utf-8').close()

    def __call__(self, argv):
        self.calls.append(argv)
        if argv[1:3] == ['-m', 'venv']:
            self.touch('bin', 'python')
        elif argv[1] == '-c':
            return (0, '%s\n%s\n' % self.package if self.package else '', '')
        elif argv[0].endswith('/bin/python') and argv[2] == 'install':
            self.touch('bin', 'pip')
        elif argv[0].endswith('/bin/pip'):
            self.package = (argv[-1].split('==')[-1] if '==' in argv[-1] else '0.1.0', self.clock)
            return 0, self.pip_says + '\n', ''
        elif argv[:2] == ['systemctl', 'show']:
            return 0, ''.join('%s=%s\n' % item for item in self.unit.items()), ''
        elif argv[:2] == ['systemctl', 'enable']:
            self.unit['UnitFileState'] = 'enabled'
        elif argv[0] == 'systemctl' and argv[1] in ('start', 'restart'):
            self.unit.update(ActiveState='active', ActiveEnterTimestampMonotonic=str(int(self.clock * 1e6)))
        return 0, '', ''

    def changing(self):
        """The commands that change something."""
        return [argv for argv in self.calls if argv[1] not in READS]


def params(tmp_path, **overrides):
    venv = str(tmp_path / 'opt' / 'venv')
    result = {
        'venv': venv, 'python': '/usr/bin/python3', 'package': 'dralab-can-has-gpu', 'version': '0.1.0',
        'wheels_url': 'http://mirror.lab:8080/wheels/', 'pip_version': '26.3',
        'pip_wheel_url': 'http://mirror.lab:8080/wheels/pip-26.3-py3-none-any.whl', 'pip_index_url': '',
        'source': None, 'source_changed': False,
        'files': [{'path': str(tmp_path / 'etc' / 'dralab' / 'can-has-gpu.json'), 'content': '{"lease": "2h"}\n',
                   'owner': ME, 'group': MY_GROUP, 'mode': '0644'}],
        'links': [{'src': venv + '/bin/can-has-gpu', 'dest': str(tmp_path / 'bin' / 'can-has-gpu')}],
        'service': {'name': 'dralab-lease-reaper', 'user': ME, 'unit': '[Service]\nExecStart=/bin/true\n',
                    'files': [{'path': str(tmp_path / 'etc' / 'dralab' / 'reaper.kubeconfig'),
                               'content': 'token: secret\n', 'owner': ME, 'group': MY_GROUP, 'mode': '0600'}]},
    }
    result.update(overrides)
    return result


def converge(tmp_path, host, check_mode=False, **overrides):
    (tmp_path / 'bin').mkdir(parents=True, exist_ok=True)
    downloads = []

    def download(url, dest):
        downloads.append(url)
        with open(dest, 'wb') as out:
            out.write(b'wheel')

    work = node_program.NodeProgram(host, download, params(tmp_path, **overrides), check_mode,
                                    unit_folder=str(tmp_path / 'units'), monotonic=lambda: host.clock,
                                    now=lambda: host.clock)
    work.converge()
    work.downloads = downloads
    return work


@pytest.fixture(name="host")
def fake_host(tmp_path):
    return FakeHost(str(tmp_path / 'opt' / 'venv'))


def test_a_first_run_installs_everything_and_starts_the_service(tmp_path, host):
    work = converge(tmp_path, host)
    venv = str(tmp_path / 'opt' / 'venv')
    assert work.changes == [
        'folder %s made' % (tmp_path / 'etc' / 'dralab'), '%s written' % (tmp_path / 'etc' / 'dralab' / 'can-has-gpu.json'),
        'venv %s made' % venv, 'pip 26.3 installed in the venv', 'dralab-can-has-gpu 0.1.0 installed',
        'link %s -> %s/bin/can-has-gpu' % (tmp_path / 'bin' / 'can-has-gpu', venv),
        '%s written' % (tmp_path / 'etc' / 'dralab' / 'reaper.kubeconfig'),
        'folder %s made' % (tmp_path / 'units'), '%s written' % (tmp_path / 'units' / 'dralab-lease-reaper.service'),
        'dralab-lease-reaper enabled', 'dralab-lease-reaper started']
    assert work.downloads == ['http://mirror.lab:8080/wheels/pip-26.3-py3-none-any.whl']
    assert host.changing() == [
        ['/usr/bin/python3', '-m', 'venv', '--without-pip', venv],
        [venv + '/bin/python', venv + '/pip-26.3-py3-none-any.whl/pip', 'install', '--no-index', '--quiet',
         venv + '/pip-26.3-py3-none-any.whl'],
        [venv + '/bin/pip', 'install', '--no-index', '--find-links', 'http://mirror.lab:8080/wheels/',
         '--trusted-host', 'mirror.lab', '--upgrade-strategy', 'only-if-needed', 'dralab-can-has-gpu==0.1.0'],
        ['systemctl', 'daemon-reload'], ['systemctl', 'enable', 'dralab-lease-reaper.service'],
        ['systemctl', 'start', 'dralab-lease-reaper.service']]
    assert (work.upgraded, work.restarted) == (True, True)
    assert mode_owner(tmp_path / 'etc' / 'dralab' / 'reaper.kubeconfig') == (0o600, os.getuid(), os.getgid())
    assert (tmp_path / 'units' / 'dralab-lease-reaper.service').read_text() == '[Service]\nExecStart=/bin/true\n'
    assert os.readlink(tmp_path / 'bin' / 'can-has-gpu') == venv + '/bin/can-has-gpu'
    assert mode_owner(tmp_path / 'units')[0] == 0o755


def test_a_rerun_changes_nothing_and_runs_only_reads(tmp_path, host):
    converge(tmp_path, host)
    host.tick()
    before, calls = snapshot(tmp_path), len(host.calls)
    work = converge(tmp_path, host)
    assert work.changes == [] and not work.upgraded and not work.restarted
    assert host.calls[calls:] == [[str(tmp_path / 'opt' / 'venv' / 'bin' / 'python'), '-c',
                                   node_program.INSTALLED_SCRIPT, 'dralab-can-has-gpu'],
                                  ['systemctl', 'show', '-p', 'ActiveState', '-p', 'UnitFileState', '-p',
                                   'ActiveEnterTimestampMonotonic', 'dralab-lease-reaper.service']]
    assert snapshot(tmp_path) == before


def test_check_mode_reports_the_first_run_and_writes_nothing(tmp_path, host):
    real = converge(tmp_path / 'real', FakeHost(str(tmp_path / 'real' / 'opt' / 'venv')))
    (tmp_path / 'check').mkdir()
    work = converge(tmp_path / 'check', host, check_mode=True)
    assert [c.replace('/check/', '/real/') for c in work.changes] == real.changes
    assert host.changing() == [] and work.downloads == []
    assert sorted(os.listdir(tmp_path / 'check')) == ['bin'] and not os.listdir(tmp_path / 'check' / 'bin')


@pytest.mark.parametrize("change, reloads", [("unit", True), ("file", False), ("package", False)])
def test_the_service_restarts_when_its_unit_its_files_or_its_package_change(tmp_path, host, change, reloads):
    converge(tmp_path, host)
    host.tick()
    calls = len(host.calls)
    overrides = {}
    if change == 'unit':
        overrides['service'] = dict(params(tmp_path)['service'], unit='[Service]\nExecStart=/bin/false\n')
    elif change == 'file':
        service = params(tmp_path)['service']
        overrides['service'] = dict(service, files=[dict(service['files'][0], content='token: new\n')])
    else:
        overrides['version'] = '0.2.0'
    work = converge(tmp_path, host, **overrides)
    changing = [argv for argv in host.calls[calls:] if argv[1] not in READS]
    assert changing[-1] == ['systemctl', 'restart', 'dralab-lease-reaper.service'] and work.restarted
    assert (['systemctl', 'daemon-reload'] in changing) == reloads
    assert work.changes[-1] == 'dralab-lease-reaper restarted'


def test_a_package_installed_after_the_service_started_restarts_it(tmp_path, host):
    """Another run (the board's and the reaper's share a venv) installed the package after the service started."""
    converge(tmp_path, host)
    host.tick()
    host.package = ('0.1.0', host.clock)
    host.tick()
    work = converge(tmp_path, host)
    assert work.changes == ['dralab-lease-reaper restarted'] and not work.upgraded
    assert host.changing()[-1] == ['systemctl', 'restart', 'dralab-lease-reaper.service']
    host.tick()
    assert converge(tmp_path, host).changes == []


def test_pip_that_installs_nothing_is_no_change(tmp_path, host):
    converge(tmp_path, host)
    host.package = ('0.0.9', 0.0)
    host.pip_says = 'Requirement already satisfied: dralab-can-has-gpu==0.1.0'
    work = converge(tmp_path, host)
    assert work.changes == [] and not work.upgraded


def test_from_source_installs_only_when_the_source_changed(tmp_path, host):
    source = {'wheels_url': '', 'source': str(tmp_path / 'opt' / 'venv' / 'src'), 'pip_index_url': 'https://pypi.example/simple'}
    converge(tmp_path, host, **source)
    assert host.changing()[2] == [str(tmp_path / 'opt' / 'venv' / 'bin' / 'pip'), 'install', '--index-url',
                                  'https://pypi.example/simple', str(tmp_path / 'opt' / 'venv' / 'src')]
    host.tick()
    calls = len(host.changing())
    assert converge(tmp_path, host, **source).changes == [] and len(host.changing()) == calls
    host.tick()
    work = converge(tmp_path, host, source_changed=True, **source)
    assert work.changes == ['dralab-can-has-gpu 0.1.0 installed', 'dralab-lease-reaper restarted']


def test_a_missing_system_user_is_made(tmp_path, host):
    service = dict(params(tmp_path)['service'], user='dralab-no-such-user', files=[])
    work = converge(tmp_path, host, service=service)
    assert 'system user dralab-no-such-user made' in work.changes
    assert ['useradd', '--system', '--shell', '/usr/sbin/nologin', '--home-dir', '/nonexistent', '--no-create-home',
            'dralab-no-such-user'] in host.calls


def test_a_file_in_the_links_place_is_refused(tmp_path, host):
    (tmp_path / 'bin').mkdir()
    (tmp_path / 'bin' / 'can-has-gpu').write_text('mine')
    with pytest.raises(node_program.ProgramError, match='is there and is not a link; move it away'):
        converge(tmp_path, host)
    assert (tmp_path / 'bin' / 'can-has-gpu').read_text() == 'mine'


def test_a_link_in_a_files_place_is_replaced_not_followed(tmp_path, host):
    target = tmp_path / 'elsewhere'
    target.write_text('keep')
    (tmp_path / 'etc' / 'dralab').mkdir(parents=True)
    (tmp_path / 'etc' / 'dralab' / 'can-has-gpu.json').symlink_to(target)
    converge(tmp_path, host)
    assert target.read_text() == 'keep'
    assert not (tmp_path / 'etc' / 'dralab' / 'can-has-gpu.json').is_symlink()


@pytest.mark.parametrize("overrides, problem", [
    ({'venv': 'opt/venv'}, "venv: 'opt/venv' is not an absolute path"),
    ({'wheels_url': '', 'source': None}, 'wheels_url or source: one is needed'),
    ({'wheels_url': 'ftp://mirror/wheels/'}, "wheels_url: 'ftp://mirror/wheels/' is not an http(s) or file URL"),
    ({'files': [{'path': 'x.json', 'content': '', 'owner': 'root', 'group': 'root', 'mode': '0644'}]},
     "files[0].path: 'x.json' is not an absolute file path"),
    ({'files': [{'path': '/etc/x', 'content': '', 'owner': 'root', 'group': 'root', 'mode': 'rw'}]},
     "files[0].mode: 'rw' is not a file mode"),
])
def test_bad_input_is_named_before_anything_changes(tmp_path, host, overrides, problem):
    with pytest.raises(node_program.ProgramError, match='Nothing was changed') as failed:
        converge(tmp_path, host, **overrides)
    assert problem in str(failed.value) and host.calls == []


def test_the_module_names_the_bad_field_and_hides_the_files_content(tmp_path):
    code, result = run_module('node_program', {
        'venv': 'relative', 'package': 'p', 'version': '1', 'wheels_url': 'http://m/w/', 'pip_version': '26.3',
        'pip_wheel_url': 'http://m/w/pip.whl',
        'files': [{'path': str(tmp_path / 'f'), 'content': 'token-abc'}]})
    assert code == 1 and result['msg'] == "venv: 'relative' is not an absolute path. Nothing was changed."
    assert 'token-abc' not in str(result) and not (tmp_path / 'f').exists()
