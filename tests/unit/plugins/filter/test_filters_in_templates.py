# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters resolve by FQCN in a template, as roles use them."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template


def render(expression, **variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


def test_mirror_url_in_a_template():
    expression = "{{ 'https://dl.k8s.io/release' | dralab.workshop.mirror_url(dralab_download_mirror | default('')) }}"
    assert render(expression) == 'https://dl.k8s.io/release'
    assert render(expression, dralab_download_mirror='http://10.88.0.1:8080') == 'http://10.88.0.1:8080/dl.k8s.io/release'


def test_seat_names_in_a_template():
    assert render('{{ 3 | dralab.workshop.seat_names }}') == ['user01', 'user02', 'user03']
    assert render("{{ n | dralab.workshop.seat_names('gpu', 3) | last }}", n=100) == 'gpu100'


def test_duration_seconds_in_a_template():
    assert render("{{ '1h30m' | dralab.workshop.duration_seconds }}") == 5400


def test_feature_gates_in_a_template():
    assert render("{{ ['DRADeviceTaints'] | dralab.workshop.feature_gates(extra) }}",
                  extra=['DRAAdminAccess=false']) == 'DRAAdminAccess=false,DRADeviceTaints=true'
    assert render("{{ ['DRADeviceTaints'] | dralab.workshop.feature_gate_map }}") == {'DRADeviceTaints': True}


def test_filter_error_reaches_the_template():
    with pytest.raises(AnsibleError, match="count -1 is negative"):
        render('{{ -1 | dralab.workshop.seat_names }}')
