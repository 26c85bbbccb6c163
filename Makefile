# Makefile: the project's front door. `make run` and `make test` work on a
# fresh Debian machine: they call scripts/setup.sh, which installs what is
# missing when run as root (`make run` only what the demo needs, `make test`
# everything) and otherwise prints the line to run. See README.md for every
# target and variable.

SHELL := /bin/bash
CARGO ?= cargo

# Where cargo puts its output (honours CARGO_TARGET_DIR like cargo does).
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)

# The kernel: one command builds it; everything boots this ELF.
KERNEL_TARGET := x86_64-unknown-none
KERNEL_BUILD := $(CARGO) build --release -p kernel --target $(KERNEL_TARGET)
KERNEL_ELF := $(TARGET_DIR)/$(KERNEL_TARGET)/release/kernel

# Host side: the default workspace members (fs, bench, qemu).
HOST_BUILD := $(CARGO) build --release
QEMU_RUN := $(TARGET_DIR)/release/qemu-run
QEMU_RUN_BUILD := $(CARGO) build --release -p qemu --bin qemu-run

# `make boot` settings (override on the command line: make boot SMP=8 CMDLINE=selftest).
SMP ?= 4
MEM ?= 512M
CMDLINE ?= selftest
ACCEL ?= auto
TIMEOUT ?= 600
QEMU_RUN_FLAGS = --mem $(MEM) --accel $(ACCEL) --timeout $(TIMEOUT)

# `make run`: the default demo: statneg per ENOENT design, one result table.
DEMO_CMDLINE ?= demo=table
# vCPUs: 4, or the host's cores if fewer (more vCPUs than cores time the
# host's scheduler; `make run DEMO_SMP=8` still works and says so).
DEMO_SMP ?= $(shell n=$$(nproc 2>/dev/null || echo 4); echo $$(( n < 4 ? n : 4 )))

# `make test`: QEMU boot tests of `selftest` at these vCPU counts.
BOOT_TEST_SMPS ?= 1 2 8 64
BOOT_TEST_TIMEOUT ?= 300

# `make bench`: arguments for `bench sweep` (see `cargo run -p benchlab -- sweep --help`).
BENCH_ARGS ?=
# ENOENT designs for `bench` (comma-separated; empty: every design of
# fs::dcache::design::DESIGNS).
DESIGNS ?=

.PHONY: help setup setup-run build build-host build-kernel build-qemu-run run test test-host test-loom test-boot boot vfsstress linux-check \
        bench smb-bench eacache-check demo-trace linuxref linux-patched linux-boots linux-patched-build linux-oracle linux-vfsh linux-walks linux-fstests test-fstests lint explore bench-static test-kvm test-designs \
        test-generated generated negcost fidelity

