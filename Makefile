# dralab.workshop: build, lint and test entry points.
# Expensive things (the Python venv, Go-built binaries, images) are cached
# outside the repository under $(DRALAB_CACHE), keyed by their versions.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

DRALAB_CACHE ?= $(HOME)/.cache/dralab
# The controller's Python: 3.12 or newer (ansible-core 2.21 needs it). PYTHON=/path/to/python3.x picks another;
# dralab_build/find_python.sh names the newest one found (python3.13, python3.12, python3, pyenv's versions).
PYTHON ?= $(shell dralab_build/find_python.sh)
ifeq ($(PYTHON),)
$(error No Python 3.12 or newer found for the controller: install one, or name it with PYTHON=/path/to/python3.12)
endif
PY_TAG := $(shell $(PYTHON) -c 'import sys; print("py%d%d" % sys.version_info[:2])')
REQ_HASH := $(shell cat requirements-dev.txt | sha256sum | cut -c1-12)
VENV ?= $(DRALAB_CACHE)/venv-$(REQ_HASH)-$(PY_TAG)
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
export PATH := $(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

# Where `ansible-test sanity` runs: a copy of the collection in the layout it needs.
SANITY_ROOT := $(DRALAB_CACHE)/sanity/ansible_collections/dralab/workshop

# Debian's docker-registry (distribution 2.8), unpacked, never installed: the
# package's postinst would start a registry on every interface.
REGISTRY_VERSION := 2.8.2
REGISTRY_DIR := $(DRALAB_CACHE)/debs/docker-registry-$(REGISTRY_VERSION)
REGISTRY_BIN := $(REGISTRY_DIR)/usr/bin/docker-registry
export DRALAB_DOCKER_REGISTRY := $(REGISTRY_BIN)

.PHONY: bench lab-tools mirror test-mirror lab lab-down test-lab test-lab-debian13 test-lab-board test-reliability harness cluster-up cluster-down test-integration

.PHONY: help setup test-tools lint yamllint ansible-lint sanity test-unit test-unit-tools settings-docs test dist build clean venv-path

help: ## List the targets.
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

$(VENV)/.ok: requirements-dev.txt
	@echo "controller Python: $(PYTHON) ($$($(PYTHON) --version))"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

setup: $(VENV)/.ok ## Create the venv with every Python tool (cached by requirements hash and Python version).

venv-path: ## Print the venv's folder (source "$$(make -s venv-path)/bin/activate").
	@echo $(VENV)

$(REGISTRY_BIN):
	rm -rf $(REGISTRY_DIR).tmp && mkdir -p $(REGISTRY_DIR).tmp
	cd $(REGISTRY_DIR).tmp && { apt-get download docker-registry=$(REGISTRY_VERSION)* \
	  || { apt-get update -qq && apt-get download docker-registry=$(REGISTRY_VERSION)*; }; }
	dpkg-deb -x $(REGISTRY_DIR).tmp/docker-registry_*.deb $(REGISTRY_DIR).tmp/root
	rm -rf $(REGISTRY_DIR) && mv $(REGISTRY_DIR).tmp/root $(REGISTRY_DIR) && rm -rf $(REGISTRY_DIR).tmp
	$(REGISTRY_BIN) --version

test-tools: setup $(REGISTRY_BIN) ## Non-Python test tools (Debian packages unpacked into the cache).
	command -v systemd-analyze >/dev/null || { apt-get update -qq && apt-get install -y -qq systemd; }
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }

yamllint: setup ## YAML style.
	$(BIN)/yamllint -s .

ansible-lint: setup ## ansible-lint, production profile.
	$(BIN)/ansible-lint --profile production --offline

sanity: setup ## ansible-test sanity from a copy in an ansible_collections tree.
	DRALAB_CACHE=$(DRALAB_CACHE) $(PY) tests/sanity/run_sanity.py --python-bin $(PY) --root $(SANITY_ROOT)

lint: yamllint ansible-lint sanity ## Everything static: yamllint, ansible-lint, ansible-test sanity.

# Unit tests that run a non-Python tool are marked needs_tools (tests/unit/conftest.py): test-unit needs only
# the venv, test-unit-tools first provides the tools. `make test` runs both.
test-unit: setup ## Unit tests (only the venv): module_utils, filters, templates, modules.
	$(BIN)/pytest -q --strict-markers -m "not needs_tools" tests/unit

test-unit-tools: test-tools ## The unit tests that run systemd-analyze, docker-registry or chromium (test-tools provides them).
	$(BIN)/pytest -q --strict-markers -m needs_tools tests/unit

settings-docs: setup ## Rewrite the settings tables of README.md and docs/conventions.md and role dralab's defaults from lab_settings.py.
	$(BIN)/python -m dralab_build.settings_docs

DIST_DIR ?= $(CURDIR)/dist
dist: setup ## Build the collection artifact, dist/dralab-workshop-VERSION.tar.gz (galaxy.yml's build_ignore keeps tests, harness and build tooling out); prints its size.
	rm -rf $(DIST_DIR)
	$(BIN)/ansible-galaxy collection build --force --output-path $(DIST_DIR) .
	$(PY) tests/sanity/check_artifact.py $(DIST_DIR)/dralab-workshop-*.tar.gz

build: dist ## The artifact, then every doc rendered from a copy installed from it.
	$(PY) tests/sanity/check_installed_docs.py $(DIST_DIR)/dralab-workshop-*.tar.gz

# --- integration tier: upstream binaries from the Go module proxy + a local control plane
# dralab_build/ is the production build (binaries, the offline mirror, the wheels, the generated docs): what
# `make mirror` builds is what a real workshop's offline mirror carries. tests/harness only runs the test tiers.
CLUSTER_DIR ?= $(DRALAB_CACHE)/cluster
FEATURE_GATES ?=

