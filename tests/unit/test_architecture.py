# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The imports of plugins/module_utils follow the layers of docs/architecture.md."""

from __future__ import annotations

import ast
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
MODULE_UTILS = REPO / 'plugins' / 'module_utils'
OURS = 'ansible_collections.dralab.workshop.plugins.'
LAYERS = ('values', 'settings', 'model', 'client')
TABLE_START, TABLE_END = '<!-- layers: module | layer -->', '<!-- layers: end -->'


def documented_layers(text=None):
    """module (path below module_utils without .py, e.g. dra/model) -> layer index, from every layer table of
    docs/architecture.md (one per package, each between the layers markers)."""
    text = text if text is not None else (REPO / 'docs' / 'architecture.md').read_text()
    layers = {}
    for chunk in text.split(TABLE_START)[1:]:
        assert TABLE_END in chunk, 'a layer table without its end marker'
        for line in chunk[:chunk.index(TABLE_END)].splitlines():
            cells = [cell.strip().strip('`') for cell in line.strip().strip('|').split('|')]
            if len(cells) >= 2 and cells[0].endswith('.py'):
                assert cells[1] in LAYERS, line
                assert cells[0][:-3] not in layers, 'listed twice: ' + cells[0]
                layers[cells[0][:-3]] = LAYERS.index(cells[1])
    return layers


def _module_utils_target(dotted, name=None):
    """The module_utils module an import names: 'module_utils.dra.model' for from ...module_utils.dra import model."""
    parts = dotted.split('.')
    if name is not None and (MODULE_UTILS.joinpath(*parts[1:] + [name + '.py'])).is_file():
        parts.append(name)
    return '.'.join(parts)


def imports_of(path):
    """(name, line) of every import of ours in a file (top level or inside functions); a module_utils module is
    named module_utils.<package>.<module> or module_utils.<module>."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(OURS):
            dotted = node.module[len(OURS):]
            if dotted.startswith('module_utils'):
                found.extend((_module_utils_target(dotted, alias.name), node.lineno) for alias in node.names)
            else:
                found.append((dotted, node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((alias.name[len(OURS):], node.lineno) for alias in node.names if alias.name.startswith(OURS))
    return found


def _key(target):
    """module_utils.dra.model -> dra/model."""
    return '/'.join(target.split('.')[1:])


def graph():
    return dict((path.relative_to(MODULE_UTILS).with_suffix('').as_posix(), imports_of(path))
                for path in sorted(MODULE_UTILS.rglob('*.py')) if path.stem != '__init__')


def problems(layers, imports):
    """Every import that breaks the documented layering, and every loop."""
    found = []
    for module, targets in sorted(imports.items()):
        if module not in layers:
            found.append('plugins/module_utils/%s.py is not in a layer table of docs/architecture.md' % module)
            continue
        for target, line in targets:
            if not target.startswith('module_utils.'):
                found.append('%s.py:%d imports %s: module_utils never imports modules or filters'
                             % (module, line, target))
                continue
            name = _key(target)
            if name not in layers:
                found.append('%s.py:%d imports %s, which is not in a layer table' % (module, line, name))
            elif layers[module] == 0:
                found.append('%s.py:%d imports %s: a values module imports nothing of ours' % (module, line, name))
            elif layers[name] > layers[module]:
                found.append('%s.py:%d imports %s: layer %s may not import layer %s'
                             % (module, line, name, LAYERS[layers[module]], LAYERS[layers[name]]))
    edges = dict((module, sorted(set(_key(t) for t, dummy in targets if t.startswith('module_utils.'))))
                 for module, targets in imports.items())
    state = {}

    def visit(module, path):
        state[module] = 'open'
        for target in edges.get(module, ()):
            if state.get(target) == 'open':
                found.append('import loop: %s' % ' -> '.join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, path + [target])
        state[module] = 'done'

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    return found


def test_module_utils_follow_the_documented_layers():
    imports = graph()
    assert len(imports) >= 10 and any(imports.values())
    assert problems(documented_layers(), imports) == []


def test_every_documented_module_exists():
    missing = sorted(name for name in documented_layers() if not (MODULE_UTILS / (name + '.py')).is_file())
    assert missing == []


def test_packages_hold_no_code_of_their_own():
    """A package's __init__.py stays empty: no re-exports, so every name has one import path."""
    inits = sorted(MODULE_UTILS.rglob('__init__.py'))
    assert inits and [str(path.relative_to(REPO)) for path in inits if path.read_text().strip()] == []


@pytest.mark.parametrize('imports, expected', [
    ({'values': [('module_utils.lab_settings', 3)], 'lab_settings': [('module_utils.values', 1)]},
     ['values.py:3 imports lab_settings: a values module imports nothing of ours',
      'import loop: lab_settings -> values -> lab_settings']),
    ({'k8s/client': [], 'seat/model': [('module_utils.k8s.client', 7)]},
     ['seat/model.py:7 imports k8s/client: layer model may not import layer client']),
    ({'seat/model': [('modules.seat_objects', 9)]},
     ['seat/model.py:9 imports modules.seat_objects: module_utils never imports modules or filters']),
    ({'newcomer': []}, ['plugins/module_utils/newcomer.py is not in a layer table of docs/architecture.md']),
    ({'seat/model': [('module_utils.dra.menu', 1)], 'dra/menu': [('module_utils.seat.model', 2)]},
     ['import loop: dra/menu -> seat/model -> dra/menu']),
])
def test_each_kind_of_break_is_found(imports, expected):
    assert problems(documented_layers(), imports) == expected