help:
	@echo "make setup      install what make test needs (as root; packages, rust target and components, impacket)"
	@echo "make setup-run  install only what make run needs (as root; QEMU, gcc, libc6-dev, the rust target)"
	@echo "make build      build host crates and the kernel (release)"
	@echo "make run        setup-run + build + boot the demo (DEMO_CMDLINE='$(DEMO_CMDLINE)', DEMO_SMP=$(DEMO_SMP))"
	@echo "make test       setup + host tests (the kernel's library included) + loom models + QEMU boot tests at $(BOOT_TEST_SMPS) vCPUs"
	@echo "make test-loom  the loom models only (fs/tests/loom.rs, fs/tests/loom_rcu.rs, fs/tests/loom_host_rcu.rs)"
	@echo "make vfsstress  walks while the tree moves and mounts come and go, VFSSTRESS_SECS=$(VFSSTRESS_SECS) s per design (fs/tests/vfsstress.rs)"
	@echo "make test-generated  generated files in git equal what their command makes; docs links resolve"
	@echo "make test-fstests  the fstests smoke: generic/023-025 on tmpfs in the 6.12 guest (not in make test)"
	@echo "make test-kvm   the KVM smoke plus selftest under --accel kvm (skips listed with reasons; where /dev/kvm opens)"
	@echo "make boot       boot once: SMP=$(SMP) MEM=$(MEM) CMDLINE='$(CMDLINE)' ACCEL=$(ACCEL) TIMEOUT=$(TIMEOUT)"
	@echo "make bench      the design sweep (DESIGNS='$(DESIGNS)': ENOENT designs, comma-separated, empty = all; BENCH_ARGS='$(BENCH_ARGS)')"
	@echo "make smb-bench  the SMB sweep (SMB_DESIGNS='$(SMB_DESIGNS)': EA-cache designs, empty = all; SMB_ARGS='$(SMB_ARGS)')"
	@echo "make eacache-check  EAs answered as absent, per server (Samba, ksmbd guest, impacket) and EA-cache design"
	@echo "make bench-static  a statically linked bench binary ($(BENCH_STATIC)) for bare machines"
	@echo "make demo-trace boot with demo=trace (one traced stat per design)"
	@echo "make linuxref   build the Linux reference guest and run statneg at 1 and 2 vCPUs (LINUX_RELEASE=$(LINUX_RELEASE): 6.12 or 7.3)"
	@echo "make linux-check    every release's patch series apply and what they touch compiles, the 6.12 cifs module boots (make test: the newest release)"
	@echo "make linux-patched  build our kernels of LINUX_RELEASE (vanilla, negative, noalloc) and count them beside Debian's"
	@echo "make linux-boots    boot each kernel's counting guest LINUX_BOOTS times at 2 vCPUs: how often it crashes"
	@echo "make linux-oracle   the dcache stress oracle on tmpfs, ext4 and ramfs on each patched kernel (and on the broken ones), then RESOLVE_CACHED of a missing name"
	@echo "make linux-vfsh     the Linux half of the vfsh scripts under Debian's kernel and each of ours"
	@echo "make fidelity   the prototype's design ratios beside Linux 7.3.4's, 1 and 2 vCPUs, interleaved rounds (FIDELITY_ARGS)"
	@echo "make negcost    negative dentries' cost: readdir, rmdir, dentries, locked stretch per kernel/design (NEGCOST_ARGS)"
	@echo "make linux-walks    ftrace of one stat per case in Linux (Debian's and our builds) into docs/explore/linux/"
	@echo "make linux-fstests  fstests in the reference guest (LINUX_FSTESTS_ARGS: kernels, filesystems, group or list)"
	@echo "make lint       rustfmt check + clippy (host crates and kernel) with -D warnings"
	@echo "make explore    regenerate docs/explore/index.html (the step-through page) and its screenshot"
	@echo "make generated  regenerate every file test-generated checks (the explore page, docs/bench's report and plot)"

# Two tiers of one script: `run` (what the demo needs) and `test` (all).
setup:
	@bash scripts/setup.sh test

setup-run:
	@bash scripts/setup.sh run

build-host:
	$(HOST_BUILD)

build-kernel:
	$(KERNEL_BUILD)

build-qemu-run:
	$(QEMU_RUN_BUILD)

build: build-host build-kernel

run: setup-run build
	$(QEMU_RUN) --kernel $(KERNEL_ELF) --smp $(DEMO_SMP) --cmdline "$(DEMO_CMDLINE)" $(QEMU_RUN_FLAGS)

# Only what booting needs, so a boot works while other host crates are broken.
boot: build-qemu-run build-kernel
	$(QEMU_RUN) --kernel $(KERNEL_ELF) --smp $(SMP) --cmdline "$(CMDLINE)" $(QEMU_RUN_FLAGS)

