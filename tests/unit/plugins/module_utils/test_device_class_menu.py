# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DeviceClass menu: validation messages, the objects applied, and what is left alone or removed."""

from __future__ import annotations

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.dralab.workshop.plugins.module_utils.dra import menu as dcm

from render import role_defaults

DRIVER_SELECTOR = "device.driver == 'gpu.example.com'"
MEM_SELECTOR = ("device.driver == 'gpu.example.com' && "
                "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0")
MENU = [
    {'name': 'gpu.example.com', 'description': 'Any GPU.', 'selectors': [DRIVER_SELECTOR]},
    {'name': 'gpu-40gi.example.com', 'selectors': [MEM_SELECTOR]},
]
OURS = {'app.kubernetes.io/managed-by': 'dralab.workshop'}


def device_class(name, selectors, labels=None, annotations=None):
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass',
            'metadata': {'name': name, 'labels': labels or {}, 'annotations': annotations or {}, 'uid': 'x'},
            'spec': {'selectors': [{'cel': {'expression': s}} for s in selectors]}}


# The class the dra-example-driver chart creates (Helm labels and annotations).
HELM_CLASS = device_class('gpu.example.com', [DRIVER_SELECTOR], {'app.kubernetes.io/managed-by': 'Helm'},
                          {'meta.helm.sh/release-name': 'dra-example-driver'})


def default_menu():
    templar = Templar(loader=DataLoader(), variables=role_defaults('device_classes'))
    return templar.template(role_defaults('device_classes')['device_classes_menu'])


def test_role_default_menu_is_valid_and_as_documented():
    menu = default_menu()
    assert dcm.validate_menu(menu) == []
    assert [entry['name'] for entry in menu] == ['gpu.example.com', 'gpu-40gi.example.com']
    assert menu[0]['selectors'] == [DRIVER_SELECTOR]
    assert menu[1]['selectors'] == [MEM_SELECTOR]


def test_role_default_menu_follows_dralab_device_classes():
    defaults = role_defaults('device_classes')
    variables = dict(defaults, dralab_device_classes=[{'name': 'x.example.com', 'selectors': ['true']}])
    templar = Templar(loader=DataLoader(), variables=variables)
    assert templar.template(defaults['device_classes_menu']) == [{'name': 'x.example.com', 'selectors': ['true']}]


def test_object_is_labelled_annotated_and_uses_cel_selectors():
    obj = dcm.device_class_object({'name': 'gpu.example.com', 'description': 'Any GPU.', 'selectors': [DRIVER_SELECTOR],
                                   'labels': {'tier': 'lab'}})
    assert obj == {
        'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass',
        'metadata': {'name': 'gpu.example.com',
                     'labels': {'tier': 'lab', 'app.kubernetes.io/managed-by': 'dralab.workshop'},
                     'annotations': {'dralab.workshop/description': 'Any GPU.'}},
        'spec': {'selectors': [{'cel': {'expression': DRIVER_SELECTOR}}]},
    }


def test_config_short_and_long_forms_become_opaque_config():
    entry = {'name': 'shared.example.com', 'selectors': [{'cel': {'expression': DRIVER_SELECTOR}}],
             'config': [{'driver': 'gpu.example.com', 'parameters': {'kind': 'GpuConfig'}},
                        {'opaque': {'driver': 'gpu.example.com', 'parameters': {'b': 1}}}],
             'extended_resource_name': 'example.com/gpu'}
    assert dcm.validate_menu([entry]) == []
    spec = dcm.device_class_object(entry)['spec']
    assert spec['config'] == [{'opaque': {'driver': 'gpu.example.com', 'parameters': {'kind': 'GpuConfig'}}},
                              {'opaque': {'driver': 'gpu.example.com', 'parameters': {'b': 1}}}]
    assert spec['selectors'] == [{'cel': {'expression': DRIVER_SELECTOR}}]
    assert spec['extendedResourceName'] == 'example.com/gpu'
    assert 'annotations' not in dcm.device_class_object({'name': 'a', 'selectors': ['true']})['metadata']


