# Every command a person or CI runs. `make site` runs the main job on the local simulated GPU cluster;
# `make test` runs the whole suite (.ci/run calls it). Both set themselves up and are safe to repeat.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

REPO := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
PYTHON ?= python3.11
VENV := $(REPO)/.venv
BUILD := $(REPO)/build
# Collection root for ansible-playbook, ansible-doc, molecule and unit tests: symlinks to this checkout and
# to kubernetes.core from the venv (the `ansible` PyPI package ships it; Galaxy users get it via galaxy.yml).
COLLECTIONS := $(BUILD)/collections
# ansible-test needs a real directory under ansible_collections/ (it resolves symlinks and then refuses the
# checkout), so sanity runs on a fresh copy of the files git would see (tracked + untracked, not ignored),
# made its own (empty) git repository so that ansible-test lists its files rather than this checkout's.
SANITY_COLLECTIONS := $(BUILD)/ansible-test
SANITY_ROOT := $(SANITY_COLLECTIONS)/ansible_collections/gpuops/gpu_operator
K8S_CORE := $(VENV)/lib/python3.11/site-packages/ansible_collections/kubernetes/core
VERSION := $(shell sed -n 's/^version: *//p' $(REPO)/galaxy.yml)
TARBALL := $(BUILD)/gpuops-gpu_operator-$(VERSION).tar.gz
# ansible-core 2.19 bootstraps pip 24.2 in its test venvs (re-check after a core upgrade).
GET_PIP_CACHE := $(HOME)/.ansible/test/cache/get_pip_24_2.py
# Left out of the sanity copy, each with its reason (the ignore-file syntax cannot name directories):
# - tests/sim/hosts/: fake host file trees (data, never shipped). Their names copy sysfs/devfs
#   (`0000:00:00.0`, `dev/char/195:0`); the `:` makes no-illegal-filenames crash while parsing its own output.
# - tests/sim/chart/**/templates/, tests/sim/testchart/templates/: Helm (Go text/template) templates of the
#   stand-in charts, not YAML until helm renders them; yamllint cannot parse them.
# - tool caches that are not git-ignored (.hypothesis/, .pytest_cache/, .ruff_cache/): not source.
SANITY_EXCLUDE := .hypothesis/ .pytest_cache/ .ruff_cache/ tests/sim/hosts/ tests/sim/chart/.*/templates/ tests/sim/testchart/templates/
# Every sanity test ansible-core ships (validate-modules, pylint, pep8, compile, yamllint, import, ...);
# narrow it with e.g. `make sanity SANITY_ARGS="--test pep8"`.
SANITY_ARGS ?=
ANSIBLE_ENV := ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false
# The playbooks a person runs (site, audit, canary-demo) speak through the collection's quiet console callback
# (plugins/callback/console.py): messages as plain lines, one line per wait, no ok/skipped noise.
PLAYBOOK_ENV := $(ANSIBLE_ENV) ANSIBLE_STDOUT_CALLBACK=gpuops.gpu_operator.console
# Keep tool caches in build/ (git-ignored) rather than in the checkout.
export HYPOTHESIS_STORAGE_DIRECTORY := $(BUILD)/hypothesis
STAMP := $(VENV)/.gpuops-stamp

# The test bed's pinned binaries (helm, helm3, kube-*, kwok, etcd) from tests/sim/build/build.sh. GPUOPS_BIN (from
# the environment or `make site GPUOPS_BIN=DIR`) names ready binaries: build.sh and the test bed use those and
# build only what it lacks.
SIM_BIN := $(or $(GPUOPS_BIN),$(or $(GPUOPS_CACHE),$(HOME)/.cache/gpuops)/bin)
ifdef GPUOPS_BIN
export GPUOPS_BIN
endif
export PATH := $(VENV)/bin:$(SIM_BIN):$(PATH)

.PHONY: help venv collection-root sanity-root prometheus chromium real-node-packages sim-binaries site-binaries nvml lint ruff ansible-lint sanity units \
	integration molecule test site audit canary-demo site-down bench build doc-check changelog-lint ee clean