# REQUIRE_FIXTURES=1: a test whose fixture (root, Samba, QEMU, the kernel
# image) is missing fails with the reason instead of skipping (qemu::fixtures).
# The root workspace's default members leave the kernel out (its binary
# builds only for $(KERNEL_TARGET)), so its hardware-free library (the
# command-line parser, the SMB mount arguments) is tested here on the host,
# unit tests and the cmdline fuzz replay (kernel/src/fuzz_cmdline/replay.rs).
test-host:
	REQUIRE_FIXTURES=1 $(CARGO) test --release --no-fail-fast
	$(CARGO) test --release -p kernel --lib

# The loom models of fs/src/sync (both RCUs: loom_rcu; host mode's grace periods without
# membarrier: loom_host_rcu) and of the noalloc race. `--cfg loom`
# rebuilds the dependencies, so it gets its own target directory.
test-loom:
	RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=$(TARGET_DIR)/loom $(CARGO) test --release -p fs --test loom --test loom_rcu --test loom_host_rcu

# vfsstress (fs/tests/vfsstress.rs) minutes long: VFSSTRESS_SECS per ENOENT
# design (VFSSTRESS_DESIGNS: comma-separated, empty = all); `make test` runs
# it 1.5 s per design. Prints one line per design,
#   vfsstress design=D secs=S ops=N lost=0 wrong=0 leaked_mounts=0
# and on a failure the end of the log (kept in $(TARGET_DIR)/vfsstress.log).
VFSSTRESS_SECS ?= 60
VFSSTRESS_DESIGNS ?=
vfsstress:
	@echo "vfsstress: $(VFSSTRESS_SECS) s per design (build, then run; log: $(TARGET_DIR)/vfsstress.log)"
	@mkdir -p $(TARGET_DIR); log=$(TARGET_DIR)/vfsstress.log; \
	FS_VFSSTRESS_SECS=$(VFSSTRESS_SECS) $(if $(VFSSTRESS_DESIGNS),FS_VFSSTRESS_DESIGNS=$(VFSSTRESS_DESIGNS)) \
	  $(CARGO) test --release -p fs --test vfsstress -- --nocapture >$$log 2>&1; rc=$$?; \
	grep '^vfsstress ' $$log; \
	if [ $$rc -ne 0 ]; then tail -n 40 $$log; echo "vfsstress: FAILED (exit $$rc; log: $$log)"; fi; \
	exit $$rc

# A design added as docs/designs.md says (fs feature test-design) must be
# taken by every surface and run by every per-design test; own target dir.
test-designs: build-qemu-run
	REQUIRE_FIXTURES=1 TARGET_DIR=$(TARGET_DIR) bash scripts/design-check.sh $(QEMU_RUN)

# `selftest` under `--accel kvm` on 2 vCPUs and `demo=table` under KVM
# (qemu/tests/guest_kvm.rs): passed or skipped with the kernel's reason, none
# failed. Not in `make test`: under the instruction-emulating /dev/kvm of our
# test machines they take 80-120 s each (make test runs the 1-vCPU selftest
# under KVM only).
test-kvm: build-kernel
	REQUIRE_FIXTURES=1 $(CARGO) test --release -p qemu --test guest_kvm -- --include-ignored

test-boot: build-qemu-run build-kernel
	bash scripts/boot-tests.sh $(QEMU_RUN) $(KERNEL_ELF) "$(BOOT_TEST_SMPS)" \
		--mem $(MEM) --accel $(ACCEL) --timeout $(BOOT_TEST_TIMEOUT)

