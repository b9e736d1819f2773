# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # Standard documentation fragment: what each attribute means.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
"""

    # Use together with the standard fragment, for modules that only read.
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: none
    details:
      - This action does not modify state.
"""

    # Use together with the standard fragment, for modules that write through module_utils/k8s_apply.
    APPLY_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - The writes are server-side dry runs; the result says what would change.
  diff_mode:
    support: none
"""