help:
	@echo "make site   - bring up the simulated GPU cluster (profile demo) and run playbooks/site.yml on it"
	@echo "             SITE_PROFILE=demo-faults (one broken node per layer; \`make site-down\` first) picks the profile;"
	@echo "             GPUOPS_BIN=DIR uses ready cluster binaries from DIR (only missing ones are built)"
	@echo "make audit  - make site, then playbooks/audit.yml with a fault overlay (JSON, Markdown, HTML reports)"
	@echo "make canary-demo - make site, then the canary upgrade of docs/canary-upgrade.md (a refusal, its recovery)"
	@echo "make test   - the whole suite: lint, sanity, units, doc-check, changelog-lint, ee, integration, molecule"
	@echo "             INTEGRATION_WORKERS=N runs the integration specs on N workers (default 2; 0 runs them in one process)"
	@echo "other targets: venv collection-root sanity-root sim-binaries site-binaries nvml chromium prometheus real-node-packages"
	@echo "               lint ruff"
	@echo "               ansible-lint sanity units integration molecule doc-check changelog-lint ee build bench site-down clean"

# --- set-up -------------------------------------------------------------------------------------------
# The stamp depends on the requirement files, so a repeat run is a no-op until they change.
venv: $(STAMP)
$(STAMP): $(REPO)/requirements/dev.txt $(REPO)/requirements/runtime.txt $(REPO)/meta/ee-requirements.txt \
	$(REPO)/requirements/constraints.txt
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet -r $(REPO)/requirements/dev.txt -c $(REPO)/requirements/constraints.txt
	@touch $@

collection-root: venv
	@mkdir -p $(COLLECTIONS)/ansible_collections/gpuops $(COLLECTIONS)/ansible_collections/kubernetes
	@ln -sfn $(REPO) $(COLLECTIONS)/ansible_collections/gpuops/gpu_operator
	@test -d $(K8S_CORE) || { echo "kubernetes.core not found at $(K8S_CORE) (is the 'ansible' package installed?)"; exit 1; }
	@ln -sfn $(K8S_CORE) $(COLLECTIONS)/ansible_collections/kubernetes/core

sanity-root: venv
	@rm -rf $(SANITY_COLLECTIONS)
	@mkdir -p $(SANITY_ROOT) $(SANITY_COLLECTIONS)/ansible_collections/kubernetes
	@cd $(REPO) && git ls-files -z --cached --others --exclude-standard \
		| grep -zv $(foreach p,$(SANITY_EXCLUDE),-e '^$(p)') \
		| while IFS= read -r -d '' f; do if [ -e "$$f" ] || [ -L "$$f" ]; then printf '%s\0' "$$f"; fi; done \
		| tar --null --files-from=- -cf - | tar -xf - -C $(SANITY_ROOT)
	@ln -sfn $(K8S_CORE) $(SANITY_COLLECTIONS)/ansible_collections/kubernetes/core
	@# Its own .git stops ansible-test walking up to this checkout, where build/ is git-ignored.
	@git -C $(SANITY_ROOT) init -q

# Debian's Prometheus scrapes the simulated DCGM exporter in the monitoring tests (test-bed.md §12).
prometheus:
	@command -v prometheus >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }
	@command -v prometheus >/dev/null || { echo "prometheus: install Debian's package: apt-get install -y prometheus"; exit 1; }

# The real node's Debian packages (docs/testbed.md): the CNI plugins (bridge, host-local, loopback) give its pods
# their network; libseccomp's headers let runc apply the pods' seccomp profiles (build.sh builds it with them).
real-node-packages:
	@test -x /usr/lib/cni/bridge -a -f /usr/include/seccomp.h || { apt-get update -qq && \
		apt-get install -y -qq --no-install-recommends containernetworking-plugins libseccomp-dev >/dev/null; }
	@test -x /usr/lib/cni/bridge -a -f /usr/include/seccomp.h || { echo "real-node-packages: install Debian's \
	packages: apt-get install -y containernetworking-plugins libseccomp-dev"; exit 1; }

# Debian's headless Chromium opens the audit's HTML report in the browser test.
chromium:
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }
	@command -v chromium >/dev/null || { echo "chromium: install Debian's package: apt-get install -y chromium"; exit 1; }