# In order: the kernel first (host tests boot it: the guest benchmark smoke,
# the guest SMB mount), the host tests' build, then the host tests, with
# test-loom's and test-designs' builds beside them at a lower priority in
# their own target directories (guest boots and fixtures leave a core idle
# much of the time; output in $(TARGET_DIR)/test-prebuild.log, and the
# targets later find them built), then the rest, the boot tests last (their
# summary line `N passed, M failed` closes the output). test-generated runs
# the explore and bench binaries the host tests built (cargo run -p fstools
# or -p benchlab resolves other features for fs and builds it all again).
# fstests runs are not in it (`make test-fstests`): only fstests-smoke.sh's
# checks that need no guest (--compare, the crash reader).
test: setup
	$(MAKE) --no-print-directory build-kernel build-qemu-run
	REQUIRE_FIXTURES=1 $(CARGO) test --release --no-run
	@mkdir -p $(TARGET_DIR); log=$(TARGET_DIR)/test-prebuild.log; \
	{ RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=$(TARGET_DIR)/loom nice -n 10 $(CARGO) test --release -p fs --test loom --test loom_rcu --test loom_host_rcu --no-run && \
	  TARGET_DIR=$(TARGET_DIR) nice -n 10 bash scripts/design-check.sh --build-only; } >$$log 2>&1 & pid=$$!; \
	$(MAKE) --no-print-directory test-host; rc=$$?; \
	if wait $$pid; then echo "test: test-loom's and test-designs' builds done beside the host tests (log: $$log)"; \
	else tail -n 40 $$log; echo "test: test-loom's or test-designs' build FAILED (log: $$log)"; rc=1; fi; \
	exit $$rc
	$(MAKE) --no-print-directory test-generated EXPLORE_RUN=$(TARGET_DIR)/release/explore BENCH_RUN=$(TARGET_DIR)/release/bench
	$(MAKE) --no-print-directory test-loom
	$(MAKE) --no-print-directory test-designs
	bash linux/fstests-smoke.sh --no-guest
	$(MAKE) --no-print-directory test-boot

# The design sweep, then the SMB section (`smb-bench`).
bench: build
	$(CARGO) run --release -p benchlab --bin bench -- sweep $(if $(DESIGNS),--designs $(DESIGNS)) $(BENCH_ARGS)
	$(CARGO) run --release -p benchlab --bin bench -- smb-sweep

# A `bench` that runs on a bare x86_64 Linux machine with nothing installed
# (glibc linked in statically): copy it over and run e.g.
#   ./bench predict --validate --out pred && ./bench sweep --sources host --cpus 1,2,4,8,16
# `ldd` on it says "not a dynamic executable".
HOST_TRIPLE := x86_64-unknown-linux-gnu
BENCH_STATIC := $(TARGET_DIR)/static/$(HOST_TRIPLE)/release/bench
bench-static:
	RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static" CARGO_TARGET_DIR=$(TARGET_DIR)/static \
	  $(CARGO) build --release -p benchlab --bin bench --target $(HOST_TRIPLE)
	@file $(BENCH_STATIC) | grep -qE "statically linked|static-pie linked" || { echo "bench-static: $(BENCH_STATIC) is not static"; exit 1; }
	@echo "$(BENCH_STATIC): $$(ldd $(BENCH_STATIC) 2>&1 | tr -d '\t')"

# EA-cache designs for `smb-bench` (empty: every design of
# fs/src/fstype/cifs/eacache.rs) and further `bench smb-sweep` flags.
SMB_DESIGNS ?=
SMB_ARGS ?=
smb-bench: build
	$(CARGO) run --release -p benchlab --bin bench -- smb-sweep $(SMB_DESIGNS) $(SMB_ARGS)

