# Haul: `make demo` and `make test` are the two commands of the README.
SWIFT ?= swift
# What the build, the tests and the demo need from Debian/Ubuntu. curl, wget2 and aria2 are the peers the
# sample-server tests download with; tmux runs the TUI end-to-end tests; GNU time measures peak memory;
# libsqlite3-dev is the SQLite that GRDB (the service's store) links; openssl makes the tests' certificate
# authorities, tinyproxy is the proxy the --proxy tests go through and nginx the HTTPS server with HTTP/2.
# pkg-config gives the build libchafa's and GLib's include directories (Package.swift). libxml2-dev is the
# metalink parser's (Sources/CXML2, loaded when a metalink is first read). vsftpd is the FTP and FTPS server,
# openssh-server's sshd the SFTP and SCP server the ftp:// and sftp:// tests download from; openssh-client's
# ssh-keygen makes their host and client keys. libtorrent-rasterbar-dev is the BitTorrent engine haul links
# (Sources/CTorrent); opentracker is the tracker and transmission-cli's transmission-create makes the .torrent
# files of the torrent tests' loopback swarm (aria2c seeds it).
APT_PACKAGES := libcurl4-openssl-dev libssl-dev libncurses-dev libjpeg-dev libsqlite3-dev libxxhash-dev libchafa-dev libglib2.0-dev libpng-dev libxml2-dev pkg-config strace tmux curl wget2 aria2 time openssl tinyproxy nginx-light vsftpd openssh-server openssh-client libtorrent-rasterbar-dev opentracker transmission-cli
# The real aria2 clients the aria2 JSON-RPC tests drive (from PyPI, pinned), in a venv of their own.
VENV := .build-venv
PY_CLIENTS := aria2p[tui]==0.12.3 aioaria2==1.3.7

# `make install PREFIX=~/.local`: the binary, its man page (generated from the argument parser by
# swift-argument-parser's generate-manual tool) and bash, zsh and fish completions. CONFIG=debug skips
# the release build (for trying it out).
PREFIX ?= /usr/local
CONFIG ?= release
# A release binary carries the Swift runtime and Foundation inside it: no symbol lookups across a dozen
# Swift libraries at every start (about 5 ms of each haul process) and less mapped (see docs/benchmarks.md).
# Package.swift links it with the toolchain's lld and packed relative relocations (4-5 MiB less resident).
STATIC_FLAGS := $(if $(filter release,$(CONFIG)),--static-swift-stdlib,)
# Tells Package.swift that this build links the Swift libraries statically, so that it may name the static
# libFoundationEssentials.a first on `haul`'s link line (it cannot see the flag itself; any other build,
# a plain `swift build -c release` included, links as usual).
STATIC_ENV := $(if $(filter release,$(CONFIG)),HAUL_STATIC_STDLIB=1,)

# How many tests run at once. Unbounded, swift-testing starts the suite's 500 tests together on the machine's
# two cores: an in-process server then waits its turn for tens of seconds under the sanitizer (a CI run saw a
# listing miss a 15 s stall timeout). Eight at once takes the same time (plain 41 s against 46 s, TSan 197 s
# against 198 s) with a fraction of the waiting.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH ?= 8

# Extra flags for the test builds. CI passes TEST_BUILD_FLAGS="-Xswiftc -gnone" (no debug info: its clean
# builds are most of its time, and nobody attaches a debugger there); by hand they keep their debug info.
TEST_BUILD_FLAGS ?=

.PHONY: deps pydeps build release test test-tsan demo bench clean install install-check

deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "Installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	  else \
	    echo "Missing packages. Run:"; echo "  sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi

pydeps:
	@if ! $(VENV)/bin/python -c "import aria2p, aioaria2, asciimatics" 2>/dev/null; then \
	  echo "Installing into $(VENV): $(PY_CLIENTS)"; \
	  python3 -m venv $(VENV) && $(VENV)/bin/pip install -q --disable-pip-version-check $(PY_CLIENTS); \
	fi

build: deps
	$(SWIFT) build

# Our two products only: a bare `swift build -c release --static-swift-stdlib` also builds the dependencies'
# products, and GRDB's dynamic library cannot link against a static Foundation.
release: deps
	HAUL_STATIC_STDLIB=1 $(SWIFT) build -c release --static-swift-stdlib --product haul
	HAUL_STATIC_STDLIB=1 $(SWIFT) build -c release --static-swift-stdlib --product haul-server
	HAUL_STATIC_STDLIB=1 $(SWIFT) build -c release --static-swift-stdlib --product sample-server

# `swift test --skip-build` gets the build's flags and environment too, unused as they are there: SwiftPM keeps
# one evaluation of the package's manifests, keyed by both, and evaluates them again (8-17 s here) for a
# command whose flags or environment differ from the one before.
test: deps pydeps
	$(SWIFT) build --build-tests $(TEST_BUILD_FLAGS)
	$(SWIFT) test --skip-build $(TEST_BUILD_FLAGS) --skip CrashResumeTests
	# The crash-cost bounds count the bytes a server sent against kills at wall-clock moments: run alone, not
	# beside the rest of the suite on two cores (which would starve the killed process of its last writes).
	# Only those two cases: the repair tests (CrashRepairTests, exact byte counts) run with the rest, above.
	$(SWIFT) test --skip-build $(TEST_BUILD_FLAGS) --filter CrashResumeTests

