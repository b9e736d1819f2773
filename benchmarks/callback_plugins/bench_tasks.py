# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark callback: one JSON line per task result (task, action, seconds, result size) for benchmarks/bench.py."""

from __future__ import annotations

DOCUMENTATION = r"""
name: bench_tasks
type: aggregate
short_description: Write the duration and result size of every task to a file
description:
  - For benchmarks/bench.py only. Appends one JSON line per task (name, action, seconds, size of the result in bytes),
    one per play start (play, at) and one at the end (stats, at) to the file named by the environment variable
    E(DRALAB_BENCH_TASKS); C(at) is the monotonic clock in seconds.
requirements:
  - enabled through ANSIBLE_CALLBACKS_ENABLED=bench_tasks
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'bench_tasks'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._path = os.environ.get('DRALAB_BENCH_TASKS')
        self._started = {}

    def _mark(self, line):
        if self._path:
            with open(self._path, 'a') as handle:
                handle.write(json.dumps(dict(line, at=round(time.monotonic(), 3))) + '\n')

    def v2_playbook_on_play_start(self, play):
        self._mark({'play': play.get_name()})

    def v2_playbook_on_stats(self, stats):
        self._mark({'stats': True})

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._started[task._uuid] = time.monotonic()

    def _record(self, result, status):
        if not self._path:
            return
        task = result._task
        started = self._started.get(task._uuid, time.monotonic())
        try:
            size = len(json.dumps(result._result, default=str))
        except (TypeError, ValueError):
            size = -1
        line = {'task': task.get_name(), 'action': task.action, 'status': status,
                'seconds': round(time.monotonic() - started, 3), 'bytes': size}
        with open(self._path, 'a') as handle:
            handle.write(json.dumps(line) + '\n')

    def v2_runner_on_ok(self, result):
        self._record(result, 'ok')

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, 'failed')

    def v2_runner_on_skipped(self, result):
        self._record(result, 'skipped')