# `make eacache-check`: per server (Samba, ksmbd in a QEMU guest, impacket)
# and EA-cache design, EAs answered as absent and round trips of `ls -la`
# (fs/tests/eacache_check.rs; `make test` runs the same test, and of the
# Linux client's lines only Samba's). One line each:
#   eacache-check server=S client=proto|linux-7.3.4|linux-7.3.4-eacache design=D default=yes|no hidden=H stale_after_set=S lsla_rt_cold=C lsla_rt_warm=W
# (the linux-* lines: the 7.3 reference guest's cifs.ko, packaged and with
# linux/patches/7.3/cifs-eacache, qemu/tests/linuxref_eacache_check.rs)
# and ksmbd's EaSize per entry and class (`ksmbd-easize`), the forced
# race (`eacache-race`), two live inodes of one directory (`eacache-twin`)
# and of one file (`eacache-ctime`), a setxattr before a rewind
# (`eacache-rewind`), a server refusing an EA query (`eacache-deny`)
# and a reconnect between two listings (`eacache-reconnect`); log in
# $(TARGET_DIR)/eacache-check.log.
eacache-check:
	@mkdir -p $(TARGET_DIR); log=$(TARGET_DIR)/eacache-check.log; \
	{ REQUIRE_FIXTURES=1 $(CARGO) test --release -p fs --test eacache_check -- --nocapture --test-threads=1 && \
	  REQUIRE_FIXTURES=1 $(CARGO) test --release -p qemu --test linuxref_eacache_check -- --nocapture --test-threads=1 --include-ignored --skip seed_share_round_trips; } >$$log 2>&1; rc=$$?; \
	grep -oE '(eacache-check|eacache-race|eacache-twin|eacache-deny|eacache-rewind|eacache-ctime|eacache-reconnect|ksmbd-easize) .*' $$log; \
	if [ $$rc -ne 0 ]; then tail -n 40 $$log; echo "eacache-check: FAILED (exit $$rc; log: $$log)"; fi; \
	exit $$rc

demo-trace: build-qemu-run build-kernel
	$(QEMU_RUN) --kernel $(KERNEL_ELF) --smp $(SMP) --cmdline "demo=trace" $(QEMU_RUN_FLAGS)

# The step-through page of the lookup walk: every scenario of
# fs/tools/src/explore/scenarios.rs through the vfsh engine, with Linux's
# walks of docs/explore/linux/ beside them, into one self-contained HTML
# file; then (with Chromium) the screenshots the README and
# docs/lookup-path.md show: SHOT=FILE:WIDTHxHEIGHT:ANCHOR each.
EXPLORE_SHOTS := docs/explore/screenshot.png:1280x1280:race-rename@9 \
	docs/explore/linux-transient.png:1280x2000:transient@14:linux=debian-6.12.117 \
	docs/explore/linux-negative.png:1280x1100:negative@10:linux \
	docs/explore/linux-noalloc.png:1280x1000:noalloc@10:linux
