# pinproxy — build, test, run.
SWIFT ?= swift
APT_PACKAGES := libssl-dev libnghttp2-dev pkg-config openssl curl nghttp2-client python3 python3-requests
CA_DIR ?= certs
FUZZ_SECONDS ?= 30
FUZZ_TARGETS ?=

.PHONY: all build release deps test run bench fuzz clean

all: build

# Installs the Debian packages the build and the tests need, when missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --disable-xctest

run: release
	@if [ -f $(CA_DIR)/pinproxy-ca.pem ]; then echo "using the existing CA in $(CA_DIR)"; else .build/release/pinproxy ca init --dir $(CA_DIR); fi
	.build/release/pinproxy ca show --dir $(CA_DIR)
	.build/release/pinproxy serve --ca-dir $(CA_DIR) --admin 127.0.0.1:8081

bench: release
	@missing=""; for p in nginx-light wrk curl; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; fi
	.build/release/pinproxy bench forge
	.build/release/pinproxy bench proxy

# Builds the libFuzzer targets of Fuzz/ with AddressSanitizer (in .build-fuzz) and runs
# each for FUZZ_SECONDS, one at a time; FUZZ_TARGETS picks some. See docs/fuzzing.md.
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) Fuzz/fuzz.sh $(FUZZ_TARGETS)

clean:
	rm -rf .build .build-fuzz