# The whole suite under the thread sanitizer. HAUL_TSAN=1 builds our own modules with `-sanitize=thread` in the
# same build folder as `make test` (Package.swift, at its end): the dependencies are reused as that build left
# them, uninstrumented, so CI's sanitizer build compiles our modules alone (157 s instead of a clean build of
# everything, 490 s). The next `make test` builds our modules plain again. atexit_sleep_ms=0: the
# sanitizer's runtime otherwise sleeps a second at the exit of every process with threads (for them to
# report), and the suite starts haul hundreds of times: 265 s -> 210 s, with no race found either way.
#
# Every sanitized process (the test runner, each haul, haul-server and service it starts) writes its reports to
# a file of its own in TSAN_REPORTS (log_path, with the executable's name and pid): a haul a test started and
# that died with a report is otherwise seen only as a wrong exit status, its stderr gone with the test's
# temporary folder. A failed run prints every report; a passing one says how many processes left one (one is
# expected: TUITests.aCrashStillGivesTheTerminalBack sends the full screen a SIGSEGV, which the sanitizer
# reports as "SEGV on unknown address" in the main thread, the address being the pid that raised it).
TSAN_REPORTS := $(CURDIR)/.build/tsan-reports
TSAN_OPTIONS_ALL := halt_on_error=1 atexit_sleep_ms=0 suppressions=$(CURDIR)/Tests/tsan-suppressions.txt \
	log_path=$(TSAN_REPORTS)/report log_exe_name=1
TSAN_ENV := HAUL_TSAN=1 HAUL_SANITIZED=thread TSAN_OPTIONS="$(TSAN_OPTIONS_ALL)"
TSAN_SHOW_REPORTS := sh -c 'for f in $(TSAN_REPORTS)/report*; do [ -e "$$f" ] || continue; echo "== $$f"; cat "$$f"; done; exit 1'
# Suites of synchronous tests of pure functions (the screen's render and update, the parsers' fuzzing)
# run on one thread: the sanitizer has nothing to find there, and they were an eighth of its CPU. `make test`
# runs them.
TSAN_SKIP := HaulTUITests.RenderTests|HaulTUITests.UpdateTests|HaulCoreTests.FuzzTests
test-tsan: deps pydeps
	$(TSAN_ENV) $(SWIFT) build --build-tests $(TEST_BUILD_FLAGS)
	rm -rf $(TSAN_REPORTS) && mkdir -p $(TSAN_REPORTS)
	$(TSAN_ENV) $(SWIFT) test --skip-build $(TEST_BUILD_FLAGS) --skip CrashResumeTests --skip '$(TSAN_SKIP)' \
		|| $(TSAN_SHOW_REPORTS)
	$(TSAN_ENV) $(SWIFT) test --skip-build $(TEST_BUILD_FLAGS) --filter CrashResumeTests || $(TSAN_SHOW_REPORTS)
	@echo "Sanitizer reports left by processes the tests tolerated: $$(ls $(TSAN_REPORTS) | wc -l)"

demo: build
	$(SWIFT) run haul --demo

bench: deps
	bench/run

# The man page comes from the haul just built, by swift-argument-parser's generate-manual tool (built on its
# own, in debug: a minute). Its plugin (`swift package generate-manual`) would first build every product
# again its own way, a second release build of everything, into the folder of the binaries to install.
MANUAL_DIR := .build/manual
install: deps
	$(STATIC_ENV) $(SWIFT) build -c $(CONFIG) $(STATIC_FLAGS) --product haul
	$(STATIC_ENV) $(SWIFT) build -c $(CONFIG) $(STATIC_FLAGS) --product haul-server
	$(SWIFT) build --product generate-manual
	mkdir -p $(MANUAL_DIR)
	"$$($(SWIFT) build --show-bin-path)/generate-manual" \
	  "$$($(STATIC_ENV) $(SWIFT) build -c $(CONFIG) $(STATIC_FLAGS) --show-bin-path)/haul" --output-directory $(MANUAL_DIR)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/libexec/haul $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 755 "$$($(STATIC_ENV) $(SWIFT) build -c $(CONFIG) $(STATIC_FLAGS) --show-bin-path)/haul" $(DESTDIR)$(PREFIX)/bin/haul
	# The service and --demo run in haul-server, which haul finds in ../libexec/haul/.
	install -m 755 "$$($(STATIC_ENV) $(SWIFT) build -c $(CONFIG) $(STATIC_FLAGS) --show-bin-path)/haul-server" $(DESTDIR)$(PREFIX)/libexec/haul/haul-server
	install -m 644 $(MANUAL_DIR)/haul.1 $(DESTDIR)$(PREFIX)/share/man/man1/haul.1
	$(DESTDIR)$(PREFIX)/bin/haul --no-config --generate-completion-script bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/haul
	$(DESTDIR)$(PREFIX)/bin/haul --no-config --generate-completion-script zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_haul
	$(DESTDIR)$(PREFIX)/bin/haul --no-config --generate-completion-script fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/haul.fish
	@echo "Installed haul in $(DESTDIR)$(PREFIX)/bin (haul-server in libexec/haul), its man page and completions."

# What CI proves of the README's install: `make install` (a static release build) into a scratch prefix; the
# installed haul runs (and starts its service from ../libexec/haul), and its man page reads. One make, no
# sub-make: SwiftPM planned a second build under the sub-make's environment and compiled everything again.
install-check: PREFIX := $(CURDIR)/.build/install-check
install-check: install
	@home=$$(mktemp -d) && \
	$(PREFIX)/bin/haul --version && \
	HAUL_HOME=$$home/state $(PREFIX)/bin/haul service start && HAUL_HOME=$$home/state $(PREFIX)/bin/haul service stop && \
	LC_ALL=C MANPAGER=cat MANWIDTH=80 man -l $(PREFIX)/share/man/man1/haul.1 | grep -q -- '--output-dir' && \
	test -s $(PREFIX)/share/bash-completion/completions/haul && \
	echo "install-check: haul, haul-server, the man page and completions installed and working in $(PREFIX)" && \
	rm -rf $(PREFIX) $$home

clean:
	rm -rf .build .build-tsan
