# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dra_cel: the Kubernetes DRA CEL environment on cel-python, against a recorded example-driver device."""

from __future__ import annotations

import json
import pathlib

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel as dra_cel
from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel_types
from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel_functions

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / 'fixtures' / 'dra'
DRIVER = 'gpu.example.com'


@pytest.fixture(name='gpu', scope='module')
def gpu_fixture():
    """gpu-2 on node1 as the dra-example-driver publishes it (recorded ResourceSlice), plus extra attributes."""
    raw = json.loads((FIXTURES / 'healthy.json').read_text())
    device = dict(raw['/apis/resource.k8s.io/v1/resourceslices']['items'][0]['spec']['devices'][2])
    device['attributes'] = dict(device['attributes'], **{
        'example.com/rack': {'string': 'r1'}, 'ecc': {'bool': True}})
    return device


MATCH = [
    "device.driver == 'gpu.example.com'",
    "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0",
    "device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('79Gi'))",
    "device.capacity['gpu.example.com'].memory.isLessThan(quantity('81Gi'))",
    "device.capacity['gpu.example.com'].memory == quantity('80Gi')",
    "device.capacity['gpu.example.com'].memory.asInteger() == 85899345920",
    "device.capacity['gpu.example.com'].memory.asApproximateFloat() > 8.5e10",
    "device.capacity['gpu.example.com'].memory.sub(quantity('80Gi')).sign() == 0",
    "device.capacity['gpu.example.com'].memory.add(quantity('500m')).isInteger() == false",
    "device.capacity['gpu.example.com'].compute.add(1).asInteger() == 101",
    "device.attributes['gpu.example.com'].driverVersion.compareTo(semver('1.0.0')) == 0",
    "device.attributes['gpu.example.com'].driverVersion.isLessThan(semver('1.10.0'))",
    "device.attributes['gpu.example.com'].driverVersion.major() == 1 && "
    "device.attributes['gpu.example.com'].driverVersion.minor() == 0 && "
    "device.attributes['gpu.example.com'].driverVersion.patch() == 0",
    "semver('1.2.3-rc.1').isLessThan(semver('1.2.3'))",
    "isSemver('1.2.3') && !isSemver('1.2') && isSemver('v1.2', true)",
    "isQuantity('1Gi') && !isQuantity('one')",
    "device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'",
    "device.attributes['gpu.example.com'].model.lowerAscii().startsWith('latest')",
    "device.attributes['gpu.example.com'].index in [1, 2, 3]",
    "device.attributes['gpu.example.com'].index >= 2 && device.attributes['gpu.example.com'].index <= 5",
    "device.attributes['example.com'].rack == 'r1'",
    "device.attributes['gpu.example.com'].ecc",
    "device.attributes['unknown.example.org'].size() == 0",
    "!has(device.attributes['gpu.example.com'].numa)",
    "device.attributes['unknown.example.org'].numa == 1 || true",
    "'example.com' in device.attributes",
    "device.attributes['gpu.example.com'].uuid.split('-')[0] == 'gpu'",
    "device.attributes['gpu.example.com'].uuid.substring(0, 3).upperAscii() == 'GPU'",
    "device.attributes['gpu.example.com'].uuid.indexOf('-') == 3",
    "device.attributes['gpu.example.com'].uuid.charAt(0) == 'g'",
    "'a-b'.replace('-', '_') == 'a_b' && ' x '.trim() == 'x' && ['a', 'b'].join(',') == 'a,b'",
    "strings.quote('a') == '\"a\"'",
    "device.attributes['gpu.example.com'].model.find('[0-9]+') == ''",
    "[1, 2, 3].isSorted() && [1, 2].sum() == 3 && [3, 1].max() == 3 && [3, 1].min() == 1",
    "[1, 2, 3].indexOf(2) == 1 && [1, 2, 2].lastIndexOf(2) == 2",
    "sets.contains([1, 2, 3], [1]) && sets.intersects([1], [1, 4]) && sets.equivalent([1, 2], [2, 1])",
    "[0, 1, 2].exists(i, device.attributes['gpu.example.com'].index == i)",
]

NO_MATCH = [
    "device.capacity['gpu.example.com'].memory.compareTo(quantity('100Gi')) >= 0",
    "device.attributes['gpu.example.com'].index > 5",
    "device.attributes['gpu.example.com'].model == 'H100'",
    "device.driver == 'other.example.com'",
]

COMPILE_PROBLEMS = [
    ("device.driver", 'must evaluate to bool, not string'),
    ("quantity('1Gi')", 'must evaluate to bool, not Quantity'),
    ("device.driver ==", 'syntax error'),
    ("gpu.memory > 1", "undeclared reference to 'gpu'"),
    ("device.memory > 1", "device has no field 'memory'"),
    ("device.allowMultipleAllocations", "device has no field 'allowMultipleAllocations'"),
    ("foo(device.driver)", "undeclared reference to function 'foo'"),
    ("device.driver.frobnicate()", "undeclared reference to function 'frobnicate'"),
    ("", 'empty'),
]