harness: setup ## Build etcd, kube-*, kubectl, kwok and the DRA example plugin (cached by version).
	DRALAB_CACHE=$(DRALAB_CACHE) nice -n 10 $(PY) -m dralab_build.binaries

cluster-up: harness ## Start a control plane with 3 fake nodes x 8 GPUs on loopback; prints the kubeconfig.
	DRALAB_CACHE=$(DRALAB_CACHE) $(PY) tests/harness/cluster.py up --dir $(CLUSTER_DIR) \
		$(if $(FEATURE_GATES),--feature-gates $(FEATURE_GATES))

cluster-down: setup ## Stop the control plane started by cluster-up and remove its directory.
	$(PY) tests/harness/cluster.py down --dir $(CLUSTER_DIR)

# INTEGRATION_ARGS: more pytest options, e.g. --reverse-modules or --shuffle-modules SEED (tests/integration/conftest.py).
INTEGRATION_ARGS ?=
# One pytest session, so one cluster at a time, per set of DRA features: the default lab, then the alpha features,
# then the partitions. INTEGRATION_ARGS naming tests (tests/...) runs those alone, in one session.
INTEGRATION_SESSIONS ?= tests/integration tests/integration/features tests/integration/partitions
test-integration: harness ## Integration tests against a real control plane (pytest starts and stops it).
	if [ -n "$(findstring tests/,$(INTEGRATION_ARGS))" ]; then \
	  DRALAB_CACHE=$(DRALAB_CACHE) DRALAB_FEATURE_GATES=$(FEATURE_GATES) $(BIN)/pytest -q $(INTEGRATION_ARGS); \
	else for session in $(INTEGRATION_SESSIONS); do \
	  DRALAB_CACHE=$(DRALAB_CACHE) DRALAB_FEATURE_GATES=$(FEATURE_GATES) $(BIN)/pytest -q $(INTEGRATION_ARGS) $$session || exit 1; \
	done; fi

# BENCH_ARGS: e.g. --only users,reset or --naive-seats 12 (benchmarks/bench.py); BENCH_OUT: the table's file.
BENCH_ARGS ?=
bench: harness ## Benchmarks of issue 10 against a fresh control plane, each with its baseline; prints a table last.
	DRALAB_CACHE=$(DRALAB_CACHE) nice -n 10 $(PY) benchmarks/bench.py $(BENCH_ARGS)

# --- lab tier: the offline mirror, podman "VMs", site.yml end to end
# gcc/libc6-dev/libseccomp-dev build runc and pause for the mirror; podman,
# runc, debootstrap and zstd make and run the node images; skopeo loads images;
# chromium and chromium-driver are the browser of tests/lab/test_board.py.
LAB_PACKAGES := gcc libc6-dev libseccomp-dev podman runc skopeo debootstrap zstd chromium chromium-driver nftables iproute2

lab-tools: ## Debian packages the mirror build and the podman nodes need.
	@missing=$$(for p in $(LAB_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi
	apt-cache show busybox-static >/dev/null 2>&1 || apt-get update -qq

mirror: harness lab-tools ## Build the lab's offline mirror from the Go module proxy (cached by version).
	DRALAB_CACHE=$(DRALAB_CACHE) nice -n 10 $(PY) -m dralab_build.mirror

test-mirror: mirror test-tools ## Smoke check: the roles' URLs and images against the mirror on loopback.
	DRALAB_CACHE=$(DRALAB_CACHE) $(BIN)/pytest -q tests/lab/test_mirror.py

LAB_INVENTORY := inventories/local/hosts.yml
LAB_ENV := DRALAB_CACHE=$(DRALAB_CACHE)

lab: setup mirror ## Bring up the lab (3 podman nodes + mirror node, site.yml) and leave it up.
	$(LAB_ENV) nice -n 10 $(PY) tests/harness/nodes.py up
	$(LAB_ENV) $(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/mirror.yml
	$(LAB_ENV) $(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/site.yml
	@$(LAB_ENV) $(PY) tests/harness/nodes.py seats

lab-down: ## Remove the lab's nodes, volumes and network (found by their label).
	$(LAB_ENV) $(PY) tests/harness/nodes.py down

# molecule/default: create, mirror, site.yml, idempotence, teardown + site.yml,
# testinfra verify, destroy. It shares the lab's nodes: it replaces a running lab.
test-lab: mirror test-tools ## The molecule scenario (the whole lab, then removed).
	$(LAB_ENV) $(BIN)/molecule test --scenario-name default

# molecule/debian13: the same lab on Debian 13 nodes (create, mirror, site.yml, idempotence, verify, destroy).
test-lab-debian13: mirror test-tools ## The molecule scenario on Debian 13 (trixie) nodes (replaces a running lab).
	$(LAB_ENV) $(BIN)/molecule test --scenario-name debian13

test-lab-board: setup lab-tools ## The GPU board in headless chromium, against the lab that make lab left up.
	$(LAB_ENV) $(BIN)/pytest -q -s tests/lab/test_board.py

# The rush leaves the lab with 72 seats; the interrupted runs tear the lab down and build it again (last).
test-reliability: setup ## Faults, the 72-seat rush and interrupted site.yml runs, against the lab make lab left up.
	$(LAB_ENV) $(BIN)/pytest -q -s tests/lab/test_faults.py tests/lab/test_rush.py tests/lab/test_rush_waitlist.py tests/lab/test_interrupted.py

test: lint test-unit test-unit-tools build test-integration test-lab ## Everything CI runs.

clean: ## Remove build outputs in the repository (not the cache).
	rm -rf tests/output .pytest_cache
