# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""etcd's database as the API server sees it: its size against the backend quota, and writes that fail.

Every object of the lab, every seat's included, lives in one etcd whose backend quota
(--quota-backend-bytes, dralab_etcd_quota_bytes) is a hard wall: once the database reaches it, etcd raises its
NOSPACE alarm and accepts reads and deletes only; every write of the cluster fails, the reset's too, until the
database is compacted, defragmented and the alarm disarmed.

The API server publishes the database's size in its /metrics (apiserver_storage_size_bytes, STABLE on 1.35,
refreshed every minute; apiserver_storage_db_total_size_in_bytes before 1.28). An active alarm shows where an
instructor can read without etcd's client certificates: kube-apiserver renews its identity Lease in kube-system
(label apiserver.kubernetes.io/identity=kube-apiserver) every 10 s, and that write fails while writes fail. When
no API server renewed its Lease for STALE_LEASE seconds, the cluster cannot write.

Pure: dra_health reads the metrics and the Leases (k8s/client.py) and adds these problems to its report.
"""

from __future__ import annotations

from fractions import Fraction

from ansible_collections.dralab.workshop.plugins.module_utils.dra.health import ERROR, WARNING
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_age, parse_time

SIZE_METRICS = ('apiserver_storage_size_bytes', 'apiserver_storage_db_total_size_in_bytes')
IDENTITY_LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases'
IDENTITY_SELECTOR = 'apiserver.kubernetes.io/identity=kube-apiserver'
WARN_FRACTION = Fraction(80, 100)
ERROR_FRACTION = Fraction(95, 100)
STALE_LEASE = 60  # seconds; kube-apiserver renews its identity Lease every 10 s
FULL = 'etcd_storage_full'
WRITES_FAILING = 'etcd_writes_failing'
OBJECT = 'etcd'
ADVICE = ("On the control plane: find what filled it (kubectl get --raw /metrics | grep apiserver_resource_objects; "
          "a seat's objects go with reset.yml -e lab_reset_seats=NAME), then compact and defragment etcd "
          "(etcdctl compact REVISION; etcdctl defrag) and, if etcdctl alarm list shows NOSPACE, etcdctl alarm disarm; "
          "for room, raise dralab_etcd_quota_bytes (up to 8 GiB; kubeadm applies it when the cluster is built).")


def metric_samples(text, names):
    """[(name, labels text, value)] of the samples of the metrics in names in a Prometheus text exposition."""
    samples = []
    for line in (text or '').splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        head, dummy, value = line.rpartition(' ')
        name, brace, labels = head.partition('{')
        if name in names:
            try:
                samples.append((name, (brace + labels).strip(), float(value)))
            except ValueError:
                continue
    return samples


def database_size(text):
    """The bytes of etcd's database from the API server's /metrics text (the largest of its etcd clusters), or None
    when the metric has no sample yet (the API server fills it a minute after it starts)."""
    for name in SIZE_METRICS:
        values = [value for sample_name, dummy, value in metric_samples(text, (name,)) if sample_name == name]
        if values:
            return int(max(values))
    return None


def lease_silence(leases, now):
    """Seconds since the newest renewal of the API servers' identity Leases (None without any Lease)."""
    renewals = []
    for lease in leases or []:
        spec = lease.get('spec') or {}
        when = spec.get('renewTime') or spec.get('acquireTime')
        if when:
            renewals.append(parse_time(when))
    if not renewals:
        return None
    return max(0.0, (parse_time(now) - max(renewals)).total_seconds())


def _bytes(number):
    """1.2 GiB, 17.9 MiB."""
    return '%.1f GiB' % (number / 2.0 ** 30) if number >= 2 ** 30 else '%.1f MiB' % (number / 2.0 ** 20)


def _share(size, quota):
    return '%s of its %s quota (%d%%)' % (_bytes(size), _bytes(quota), int(100 * Fraction(size) / quota))


def storage_problems(size, quota, silence=None):
    """dra_health problems about etcd: the database size against quota (bytes; warning from 80 %, error from 95 %)
    and writes failing (silence: lease_silence, an error above STALE_LEASE)."""
    problems = []
    if size is not None and quota:
        fraction = Fraction(size) / quota
        if fraction >= WARN_FRACTION:
            severity = ERROR if fraction >= ERROR_FRACTION else WARNING
            problems.append({
                'type': FULL, 'severity': severity, 'object': OBJECT, 'size': size, 'quota': quota,
                'reason': "etcd's database takes %s: at the quota etcd raises its NOSPACE alarm and the whole API "
                          "refuses writes, the reset's included. %s" % (_share(size, quota), ADVICE)})
    if silence is not None and silence > STALE_LEASE:
        state = ' (the database takes %s)' % _share(size, quota) if size is not None and quota else ''
        problems.append({
            'type': WRITES_FAILING, 'severity': ERROR, 'object': OBJECT, 'size': size, 'quota': quota,
            'reason': 'no API server renewed its identity Lease in kube-system for %s (each renews it every 10 s): '
                      "writes to etcd fail, which is etcd's NOSPACE alarm when the database reached its quota%s. %s"
                      % (format_age(silence), state, ADVICE)})
    return problems


def storage_summary(size, quota, silence=None):
    """What dra_health returns as etcd: size and quota in bytes, the fraction used, the Leases' silence."""
    return {'size_bytes': size, 'quota_bytes': quota or None,
            'used_percent': round(100.0 * size / quota, 1) if size is not None and quota else None,
            'lease_silence_seconds': None if silence is None else round(silence, 1)}
