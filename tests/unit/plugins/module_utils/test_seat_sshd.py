# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""seat_sshd's pass with a fake sshd: the drop-in is written only after sshd accepts it, checked for a seat, and
removed when sshd refuses it (the real sshd of the lab's login hosts: tests/lab/test_seat_host.py)."""

from __future__ import annotations

import os
import stat

import pytest

from module_runner import run_module

from ansible_collections.dralab.workshop.plugins.module_utils.seat import sshd

SSHD = '/usr/sbin/sshd'
OWNER = (os.getuid(), os.getgid())
CONTENT = "MaxStartups 100:30:300\nMatch Group workshop-seats\n    PasswordAuthentication yes\n    MaxAuthTries 3\n"
EXPECTED = {'MaxStartups': '100:30:300', 'PasswordAuthentication': 'yes', 'MaxAuthTries': 3}
EFFECTIVE = ("port 22\nmaxstartups 100:30:300\npasswordauthentication yes\nmaxauthtries 3\n"
             "authorizedkeysfile none\n")
REFUSED = ("sshd refused its configuration with the seats' drop-in %s, so the drop-in was removed and sshd was not "
           "reloaded: SSH stays as it was for every other account. ")


class FakeSshd:
    """Answers sshd -t -f (recording the candidate as sshd saw it), sshd -t and sshd -T."""

    def __init__(self, candidate=(0, '', ''), config=(0, '', ''), effective=EFFECTIVE):
        self.answers = {'-f': candidate, '-t': config, '-T': (0, effective, '')}
        self.calls, self.candidates = [], []

    def __call__(self, argv):
        self.calls.append(argv)
        if argv[1:3] == ['-t', '-f']:
            info = os.stat(argv[3])
            with open(argv[3], encoding='utf-8') as handle:
                self.candidates.append((argv[3], handle.read(), stat.S_IMODE(info.st_mode)))
            return self.answers['-f']
        return self.answers[argv[1]]


def paths(tmp_path):
    return tmp_path / 'sshd_config.d', tmp_path / 'sshd_config.d' / '50-dralab-seats.conf'


def converge(dropin, fake, content=CONTENT, check_mode=False, seat='user01'):
    return sshd.converge(fake, str(dropin), content, SSHD, seat, EXPECTED, check_mode, OWNER)


def old_dropin(tmp_path, text='MaxStartups 10:30:100\n'):
    folder, dropin = paths(tmp_path)
    folder.mkdir(mode=0o755)
    dropin.write_text(text)
    dropin.chmod(0o644)
    return dropin


def test_a_cold_host_gets_the_folder_and_the_drop_in_after_sshd_accepts_a_candidate_in_that_folder(tmp_path):
    folder, dropin = paths(tmp_path)
    fake = FakeSshd()
    result = converge(dropin, fake)
    assert result == (True, ['maxstartups 100:30:300', 'passwordauthentication yes', 'maxauthtries 3'], None)
    [(candidate, text, mode)] = fake.candidates
    assert os.path.dirname(candidate) == str(folder) and text == CONTENT and mode == 0o644
    # A dot file not named *.conf: sshd's Include of the folder never reads it.
    assert os.path.basename(candidate).startswith('.') and not candidate.endswith('.conf')
    assert fake.calls == [[SSHD, '-t', '-f', candidate], [SSHD, '-t'],
                          [SSHD, '-T', '-C', 'user=user01,host=localhost,addr=127.0.0.1']]
    assert os.listdir(folder) == ['50-dralab-seats.conf'] and dropin.read_text() == CONTENT
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o755 and stat.S_IMODE(os.stat(dropin).st_mode) == 0o644
    assert (os.stat(dropin).st_uid, os.stat(dropin).st_gid) == OWNER


def test_a_rerun_writes_nothing_but_still_checks_and_a_changed_mode_alone_is_set_back(tmp_path):
    folder, dropin = paths(tmp_path)
    converge(dropin, FakeSshd())
    before = os.stat(dropin)
    fake = FakeSshd()
    assert converge(dropin, fake).changed is False
    assert fake.calls == [[SSHD, '-t'], [SSHD, '-T', '-C', 'user=user01,host=localhost,addr=127.0.0.1']]
    assert (os.stat(dropin).st_ino, os.stat(dropin).st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    dropin.chmod(0o666)
    fake = FakeSshd()
    assert converge(dropin, fake).changed is True
    assert fake.candidates == [] and stat.S_IMODE(os.stat(dropin).st_mode) == 0o644
    folder.chmod(0o700)
    assert converge(dropin, FakeSshd()).changed is True
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o755


def test_a_link_in_place_of_the_drop_in_is_replaced_by_a_file(tmp_path):
    folder, dropin = paths(tmp_path)
    folder.mkdir()
    target = tmp_path / 'elsewhere.conf'
    target.write_text(CONTENT)
    dropin.symlink_to(target)
    assert converge(dropin, FakeSshd()).changed is True
    assert not dropin.is_symlink() and dropin.read_text() == CONTENT


def test_a_candidate_sshd_refuses_is_never_written_and_the_old_drop_in_is_removed(tmp_path):
    dropin = old_dropin(tmp_path)
    fake = FakeSshd(candidate=(255, '', 'line 3: Bad configuration option: PasswordAuthenticaton\n'))
    with pytest.raises(sshd.SshdError) as refused:
        converge(dropin, fake)
    assert str(refused.value) == REFUSED % dropin + 'line 3: Bad configuration option: PasswordAuthenticaton'
    assert len(fake.calls) == 1 and os.listdir(dropin.parent) == []


def test_a_whole_configuration_sshd_refuses_removes_the_drop_in_with_sshds_complaint(tmp_path):
    dropin = old_dropin(tmp_path, CONTENT)
    fake = FakeSshd(config=(255, '', '/etc/ssh/sshd_config line 12: Directive Match must come last\n'))
    with pytest.raises(sshd.SshdError) as refused:
        converge(dropin, fake)
    assert str(refused.value) == REFUSED % dropin + '/etc/ssh/sshd_config line 12: Directive Match must come last'
    assert fake.calls == [[SSHD, '-t']] and not dropin.exists()


def test_a_setting_sshd_does_not_apply_removes_the_drop_in_naming_it_and_what_sshd_says(tmp_path):
    _folder, dropin = paths(tmp_path)
    fake = FakeSshd(effective="maxstartups 100:30:300\npasswordauthentication no\nmaxauthtries 6\n")
    with pytest.raises(sshd.SshdError) as refused:
        converge(dropin, fake)
    assert str(refused.value) == REFUSED % dropin + (
        'sshd on this host does not read %s (no Include of %s/*.conf in /etc/ssh/sshd_config?) or another setting '
        'overrides it: seat user01 does not get passwordauthentication yes, maxauthtries 3 (sshd -T says '
        'passwordauthentication no, maxauthtries 6).' % (dropin, dropin.parent))
    assert not dropin.exists()


def test_without_a_seat_sshd_t_alone_checks_the_configuration(tmp_path):
    _folder, dropin = paths(tmp_path)
    fake = FakeSshd()
    assert converge(dropin, fake, seat=None) == (True, [], None)
    assert [argv[1] for argv in fake.calls] == ['-t', '-t']


def test_check_mode_writes_nothing_and_checks_a_changing_drop_in_as_a_deleted_candidate_only(tmp_path):
    folder, dropin = paths(tmp_path)
    fake = FakeSshd()
    result = converge(dropin, fake, check_mode=True)
    assert result.changed is True and result.effective == [] and 'would change' in result.note
    # No folder yet: the candidate sits in the system's temporary folder.
    [(candidate, text, _mode)] = fake.candidates
    assert fake.calls == [[SSHD, '-t', '-f', candidate]] and text == CONTENT and not os.path.exists(candidate)
    assert os.listdir(tmp_path) == []
    dropin = old_dropin(tmp_path)
    fake = FakeSshd()
    assert converge(dropin, fake, check_mode=True).changed is True
    assert os.path.dirname(fake.candidates[0][0]) == str(folder) and len(fake.calls) == 1
    assert os.listdir(folder) == ['50-dralab-seats.conf'] and dropin.read_text() == 'MaxStartups 10:30:100\n'


def test_check_mode_checks_an_unchanged_drop_in_with_sshd_t_and_keeps_a_refused_one(tmp_path):
    dropin = old_dropin(tmp_path, CONTENT)
    fake = FakeSshd()
    assert converge(dropin, fake, check_mode=True) == (False, [], None)
    assert fake.calls == [[SSHD, '-t']]
    with pytest.raises(sshd.SshdError) as refused:
        converge(dropin, FakeSshd(config=(255, '', 'terminating, 1 bad configuration options')), check_mode=True)
    assert 'check mode: nothing was changed' in str(refused.value) and dropin.read_text() == CONTENT


@pytest.mark.parametrize('dropin, seat, expected, problem', [
    ('sshd_config.d/50-dralab-seats.conf', None, {}, "dropin: 'sshd_config.d/50-dralab-seats.conf' is not an absolute"),
    ('/etc/ssh/sshd_config.d/', None, {}, 'dropin: '),
    ('/etc/ssh/x.conf', 'user01,user=root', {}, 'seat: '),
    ('/etc/ssh/x.conf', 'user01 host=evil', {}, 'seat: '),
    ('/etc/ssh/x.conf', 'addr=10.0.0.1', {}, 'seat: '),
    ('/etc/ssh/x.conf', 'user01', {'Max Startups': '10'}, "expected: 'Max Startups' is not an sshd setting name"),
    ('/etc/ssh/x.conf', 'user01', {'MaxStartups': '10\nPermitRootLogin yes'}, 'expected: the value of MaxStartups'),
])
def test_bad_input_is_named_by_its_option(dropin, seat, expected, problem):
    [found] = sshd.input_problems(dropin, seat, expected)
    assert found.startswith(problem)


def test_the_module_refuses_bad_input_before_anything_changes(tmp_path):
    _folder, dropin = paths(tmp_path)
    code, result = run_module('seat_sshd', {'dropin': str(dropin), 'content': CONTENT, 'sshd': '/bin/true',
                                            'seat': 'user01,host=evil', 'expected': {'Max Startups': 10}})
    assert code == 1 and result['msg'].startswith('seat: ') and result['msg'].endswith('. Nothing was changed.')
    assert "expected: 'Max Startups'" in result['msg'] and os.listdir(tmp_path) == []
    code, result = run_module('seat_sshd', {'dropin': str(dropin), 'content': CONTENT,
                                            'sshd': str(tmp_path / 'no-sshd')})
    assert code == 1 and result['msg'] == 'sshd: %s is not an executable file (is openssh-server installed?). ' \
        'Nothing was changed.' % (tmp_path / 'no-sshd')
