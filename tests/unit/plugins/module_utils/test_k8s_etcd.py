# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""etcd's database as the API server reports it (recorded /metrics of kube-apiserver 1.35.4), against the quota,
and writes that fail (the API servers' identity Leases no longer renewed)."""

from __future__ import annotations

import pathlib

from ansible_collections.dralab.workshop.plugins.module_utils.k8s import etcd

METRICS = (pathlib.Path(__file__).resolve().parents[2] / 'fixtures' / 'dra' / 'apiserver-1.35.4-metrics.txt').read_text()
SIZE = 18743296  # apiserver_storage_size_bytes{storage_cluster_id="etcd-0"} 1.8743296e+07
NOW = '2026-12-05T12:40:00Z'


def lease(renewed):
    return {'metadata': {'name': 'apiserver-x', 'namespace': 'kube-system'},
            'spec': {'holderIdentity': 'apiserver-x', 'leaseDurationSeconds': 3600, 'renewTime': renewed}}


def test_the_size_is_read_from_the_recorded_metrics():
    assert etcd.database_size(METRICS) == SIZE
    # Before 1.28 the API server named it apiserver_storage_db_total_size_in_bytes; two etcd clusters: the largest.
    old = ('# TYPE apiserver_storage_db_total_size_in_bytes gauge\n'
           'apiserver_storage_db_total_size_in_bytes{endpoint="https://127.0.0.1:2379"} 2.048e+06\n'
           'apiserver_storage_db_total_size_in_bytes{endpoint="https://127.0.0.1:2380"} 4096\n')
    assert etcd.database_size(old) == 2048000
    # The API server publishes the size about a minute after it starts: only the HELP and TYPE lines before.
    assert etcd.database_size('\n'.join(line for line in METRICS.splitlines() if line.startswith('#'))) is None
    assert etcd.database_size('') is None


def test_a_small_database_is_no_problem():
    assert etcd.storage_problems(SIZE, 4 * 2 ** 30, 4.0) == []
    assert etcd.storage_summary(SIZE, 4 * 2 ** 30, 4.0) == {
        'size_bytes': SIZE, 'quota_bytes': 4 * 2 ** 30, 'used_percent': 0.4, 'lease_silence_seconds': 4.0}


def test_from_80_percent_a_warning_from_95_an_error_each_saying_what_to_do():
    quota = 22 * 2 ** 20  # 22 MiB: the recorded 17.9 MiB is 81 %
    problem, = etcd.storage_problems(SIZE, quota)
    assert (problem['type'], problem['severity'], problem['object']) == ('etcd_storage_full', 'warning', 'etcd')
    assert problem['reason'].startswith("etcd's database takes 17.9 MiB of its 22.0 MiB quota (81%): at the quota etcd "
                                        "raises its NOSPACE alarm and the whole API refuses writes")
    assert 'etcdctl defrag' in problem['reason'] and 'etcdctl alarm disarm' in problem['reason']
    assert 'dralab_etcd_quota_bytes' in problem['reason']
    problem, = etcd.storage_problems(SIZE, 18 * 2 ** 20)  # 99 %
    assert problem['severity'] == 'error'
    assert etcd.storage_problems(SIZE, 0) == [] and etcd.storage_problems(None, 2 ** 20) == []


def test_leases_no_api_server_renewed_mean_writes_fail():
    silence = etcd.lease_silence([lease('2026-12-05T12:38:00.000000Z'), lease('2026-12-05T12:39:50.500000Z')], NOW)
    assert silence == 10.0  # the newest renewal counts (whole seconds): one API server that still writes is enough
    assert etcd.storage_problems(SIZE, 4 * 2 ** 30, silence) == []
    silence = etcd.lease_silence([lease('2026-12-05T12:35:00Z')], NOW)
    problem, = etcd.storage_problems(SIZE, 18 * 2 ** 20 + 1, silence)[1:]
    assert (problem['type'], problem['severity']) == ('etcd_writes_failing', 'error')
    assert problem['reason'].startswith('no API server renewed its identity Lease in kube-system for 5m (each renews '
                                        "it every 10 s): writes to etcd fail, which is etcd's NOSPACE alarm when the "
                                        'database reached its quota (the database takes 17.9 MiB of its')
    assert etcd.lease_silence([], NOW) is None


def test_metric_lines_with_labels_spaces_and_comments():
    text = ('# HELP x y\nfoo{a="b c",le="+Inf"} 3\nfoo 4\nbar{a="1"} NaN\nbaz{a="x"} notanumber\n')
    assert etcd.metric_samples(text, ('foo',)) == [('foo', '{a="b c",le="+Inf"}', 3.0), ('foo', '', 4.0)]
    assert etcd.metric_samples(text, ('baz',)) == []
