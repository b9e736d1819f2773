#!/usr/bin/env bash
# Prints the newest Python 3.12+ found for the controller's venv, or nothing.
# Candidates: python3.14 .. python3.12 and python3 on PATH, then pyenv's installed versions
# (pyenv's shims answer only for the selected version, so each candidate is asked to run).
set -u
candidates=(python3.14 python3.13 python3.12 python3)
if command -v pyenv >/dev/null 2>&1; then
  root=$(pyenv root)
  for v in $(ls -1 "$root/versions" 2>/dev/null | sort -rV); do
    candidates+=("$root/versions/$v/bin/python3")
  done
fi
for c in "${candidates[@]}"; do
  if "$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
    command -v "$c"
    exit 0
  fi
done
exit 1
