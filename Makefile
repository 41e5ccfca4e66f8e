# pinproxy — build, test, run.
SWIFT ?= swift
APT_PACKAGES := libssl-dev libnghttp2-dev pkg-config openssl curl nghttp2-client python3 python3-requests wget libokhttp-java openjdk-17-jdk-headless
CA_DIR ?= certs

.PHONY: all build release deps test run demo bench clean

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

# What pinning protects against, told by four live connections through the
# proxy (pinproxy demo); a debug build is enough, and make test reuses it.
demo: deps
	$(SWIFT) build --product pinproxy
	.build/debug/pinproxy demo

bench: release
	@missing=""; for p in nginx-light wrk curl; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; fi
	.build/release/pinproxy bench forge
	.build/release/pinproxy bench proxy

clean:
	rm -rf .build