sim-binaries: real-node-packages
	bash $(REPO)/tests/sim/build/build.sh

# What a running bed needs (the first `make site` builds only these; helm3 is for the tests); the real node's
# runtime, kubelet and NVIDIA programs only for SITE_PROFILE=real-node.
REAL_NODE_BINARIES := kubelet runc containerd container-toolkit device-plugin
site-binaries: $(if $(filter real-node,$(SITE_PROFILE)),real-node-packages)
	bash $(REPO)/tests/sim/build/build.sh etcd kwok helm4 k8s upgrade-controller \
		$(if $(filter real-node,$(SITE_PROFILE)),$(REAL_NODE_BINARIES))

nvml:
	@if [ -f $(REPO)/tests/sim/nvml/Makefile ]; then $(MAKE) --no-print-directory -C $(REPO)/tests/sim/nvml; \
	else echo "nvml: tests/sim/nvml/Makefile does not exist yet, nothing to build"; fi

# --- test stages --------------------------------------------------------------------------------------
PY_DIRS := $(wildcard $(REPO)/plugins $(REPO)/tests $(REPO)/bench $(REPO)/extensions/eda)

lint: ruff ansible-lint

ruff: venv
	cd $(REPO) && $(VENV)/bin/ruff check $(PY_DIRS)
	cd $(REPO) && $(VENV)/bin/ruff format --check $(PY_DIRS)

ansible-lint: collection-root
	cd $(REPO) && ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) $(VENV)/bin/ansible-lint --profile production

sanity: sanity-root
	@mkdir -p $(dir $(GET_PIP_CACHE))
	@cp $(REPO)/tests/sanity/get_pip_standin.py $(GET_PIP_CACHE)
	cd $(SANITY_ROOT) && $(VENV)/bin/ansible-test sanity --venv --python 3.11 --color no $(SANITY_ARGS)

units: collection-root sim-binaries
	@if [ -d $(REPO)/tests/unit ]; then \
		cd $(REPO) && $(ANSIBLE_ENV) $(VENV)/bin/python -m pytest tests/unit -p no:cacheprovider -q; \
	else echo "units: tests/unit does not exist yet, nothing to run"; fi

# Two pytest-xdist workers, each with its own beds: a spec spends about half its time waiting on the bed, so two
# share the 2 cores of CI. Each worker runs whole groups in collection order (tests/integration/conftest.py,
# worker_group); INTEGRATION_WORKERS=0 runs the suite in one process.
INTEGRATION_WORKERS ?= 2
integration: collection-root sim-binaries nvml prometheus chromium
	@if [ -d $(REPO)/tests/integration ]; then \
		cd $(REPO) && $(ANSIBLE_ENV) $(VENV)/bin/python -m pytest tests/integration -p no:cacheprovider -q --durations=40 \
			-n $(INTEGRATION_WORKERS) --no-loadscope-reorder; \
	else echo "integration: tests/integration does not exist yet, nothing to run"; fi