EXPLORE_RUN := $(CARGO) run --release -p fstools --bin explore --
explore:
	$(EXPLORE_RUN) --out docs/explore/index.html
	@if command -v chromium >/dev/null; then \
		for s in $(EXPLORE_SHOTS); do \
			f=$${s%%:*}; r=$${s#*:}; size=$${r%%:*}; anchor=$${r#*:}; \
			prof=$$(mktemp -d); \
			chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
				--disable-background-networking --disable-component-update --disable-sync \
				--user-data-dir=$$prof --hide-scrollbars --window-size=$${size/x/,} --virtual-time-budget=3000 \
				--screenshot=$$f "file://$(CURDIR)/docs/explore/index.html#$$anchor" 2>/dev/null; \
			rm -rf $$prof; echo "explore: wrote $$f"; \
		done; \
	else echo "explore: no chromium (make setup): $(EXPLORE_SHOTS) not refreshed"; fi

# Which Linux release every Linux-facing target uses: 6.12 (the default: the
# seed's kernel line, RHEL 10's base; Debian 13) or 7.3 (mainline's line;
# Debian 13's trixie-backports), both through private apt lists under build/;
# `linuxref` also takes 6.1 (the machine's Debian 12). LINUX= is the older name.
LINUX_RELEASE ?= $(or $(LINUX),6.12)
# `make linux-oracle` without LINUX_RELEASE checks every patched release.
LINUX_ORACLE_RELEASES := $(if $(filter command line environment,$(origin LINUX_RELEASE) $(origin LINUX)),$(LINUX_RELEASE),6.12 7.3)

linuxref: build-host
	$(TARGET_DIR)/release/linuxref --cpus 1,2 --linux-release $(LINUX_RELEASE)

# Our kernel builds of the release (linux/kbuild.sh: vanilla and each series
# of linux/patches/$(LINUX_RELEASE)/, built when missing: 16-20 min the first
# time on 2 idle cores, over an hour on a loaded machine; 1-2 min after a
# patch changed) beside Debian's, booted with the same reference guest: one
# `linuxpatch kernel=K fs=F vcpus=N ...` line each (K: 6.12.117-VARIANT,
# 7.3.4-VARIANT).
LINUX_PATCHED_ARGS ?=
linux-patched: build-host
	$(TARGET_DIR)/release/linux-patched --linux-release $(LINUX_RELEASE) $(LINUX_PATCHED_ARGS)

# How often each kernel's counting guest crashes (docs/linux-guest-crash.md):
# LINUX_BOOTS boots per kernel at 2 vCPUs, no retries, one `linuxboot
# kernel=K vcpus=2 boots=B finished=F crashed=C other=O` line each
# (LINUX_PATCHED_ARGS="--kernels debian" for Debian's kernel alone).
LINUX_BOOTS ?= 30
linux-boots: build-host
	$(TARGET_DIR)/release/linux-patched --linux-release $(LINUX_RELEASE) --cpus 2 --boots $(LINUX_BOOTS) $(LINUX_PATCHED_ARGS)

# The dcache stress oracle, 60 s on 2 vCPUs per kernel on tmpfs, ext4 and
# ramfs (0 wrong answers), for vanilla, negative, noalloc and the
# deliberately broken variants of each release (they must fail where they
# are broken: noalloc-broken on tmpfs, 7.3's noalloc-flag-collision on
# ext4); then, per kernel, the case-folding check and openat2(RESOLVE_CACHED)
# of a missing name on each filesystem and devtmpfs (`linuxcached`: ENOENT
# where the miss is final, noalloc's tmpfs, ramfs and devtmpfs; EAGAIN
# elsewhere).
linux-oracle: build-host
	set -e; for r in $(LINUX_ORACLE_RELEASES); do \
		$(TARGET_DIR)/release/linux-patched --linux-release $$r --fs tmpfs,ext4,ramfs --cpus 2 --oracle 60; \
	done

# The Linux half of the vfsh scripts (fs/tools/tests/scripts) in the reference
# guest under Debian's kernel and each of ours: the same answers as recorded.
linux-vfsh: linux-patched-build
	bash linux/vfsh-guest.sh $(LINUX_RELEASE)

# Linux's own walk of the step-through page's stats: ftrace's function
# graph of one warm stat per case (qemu/linuxref/walks.sh) under Debian's
# 6.12 and 7.3 kernels and those of our builds that exist (nothing is built
# here), one JSON per kernel and case into docs/explore/linux/; then
# `make explore` puts them on the page.
LINUX_WALKS_ARGS ?= --linux 6.12,7.3
linux-walks: build-host
	$(TARGET_DIR)/release/linux-walks $(LINUX_WALKS_ARGS)

# fstests (xfstests) in the reference guest, one line per kernel x
# filesystem x group (linux/fstests.sh --help; FSTESTS_SRC=DIR|TARBALL names
# fstests' source). The default: the lookup-path list on tmpfs under
# Debian's 6.12.
LINUX_FSTESTS_ARGS ?= --kernels debian --fs tmpfs --list linux/fstests/lookup.list --exclude linux/fstests/long.exclude
linux-fstests: build-host
	$(TARGET_DIR)/release/linuxref --build-only
	bash linux/fstests.sh $(LINUX_FSTESTS_ARGS)

# The fstests smoke of `make test`: three quick tmpfs tests under Debian's
# 6.12 must run and pass (skipped, saying what to fetch, without fstests).
test-fstests: build-host
	$(TARGET_DIR)/release/linuxref --build-only
	bash linux/fstests-smoke.sh

# Negative dentries' cost (issue 50): N distinct missing names stat()ed in
# one tmpfs directory (N = 10^4, 10^5, 10^6), then that directory's readdir
# and rmdir timed, the dentries left and the longest stretch with its lock
# held, for the prototype's designs (host mode) and our 7.3.4 builds
# (vanilla, negative, noalloc: one 1-vCPU guest boot each, nothing built),
# one line each:
#   negcost kernel=K|proto design=D names=N ls_ms=… rmdir_ms=… dentries=… max_locked_us=…
NEGCOST_ARGS ?=
negcost:
	$(CARGO) build --release -p benchlab --bin negcost
	$(TARGET_DIR)/release/negcost $(NEGCOST_ARGS)

# The prototype's verdict beside Linux's (issue 52, docs/bench/fidelity.md):
# statneg (frontend=stat) per design in our guest and in the 7.3.4 reference
# guest (vanilla, negative, noalloc: built by `make linux-patched-build
# LINUX_RELEASE=7.3`, not here), both under TCG, at 1 and 2 vCPUs, rounds
# interleaved; one line per pair and CPU count,
#   fidelity design=D linux=K vcpus=N proto_ratio=X linux_ratio=Y error_pct=E rank_agrees=yes|no
# with and without the guest's syscall constant (a getppid loop in the
# Linux guests), both guests on -cpu qemu64; Linux's per-op counters from a
# probed window in the same boot, with its rate beside the timed one's; then
# host mode beside host Linux natively (transient <-> /dev/shm tmpfs,
# negative <-> an ext4 directory), ops/s:
#   fidelity design=D linux=host-FS vcpus=N proto_ops=X linux_ops=Y error_pct=E
# The Linux kernels and the 7.3 reference guest come from
# `linux-patched-build LINUX_RELEASE=7.3` (built where missing, first).
# FIDELITY_ARGS: `bench fidelity --help`.
FIDELITY_ARGS ?=
fidelity: build-kernel build-qemu-run
	$(MAKE) --no-print-directory linux-patched-build LINUX_RELEASE=7.3
	$(CARGO) run --release -p benchlab --bin bench -- fidelity $(FIDELITY_ARGS)

# The Linux patch check of every release (qemu/tests/linux_patches.rs with its
# ignored test: each release's series apply and every C file they touch
# compiles, W=1 and sparse add no warning), then the 6.12 cifs series'
# module in the 6.12 guest (qemu/tests/linuxref_cifs_eacache.rs); `make test`
# checks the newest release's series only, and boots the 7.3 series' module.
linux-check:
	REQUIRE_FIXTURES=1 $(CARGO) test --release -p qemu --test linux_patches --test linuxref_cifs_eacache -- --include-ignored

linux-patched-build: build-host
	$(TARGET_DIR)/release/linux-patched --linux-release $(LINUX_RELEASE) --build-only

# Files in git that a command makes from committed inputs (the explore page;
# docs/bench's report.md and scaling.svg from its raw.csv and predict.csv)
# must equal what the command makes now; `generated` rewrites them. Then
# every relative link of README.md and docs/ must resolve, and
# docs/mount-options.md must list every cifs option without effect.
BENCH_RUN := $(CARGO) run --release -p benchlab --bin bench --
test-generated:
	EXPLORE_RUN="$(EXPLORE_RUN)" BENCH_RUN="$(BENCH_RUN)" bash scripts/generated-check.sh
	bash scripts/doc-links.sh
	OPTIONS_RUN="$(CARGO) run --release -q -p fstools --example cifs-no-effect" bash scripts/mount-options-check.sh

generated:
	EXPLORE_RUN="$(EXPLORE_RUN)" BENCH_RUN="$(BENCH_RUN)" bash scripts/generated-check.sh --write

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --release --all-targets -- -D warnings
	$(CARGO) clippy --release -p kernel --target $(KERNEL_TARGET) -- -D warnings
