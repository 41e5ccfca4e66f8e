# pinproxy — build, test, run.
SWIFT ?= swift
SHELL := /bin/bash
# What building pinproxy needs (build, release, demo, install); APT_PACKAGES adds what the tests drive.
BUILD_PACKAGES := libssl-dev libnghttp2-dev pkg-config
APT_PACKAGES := libssl-dev libnghttp2-dev pkg-config openssl curl nghttp2-client python3 python3-requests wget libokhttp-java openjdk-17-jdk-headless nginx-light python3-h2 nghttp2-server wrk
CA_DIR ?= certs
# Extra flags for `pinproxy serve` in `make run`, e.g. ARGS="--upstream-ca staging-ca.pem".
ARGS ?=
# The control API's address in `make run` (ADMIN=127.0.0.1:9081 for another port).
ADMIN ?= 127.0.0.1:8081
# The binary make run starts (the release build).
RUN_BIN ?= .build/release/pinproxy
# `make docker-verify`: the static build's scratch path and the cached Debian root live here (ignored by git).
DOCKER_VERIFY_DIR ?= .build-docker-verify

# `make bench PEERS=1`: mitmproxy joins the proxy benchmark, from a virtualenv
# here (ignored by git); 11.0.2 is the newest mitmproxy for Python 3.11.
PEERS ?=
PEERS_DIR ?= .build-peers
MITMPROXY_VERSION ?= 11.0.2
# Extra flags for `pinproxy bench proxy` in `make bench`, e.g. BENCH_ARGS="--connections 4 --rounds 5".
BENCH_ARGS ?=
# The same for `pinproxy bench proxy --http2`, e.g. BENCH_HTTP2_ARGS="--http2-connections 4 --streams 100".
BENCH_HTTP2_ARGS ?=
# The same for `pinproxy bench proxy --peers haproxy,haproxy-h2,nginx` (make bench PEERS=1).
BENCH_PEERS_ARGS ?=
comma := ,

# `make install`: bin/pinproxy under PREFIX — /usr/local as root (or where /usr/local/bin
# is writable), else ~/.local; INSTALL_FROM is the binary it copies (the release build).
PREFIX ?= $(shell if [ "$$(id -u)" = 0 ] || [ -w /usr/local/bin ]; then echo /usr/local; else echo "$$HOME/.local"; fi)
INSTALL_FROM ?= .build/release/pinproxy

FUZZ_SECONDS ?= 30
FUZZ_TARGETS ?=

.PHONY: all build release release-bolt deps build-deps test run demo install uninstall bench docker-verify fuzz conformance clean

all: build

# Installs the named Debian packages when missing (as root, or through sudo).
define apt_install
@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
endef

# Installs the Debian packages the build and the tests need, when missing.
deps:
	$(call apt_install,$(APT_PACKAGES))

# Installs only what the build needs: the demo and make install pull no test client (no JDK).
build-deps:
	$(call apt_install,$(BUILD_PACKAGES))

build: build-deps
	$(SWIFT) build

# The executable only: the libraries it does not link (the fuzzing harness) are not built.
# Linked with whole-program LTO: about 5% fewer instructions per proxied request and
# fewer instruction-cache misses (docs/proxy.md, "Whole-program LTO"); RELEASE_FLAGS=
# builds without it (about a third of the build time).
RELEASE_FLAGS ?= --experimental-lto-mode=full
release: build-deps
	$(SWIFT) build -c release --product pinproxy $(RELEASE_FLAGS)

# The release build with its code laid out by BOLT from a profile of the proxy benchmark's loads
# (Tools/bolt-release.sh, about a minute more): hot code together, cold code split off, about 30%
# fewer instruction-cache misses in pinproxy's own code per request (docs/proxy.md, "Code layout
# from a profile (BOLT)"). What `make bench` measures. The binary as linked stays beside it as
# .build/release/pinproxy.linked.
release-bolt: build-deps
	$(call apt_install,bolt-19 binutils nginx-light wrk curl nghttp2-client)
	$(SWIFT) build -c release --product pinproxy $(RELEASE_FLAGS) -Xlinker --emit-relocs
	Tools/bolt-release.sh .build/release/pinproxy

# The build must stay free of warnings in the project's own code: every line
# the compiler prints is kept, and a warning in Sources/ or Tests/ fails the
# target (a fresh clone compiles everything, so CI sees every warning).
test: deps
	@mkdir -p .build; set -o pipefail; $(SWIFT) build --build-tests 2>&1 | tee .build/warnings.log
	@if grep -E "^$(CURDIR)/(Sources|Tests)/.*: warning:" .build/warnings.log; then \
	  echo "the build printed warnings in the project's own code (above)"; rm -f .build/warnings.log; exit 1; fi
	@rm -f .build/warnings.log
	$(SWIFT) test --skip-build --disable-xctest