@pytest.mark.parametrize('menu, message', [
    ('gpu', 'device_classes_menu must be a list of DeviceClasses'),
    ([{'selectors': ['true']}], 'device_classes_menu[0].name is missing or empty'),
    ([{'name': 'GPU', 'selectors': ['true']}], 'device_classes_menu[0].name "GPU" is not a DNS-1123 subdomain'),
    ([{'name': 'a'}], 'device_classes_menu[0] (a).selectors must list at least one CEL expression'),
    ([{'name': 'a', 'selectors': []}], 'device_classes_menu[0] (a).selectors must list at least one CEL expression'),
    ([{'name': 'a', 'selectors': ['  ']}], 'device_classes_menu[0] (a).selectors[0] is an empty CEL expression'),
    ([{'name': 'a', 'selectors': ['true', {'cel': {'expression': ''}}]}],
     'device_classes_menu[0] (a).selectors[1] is an empty CEL expression'),
    ([{'name': 'a', 'selectors': [42]}], 'device_classes_menu[0] (a).selectors[0] must be a CEL expression string'),
    ([{'name': 'a', 'selector': ['true'], 'selectors': ['true']}], 'device_classes_menu[0] (a) has unknown keys selector'),
    ([{'name': 'a', 'selectors': ['true']}, {'name': 'a', 'selectors': ['true']}],
     'device_classes_menu[1].name "a" is a duplicate of device_classes_menu[0].name'),
    ([{'name': 'a', 'selectors': ['true'], 'config': {'driver': 'x'}}], 'device_classes_menu[0] (a).config must be a list'),
    ([{'name': 'a', 'selectors': ['true'], 'config': [{'driver': 'x'}]}],
     'device_classes_menu[0] (a).config[0] must be {opaque: {driver: ..., parameters: {...}}}'),
    ([{'name': 'a', 'selectors': ['true'], 'config': [{'driver': 'Bad Driver', 'parameters': {}}]}],
     'device_classes_menu[0] (a).config[0].driver "Bad Driver" is not a driver name'),
    ([{'name': 'a', 'selectors': ['true'], 'config': [{'driver': 'x.io', 'parameters': 'p'}]}],
     'device_classes_menu[0] (a).config[0].parameters must be a mapping'),
    ([{'name': 'a', 'selectors': ['true'], 'labels': {'app.kubernetes.io/managed-by': 'me'}}],
     'device_classes_menu[0] (a).labels may not set app.kubernetes.io/managed-by'),
    ([{'name': 'a', 'selectors': ['true'], 'annotations': {'k': 1}}], 'device_classes_menu[0] (a).annotations.k must be a string'),
    ([{'name': 'a', 'selectors': ['true'], 'description': ['x']}], 'device_classes_menu[0] (a).description must be a string'),
    (['a'], 'device_classes_menu[0] must be a mapping with name and selectors'),
])
def test_validation_names_the_entry_and_the_field(menu, message):
    problems = dcm.validate_menu(menu, 'device_classes_menu')
    assert any(p.startswith(message) for p in problems), problems


def test_plan_fails_before_any_change_listing_every_problem():
    with pytest.raises(ValueError) as exc:
        dcm.plan([{'name': 'a', 'selectors': ['']}, {'name': 'a', 'selectors': ['true']}], [], variable='device_classes_menu')
    assert str(exc.value).startswith('2 problem(s) in device_classes_menu: ')
    assert 'selectors[0] is an empty CEL expression' in str(exc.value) and 'duplicate' in str(exc.value)


def test_plan_on_an_empty_cluster_applies_the_whole_menu():
    result = dcm.plan(MENU, [])
    assert [o['metadata']['name'] for o in result['apply']] == ['gpu.example.com', 'gpu-40gi.example.com']
    assert result['delete'] == [] and result['foreign'] == [] and result['warnings'] == []
    assert result['names'] == ['gpu.example.com', 'gpu-40gi.example.com']


def test_plan_leaves_the_drivers_own_class_alone_without_warning_when_it_matches():
    result = dcm.plan(MENU, [HELM_CLASS])
    assert [o['metadata']['name'] for o in result['apply']] == ['gpu-40gi.example.com']
    assert result['foreign'] == [{'name': 'gpu.example.com', 'owner': 'Helm (Helm release dra-example-driver)',
                                  'matches': True}]
    assert result['warnings'] == []


def test_plan_warns_when_a_foreign_class_differs_and_can_adopt_it():
    menu = [{'name': 'gpu.example.com', 'selectors': ['true']}]
    result = dcm.plan(menu, [HELM_CLASS], variable='device_classes_menu')
    assert result['apply'] == []
    assert result['foreign'][0]['matches'] is False
    assert 'left unchanged' in result['warnings'][0] and 'device_classes_adopt' in result['warnings'][0]
    adopted = dcm.plan(menu, [HELM_CLASS], adopt=['gpu.example.com', 'other.example.com'])
    assert [o['metadata']['name'] for o in adopted['apply']] == ['gpu.example.com']
    assert adopted['warnings'] == ['device_classes_adopt names other.example.com, which is not in menu: ignored.']


def test_plan_updates_our_classes_and_prunes_only_ours():
    existing = [
        device_class('gpu-40gi.example.com', ['false'], OURS),
        device_class('old.example.com', ['true'], OURS),
        device_class('someone.example.com', ['true'], {'app.kubernetes.io/managed-by': 'Helm'}),
        device_class('unlabelled.example.com', ['true']),
    ]
    result = dcm.plan(MENU, existing)
    assert [o['metadata']['name'] for o in result['apply']] == ['gpu.example.com', 'gpu-40gi.example.com']
    assert result['delete'] == [{'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass',
                                 'metadata': {'name': 'old.example.com'}}]
    assert dcm.plan(MENU, existing, prune=False)['delete'] == []


def test_empty_menu_prunes_all_of_ours():
    result = dcm.plan([], [device_class('old.example.com', ['true'], OURS), HELM_CLASS])
    assert [d['metadata']['name'] for d in result['delete']] == ['old.example.com']
