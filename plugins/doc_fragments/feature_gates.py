# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The options of the feature_gates and feature_gate_map filters (the same input, two output shapes).
    DOCUMENTATION = r"""
options:
  _input:
    description: The gates, for example a role's defaults.
    type: raw
    required: true
  extra:
    description: More gates applied after O(_input), usually the lab-wide C(dralab_feature_gates).
    type: raw
  strict:
    description: Fail on a gate name that Kubernetes 1.35 does not know, and on a locked gate set to a value it cannot take.
    type: bool
    default: false
"""