run: release
	@if [ -f $(CA_DIR)/pinproxy-ca.pem ]; then echo "using the existing CA in $(CA_DIR)"; $(RUN_BIN) ca show --dir $(CA_DIR); \
	elif [ "$(CA_DIR)" = certs ] && [ -z "$$PINPROXY_CA_DIR" ]; then \
	  echo "no CA in $(CA_DIR) yet: serve creates one once its ports are free (a port in use leaves none behind); then 'pinproxy ca show --dir $(CA_DIR)' says how to trust it"; \
	else $(RUN_BIN) ca init --dir $(CA_DIR) && $(RUN_BIN) ca show --dir $(CA_DIR); fi
	$(RUN_BIN) serve --ca-dir $(CA_DIR) --admin $(ADMIN) $(ARGS)

# The release binary as PREFIX/bin/pinproxy, so that `pinproxy` runs from anywhere; says
# how to put PREFIX/bin on the PATH when it is not.
install: release
	install -d "$(DESTDIR)$(PREFIX)/bin"
	install -m 0755 "$(INSTALL_FROM)" "$(DESTDIR)$(PREFIX)/bin/pinproxy"
	@echo "installed $(DESTDIR)$(PREFIX)/bin/pinproxy"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; \
	  *) echo "$(PREFIX)/bin is not on your PATH; add it: export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

uninstall:
	rm -f "$(DESTDIR)$(PREFIX)/bin/pinproxy"

# What pinning protects against, told by five live connections through the
# proxy (pinproxy demo); a debug build is enough, and make test reuses it.
demo: build-deps
	$(call apt_install,curl)
	$(SWIFT) build --product pinproxy
	.build/debug/pinproxy demo

# Forging, then the proxy loads: direct, pinproxy, pinproxy with --har and
# --events, and with PEERS=1 mitmproxy, in one run with ratios; then the
# HTTP/2 loads (h2load, HTTP/2 on both legs) the same way; with PEERS=1,
# then HAProxy and nginx doing the same reverse-proxy work (docs/proxy.md).
bench: build-deps $(if $(PEERS),$(PEERS_DIR)/venv/bin/mitmdump)
	$(call apt_install,nginx-light wrk curl nghttp2-client $(if $(PEERS),haproxy))
	@# The BOLT build when it can be made; else the plain release build is measured, and says so.
	@$(MAKE) --no-print-directory release-bolt || { echo "make bench: the BOLT layout failed (above); measuring the plain release build"; \
	  $(MAKE) --no-print-directory release; }
	.build/release/pinproxy bench forge
	.build/release/pinproxy bench proxy --capture $(if $(PEERS),--mitmdump $(PEERS_DIR)/venv/bin/mitmdump) $(BENCH_ARGS)
	.build/release/pinproxy bench proxy --http2 --capture $(BENCH_HTTP2_ARGS)
	$(if $(PEERS),.build/release/pinproxy bench proxy --peers haproxy$(comma)haproxy-h2$(comma)nginx --h1-upstream --connections 4 --threads 1 --bulk-mb 10 $(BENCH_PEERS_ARGS))

$(PEERS_DIR)/venv/bin/mitmdump:
	$(call apt_install,python3-venv)
	python3 -m venv $(PEERS_DIR)/venv
	$(PEERS_DIR)/venv/bin/pip install -q mitmproxy==$(MITMPROXY_VERSION)

# The container's runtime stage without a Docker engine: the release binary
# built as docker/Dockerfile builds it, run in a Debian bookworm root that
# holds only the stage's packages (docker/verify-runtime.sh). Slow: not part
# of `make test`.
docker-verify: deps
	$(call apt_install,debootstrap)
	@want=$$(sed -n 's/^ARG SWIFT_VERSION=//p' docker/Dockerfile); \
	have=$$($(SWIFT) --version 2>&1 | sed -n 's/.*Swift version \([0-9.]*\).*/\1/p'); \
	[ "$$want" = "$$have" ] || { echo "docker-verify: docker/Dockerfile builds with Swift $$want, this machine has Swift $$have" >&2; exit 2; }
	$(SWIFT) build -c release --product pinproxy --static-swift-stdlib $(RELEASE_FLAGS) --scratch-path $(DOCKER_VERIFY_DIR)/static
	@SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	$$SUDO docker/verify-runtime.sh $(DOCKER_VERIFY_DIR)/static/release/pinproxy $(DOCKER_VERIFY_DIR)

# Builds the libFuzzer targets of Fuzz/ with AddressSanitizer (in .build-fuzz) and runs
# each for FUZZ_SECONDS, one at a time; FUZZ_TARGETS picks some. See docs/fuzzing.md.
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) Fuzz/fuzz.sh $(FUZZ_TARGETS)

# h2spec (HTTP/2 conformance) against the release build in reverse mode, in
# front of a local nginx origin; h2spec is built from local source mirrors by
# Tools/build-h2spec.sh (H2SPEC_MIRRORS). Not part of `make test`: docs/http2.md.
conformance: release
	$(call apt_install,nginx-light python3-venv)
	Tools/h2spec-reverse.sh .build/release/pinproxy

clean:
	rm -rf .build .build-fuzz .build-conformance $(PEERS_DIR)