# Valid in Kubernetes, evaluated by cel-python in another way or not at all: no compile problem.
VALID_UNMODELED = [
    "cel.bind(m, device.attributes['gpu.example.com'].model, m.startsWith('LATEST'))",
    "[1, 2].all(i, v, v > i)",
    "device.attributes['gpu.example.com'].uuid.format([]) != ''",
]

RUNTIME_ERRORS = [
    ("device.attributes['gpu.example.com'].numa == 1", 'no such'),
    ("device.attributes['gpu.example.com'].model == 1", 'CEL runtime error'),
    ("quantity('lots') == quantity('1')", "'lots' is not a valid quantity"),
    ("device.attributes['gpu.example.com'].index.compareTo(1) == 0", 'no such overload'),
    ("url('https://x').getHost() == 'x'", 'not evaluated by this explainer'),
]


@pytest.mark.parametrize('expression', MATCH)
def test_matching_expressions(gpu, expression):
    assert dra_cel.compile_problem(expression) is None
    assert dra_cel.device_matches(expression, gpu, DRIVER) is True


@pytest.mark.parametrize('expression', NO_MATCH)
def test_non_matching_expressions(gpu, expression):
    assert dra_cel.compile_problem(expression) is None
    assert dra_cel.device_matches(expression, gpu, DRIVER) is False


@pytest.mark.parametrize('expression,words', COMPILE_PROBLEMS)
def test_compile_problems_name_the_problem(gpu, expression, words):
    problem = dra_cel.compile_problem(expression)
    assert problem and words in problem
    with pytest.raises(cel_types.CelError, match='CEL expression|empty'):
        dra_cel.device_matches(expression, gpu, DRIVER)


@pytest.mark.parametrize('expression', VALID_UNMODELED)
def test_valid_but_unmodeled_expressions_compile(expression):
    assert dra_cel.compile_problem(expression) is None


@pytest.mark.parametrize('expression,words', RUNTIME_ERRORS)
def test_runtime_errors_raise_cel_error(gpu, expression, words):
    assert dra_cel.compile_problem(expression) is None
    with pytest.raises(cel_types.CelError) as caught:
        dra_cel.device_matches(expression, gpu, DRIVER)
    assert words in str(caught.value)


def test_consumable_capacity_adds_allow_multiple_allocations(gpu):
    expression = 'device.allowMultipleAllocations == false'
    assert dra_cel.compile_problem(expression, consumable_capacity=True) is None
    assert dra_cel.device_matches(expression, gpu, DRIVER, consumable_capacity=True) is True
    shared = dict(gpu, allowMultipleAllocations=True)
    assert dra_cel.device_matches(expression, shared, DRIVER, consumable_capacity=True) is False


def test_qualified_names_default_to_the_driver_domain():
    assert dra_cel.qualified_name('memory', DRIVER) == (DRIVER, 'memory')
    assert dra_cel.qualified_name('example.com/rack', DRIVER) == ('example.com', 'rack')


def test_bad_version_attribute_is_a_runtime_error(gpu):
    broken = dict(gpu, attributes={'driverVersion': {'version': 'one'}})
    with pytest.raises(cel_types.CelError, match='parse semantic version'):
        dra_cel.device_matches("device.driver == 'gpu.example.com'", broken, DRIVER)


@pytest.mark.parametrize('expression, driver', [
    ("device.driver == 'gpu.example.com'", 'gpu.example.com'),
    ('  device.driver=="gpu.example.com" ', 'gpu.example.com'),
    ("'nic.example.com' == device.driver", 'nic.example.com'),
    ('device.driver == ""', ''),
])
def test_driver_equality_reads_the_plain_driver_selector(expression, driver):
    assert dra_cel.driver_equality(expression) == driver


@pytest.mark.parametrize('expression', [
    "device.driver == 'gpu.example.com' && true", 'device.driver == "a\\"b"', "device.driver != 'gpu.example.com'",
    "device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'", "device.driver == 'a' == device.driver",
    None,
])
def test_driver_equality_leaves_every_other_selector_to_cel(expression):
    assert dra_cel.driver_equality(expression) is None


@pytest.mark.parametrize('expression', ["device.driver == 'gpu.example.com'", "'other.example.com' == device.driver"])
def test_driver_equality_answers_as_cel_does_without_building_cel(gpu, expression, monkeypatch):
    variable = dra_cel.device_variable(gpu, DRIVER)
    through_cel = dra_cel._compile(expression)[0].evaluate(dict(cel_functions.NAMESPACES, device=variable))
    monkeypatch.setattr(dra_cel, '_ENV', None)
    monkeypatch.setattr(dra_cel, '_PROGRAMS', {})
    monkeypatch.setattr(cel_types.celpy, 'Environment', lambda *a, **k: pytest.fail('cel-python was built'))
    assert dra_cel.evaluate(expression, variable) is bool(through_cel)
    assert dra_cel.compile_problem(expression) is None