# Role scenarios share the `default` scenario's control plane (extensions/molecule/config.yml). Molecule finds that
# shared config by itself only when run from a collection root, and the scenarios are run from extensions/, so -c names it.
MOLECULE_SCENARIOS = $(filter-out default,$(notdir $(patsubst %/molecule.yml,%,$(wildcard $(REPO)/extensions/molecule/*/molecule.yml))))
molecule: collection-root sim-binaries
	@if [ -n "$(MOLECULE_SCENARIOS)" ]; then \
		cd $(REPO)/extensions && $(ANSIBLE_ENV) $(VENV)/bin/molecule -c molecule/config.yml test --all; \
	else echo "molecule: no role scenarios exist yet (only extensions/molecule/default), nothing to run"; fi

changelog-lint: venv
	cd $(REPO) && $(VENV)/bin/antsibull-changelog lint

build: venv
	@mkdir -p $(BUILD)
	cd $(REPO) && $(VENV)/bin/ansible-galaxy collection build --force --output-path $(BUILD) .

# Install the tarball (not the checkout) into a scratch path and render every module's documentation.
doc-check: build
	@rm -rf $(BUILD)/doc-check
	@cd $(REPO) && $(VENV)/bin/ansible-galaxy collection install --offline --no-deps --force \
		-p $(BUILD)/doc-check $(TARBALL) >$(BUILD)/doc-check.log 2>&1 || { cat $(BUILD)/doc-check.log; exit 1; }
	@ln -sfn $(K8S_CORE) $(BUILD)/doc-check/ansible_collections/kubernetes/core 2>/dev/null || \
		{ mkdir -p $(BUILD)/doc-check/ansible_collections/kubernetes && ln -sfn $(K8S_CORE) $(BUILD)/doc-check/ansible_collections/kubernetes/core; }
	@cd $(BUILD) && modules=$$(ls $(REPO)/plugins/modules/*.py 2>/dev/null | xargs -r -n1 basename | sed 's/\.py$$//'); \
	if [ -z "$$modules" ]; then echo "doc-check: no modules yet"; exit 0; fi; failed=0; \
	for m in $$modules; do \
		if ANSIBLE_COLLECTIONS_PATH=$(BUILD)/doc-check ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false \
			$(VENV)/bin/ansible-doc gpuops.gpu_operator.$$m >$(BUILD)/doc-check/$$m.txt 2>&1 \
			&& ! grep -q '^\[WARNING\]\|^ERROR' $(BUILD)/doc-check/$$m.txt; then \
			echo "doc-check: gpuops.gpu_operator.$$m renders"; \
		else echo "doc-check: gpuops.gpu_operator.$$m FAILED:"; cat $(BUILD)/doc-check/$$m.txt; failed=1; fi; \
	done; \
	for c in $$(ls $(REPO)/plugins/callback/*.py 2>/dev/null | xargs -r -n1 basename | sed 's/\.py$$//'); do \
		if ANSIBLE_COLLECTIONS_PATH=$(BUILD)/doc-check ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false \
			$(VENV)/bin/ansible-doc -t callback gpuops.gpu_operator.$$c >$(BUILD)/doc-check/callback-$$c.txt 2>&1 \
			&& ! grep -q '^\[WARNING\]\|^ERROR' $(BUILD)/doc-check/callback-$$c.txt; then \
			echo "doc-check: callback gpuops.gpu_operator.$$c renders"; \
		else echo "doc-check: callback gpuops.gpu_operator.$$c FAILED:"; cat $(BUILD)/doc-check/callback-$$c.txt; failed=1; fi; \
	done; exit $$failed

# The execution environment's build context in build/ee (`ansible-builder create`: no container engine needed).
# The definition's dependency files are named relative to the collection root (as ansible-builder's introspection
# reads them from an installed collection), so ansible-builder gets a copy of the definition next to a copy of meta/.
EE_SRC := $(BUILD)/ee-src
EE_CONTEXT := $(BUILD)/ee
# The collection goes in from its own tarball (`make build`), next to the definition in collection/.
ee: build
	@rm -rf $(EE_SRC) $(EE_CONTEXT) && mkdir -p $(EE_SRC)/meta $(EE_SRC)/collection
	@cp $(REPO)/meta/execution-environment.yml $(EE_SRC)/ && cp $(REPO)/meta/ee-* $(EE_SRC)/meta/
	@cp $(TARBALL) $(EE_SRC)/collection/
	$(VENV)/bin/ansible-builder create --file $(EE_SRC)/execution-environment.yml --context $(EE_CONTEXT) \
		--output-filename Containerfile
	@echo "ee: build the image with: podman build -t gpuops-ee:$(VERSION) $(EE_CONTEXT)"

# Runs every stage in order, stops at the first failure naming it, prints each stage's seconds.
TEST_STAGES ?= lint sanity units doc-check changelog-lint ee integration molecule
test: venv
	@passed=0; total=$$(date +%s); \
	for stage in $(TEST_STAGES); do \
		echo "=== stage $$stage ==="; start=$$(date +%s); \
		if $(MAKE) --no-print-directory $$stage; then \
			passed=$$((passed + 1)); echo "=== stage $$stage passed in $$(( $$(date +%s) - start ))s ==="; \
		else \
			echo "=== stage $$stage FAILED after $$(( $$(date +%s) - start ))s; later stages not run ==="; \
			echo "$$passed passed, 1 failed"; exit 1; \
		fi; \
	done; \
	echo "all stages passed in $$(( $$(date +%s) - total ))s"; \
	echo "$$passed passed, 0 failed"

# --- the main job -------------------------------------------------------------------------------------
# SITE_PROFILE=demo-faults breaks three nodes (toolkit, device plugin, GPU health); `make site-down` first.
SITE_PROFILE ?= demo
site: collection-root site-binaries nvml
	cd $(REPO) && $(VENV)/bin/python -m tests.sim up --profile $(SITE_PROFILE)
	cd $(REPO) && $(VENV)/bin/python -m tests.sim inventory > $(BUILD)/inventory.yml
	cd $(REPO) && $(PLAYBOOK_ENV) $(VENV)/bin/ansible-playbook -i $(BUILD)/inventory.yml playbooks/site.yml \
		-e gpu_nvml_library=$(BUILD)/nvml/libnvidia-ml.so.1 -e gpuops_report_dir=$(BUILD)/reports

# The audit needs the operator installed (the simulated operator only advertises GPUs then), so it runs
# after site; the overlay inventory adds degraded, lost and aged GPUs and one unreachable host.
audit: site
	cd $(REPO) && $(PLAYBOOK_ENV) $(VENV)/bin/ansible-playbook -i $(BUILD)/inventory.yml \
		-i $(REPO)/tests/integration/audit/demo-faults.yml playbooks/audit.yml \
		-e gpu_nvml_library=$(BUILD)/nvml/libnvidia-ml.so.1 -e gpu_audit_report_dir=$(BUILD)/reports/audit

# The canary upgrade on the demo cluster, the commands of docs/canary-upgrade.md ("Try it on the demo cluster") as
# written: a driver upgrade the gate must refuse before any write (the demo's drivers are preinstalled), the status,
# a chart upgrade in proven waves, the status, and the rollback to where it started (so it can run again).
canary-demo: site
	cd $(REPO) && export $(PLAYBOOK_ENV) && \
	if ansible-playbook -i build/inventory.yml playbooks/upgrade.yml -e gpu_nvml_library=build/nvml/libnvidia-ml.so.1 -e gpu_canary_upgrade_driver_version=610.57.04 -e '{"gpu_canary_upgrade_canary_nodes": ["h100-0", "a100-0"]}'; then \
		echo "canary-demo: the gate should have refused the driver upgrade on preinstalled drivers"; exit 1; fi && \
	echo "canary-demo: the driver upgrade was refused before any write, as expected" && \
	ansible-playbook -i build/inventory.yml playbooks/upgrade.yml -e gpu_canary_upgrade_action=status && \
	ansible-playbook -i build/inventory.yml playbooks/upgrade.yml -e gpu_nvml_library=build/nvml/libnvidia-ml.so.1 -e gpu_canary_upgrade_chart_version=v26.7.1 -e '{"gpu_canary_upgrade_canary_nodes": ["h100-0", "a100-0"], "gpu_canary_upgrade_chart_values": {"devicePlugin": {"version": "v0.20.1"}}}' && \
	ansible-playbook -i build/inventory.yml playbooks/upgrade.yml -e gpu_canary_upgrade_action=status && \
	ansible-playbook -i build/inventory.yml playbooks/upgrade.yml -e gpu_canary_upgrade_action=rollback

site-down: venv
	cd $(REPO) && $(VENV)/bin/python -m tests.sim down

bench: collection-root sim-binaries nvml
	@shopt -s nullglob; scripts=($(REPO)/bench/*.py); \
	if [ $${#scripts[@]} -eq 0 ]; then echo "bench: no benchmarks yet"; exit 0; fi; \
	for script in "$${scripts[@]}"; do \
		echo "=== bench $$(basename $$script) ==="; \
		(cd $(REPO) && $(ANSIBLE_ENV) $(VENV)/bin/python $$script); \
	done

clean:
	rm -rf $(BUILD)/ansible-test $(BUILD)/doc-check $(BUILD)/*.tar.gz $(REPO)/tests/output