def test_a_package_import_names_the_module(tmp_path):
    path = tmp_path / 'caller.py'
    path.write_text('from ansible_collections.dralab.workshop.plugins.module_utils.dra import health as dra_health\n'
                    'from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import lease_end\n'
                    'from ansible_collections.dralab.workshop.plugins.module_utils import values\n')
    assert imports_of(path) == [('module_utils.dra.health', 1), ('module_utils.seat.lease', 2), ('module_utils.values', 3)]


def test_imports_inside_functions_count(tmp_path):
    path = tmp_path / 'lazy.py'
    path.write_text('def late():\n    from ansible_collections.dralab.workshop.plugins.module_utils.preflight.validate import validate\n')
    assert imports_of(path) == [('module_utils.preflight.validate', 2)]


def borrowed_uses(path, name, home):
    """(line, where) of every use of name in a file that does not come from module_utils.<home>."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and any(alias.name == name for alias in node.names):
            if node.module and node.module.startswith(OURS) and node.module != OURS + 'module_utils.' + home:
                found.append((node.lineno, node.module[len(OURS):]))
        elif isinstance(node, ast.Attribute) and node.attr == name:
            if isinstance(node.value, ast.Name) and node.value.id != home:
                found.append((node.lineno, node.value.id))
    return found


# Helpers of the values layer that other modules import for their own use: a caller takes them from values,
# never through a module that happens to import them (one source per helper).
VALUES_HELPERS = ('parse_duration', 'parse_quantity', 'format_quantity')
PYTHON_FILES = sorted(path for top in ('plugins', 'tools', 'tests') for path in (REPO / top).rglob('*.py')
                      if 'gomod' not in path.parts)


@pytest.mark.parametrize('name', VALUES_HELPERS)
def test_value_helpers_are_imported_from_values(name):
    borrowed = ['%s:%d (%s.%s)' % (path.relative_to(REPO), line, where, name)
                for path in PYTHON_FILES for line, where in borrowed_uses(path, name, 'values')]
    assert borrowed == []


def test_a_borrowed_helper_is_found(tmp_path):
    path = tmp_path / 'caller.py'
    path.write_text('from ansible_collections.dralab.workshop.plugins.module_utils.dra.model import parse_duration\n'
                    'from ansible_collections.dralab.workshop.plugins.module_utils import lab_config, values\n'
                    'lab_config.parse_duration("1h")\nvalues.parse_duration("1h")\n')
    assert borrowed_uses(path, 'parse_duration', 'values') == [(1, 'module_utils.dra.model'), (3, 'lab_config')]


# A file a newcomer can read in one sitting: the collection's code, the node programs and the production build.
MAX_LINES = 600
SIZED_TREES = ('plugins', 'tools', 'dralab_build')


def oversized(paths, limit=MAX_LINES):
    """'path: N lines' for every file longer than limit."""
    found = []
    for path in paths:
        count = len(path.read_text().splitlines())
        if count > limit:
            found.append('%s: %d lines' % (path.relative_to(REPO) if path.is_relative_to(REPO) else path, count))
    return found


def test_no_python_file_is_over_the_line_limit():
    paths = sorted(path for top in SIZED_TREES for path in (REPO / top).rglob('*.py'))
    assert len(paths) > 50
    assert oversized(paths) == []


def test_an_oversized_file_is_found(tmp_path):
    path = tmp_path / 'long.py'
    path.write_text('x = 1\n' * (MAX_LINES + 1))
    assert oversized([path]) == ['%s: %d lines' % (path, MAX_LINES + 1)]


def defined_names(path):
    """The names a module defines itself at its top level (not the ones it imports)."""
    names = set()
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    names.update((a.asname or a.name).split('.')[0] for a in inner.names)
                elif isinstance(inner, ast.Assign):
                    names.update(n.id for t in inner.targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def passed_through(path):
    """(line, module, name) of every name imported from a module_utils module that only imports it itself."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(OURS + 'module_utils')):
            continue
        base = MODULE_UTILS.joinpath(*node.module[len(OURS + 'module_utils'):].strip('.').split('.'))
        home = base.with_suffix('.py') if node.module != OURS + 'module_utils' else None
        for alias in node.names:
            if home is None or not home.is_file():
                continue  # a package import: the name is a module
            if alias.name not in defined_names(home):
                found.append((node.lineno, node.module[len(OURS):], alias.name))
    return found


def test_every_name_is_imported_from_its_home():
    """No pass-through: a name comes from the module that defines it (a module importing it is not its home)."""
    paths = sorted(path for top in ('plugins', 'tools', 'tests', 'dralab_build', 'benchmarks')
                   for path in (REPO / top).rglob('*.py') if 'gomod' not in path.parts)
    found = ['%s:%d imports %s from %s, which only imports it' % (path.relative_to(REPO), line, name, module)
             for path in paths for line, module, name in passed_through(path)]
    assert found == []


def test_a_passed_through_name_is_found(tmp_path):
    path = tmp_path / 'caller.py'
    path.write_text('from ansible_collections.dralab.workshop.plugins.module_utils.dra.health import parse_time\n'
                    'from ansible_collections.dralab.workshop.plugins.module_utils.dra.health import analyze\n')
    assert passed_through(path) == [(1, 'module_utils.dra.health', 'parse_time')]
