# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # dra_health's check of etcd's database (plugins/module_utils/k8s/etcd.py).
    DOCUMENTATION = r"""
options:
  etcd_quota_bytes:
    description:
      - etcd's backend quota in bytes (C(--quota-backend-bytes), the lab's C(dralab_etcd_quota_bytes)); 0 skips the
        check of etcd.
      - The module reads the database's size from the API server's C(/metrics) (C(apiserver_storage_size_bytes),
        refreshed every minute) and the API servers' identity Leases in C(kube-system). From 80 % of the quota it
        warns (C(etcd_storage_full)), from 95 % it is an error; when no API server renewed its Lease for a minute,
        writes to etcd fail (C(etcd_writes_failing), an error, which is etcd's NOSPACE alarm once the quota is reached). Each
        says what to do.
      - Needs C(get) on the non-resource URL C(/metrics) and C(list) on Leases in C(kube-system) (the admin has both);
        a failure to read them only produces a warning.
    type: int
    default: 4294967296
"""
