# Lookout — the two commands from the README:
#   make run    build (release) and run the proxy with config/lookout.yaml on 127.0.0.1:8080
#   make test   build and run every test: Swift unit tests, then the end-to-end suite
# Both install what is missing first (Debian packages when root, pytest from PyPI).

SWIFT ?= swift
PYTHON ?= python3
CONFIG ?= config/lookout.yaml
APT_PACKAGES := libssl-dev libnghttp2-dev zlib1g-dev libbrotli-dev libisal-dev pkg-config curl openssl ca-certificates squid prometheus chromium chromium-driver nghttp2-server nginx-light libnss3-tools publicsuffix mkcert easy-rsa gnutls-bin nftables iproute2 microsocks dante-server default-jdk-headless wrk podman runc debootstrap

.PHONY: run test deps pins pin build release unit integration bench clean sanitize tsan-unit fuzz image

# Sanitizer runs write their reports here (one file per process); any file is a failure.
SANITIZER_REPORTS := $(CURDIR)/.build/sanitizer-reports
TSAN_ENV := TSAN_OPTIONS="log_path=$(SANITIZER_REPORTS)/tsan suppressions=$(CURDIR)/Tests/sanitizers/tsan.supp second_deadlock_stack=1"
# Leaks are left to the fuzzers' LeakSanitizer runs: process-lifetime caches (OpenSSL, the Swift
# runtime's metadata) are reported at exit by an ordinary run.
ASAN_ENV := ASAN_OPTIONS="log_path=$(SANITIZER_REPORTS)/asan detect_leaks=0"

# The dependency versions are pinned in Docker/Package.resolved (the top level holds only what
# the layout names); every build resolves from a copy of it, so nothing resolves afresh.
pins:
	@cmp -s Docker/Package.resolved Package.resolved || cp Docker/Package.resolved Package.resolved

# After a change to Package.swift's dependencies: resolve, and keep the new pins.
pin:
	$(SWIFT) package resolve
	cp Package.resolved Docker/Package.resolved

deps: pins
	@missing=""; \
	pkg-config --exists openssl || missing="$$missing libssl-dev"; \
	pkg-config --exists libnghttp2 || missing="$$missing libnghttp2-dev"; \
	pkg-config --exists zlib || missing="$$missing zlib1g-dev"; \
	pkg-config --exists libbrotlidec || missing="$$missing libbrotli-dev"; \
	pkg-config --exists libisal || missing="$$missing libisal-dev"; \
	command -v pkg-config >/dev/null || missing="$$missing pkg-config"; \
	command -v curl >/dev/null || missing="$$missing curl"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	[ -x /usr/sbin/squid ] || missing="$$missing squid"; \
	command -v prometheus >/dev/null || missing="$$missing prometheus"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null || missing="$$missing chromium-driver"; \
	command -v certutil >/dev/null || missing="$$missing libnss3-tools"; \
	[ -x /usr/sbin/nghttpd ] || command -v nghttpd >/dev/null || missing="$$missing nghttp2-server"; \
	[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || missing="$$missing nginx-light"; \
	[ -f /etc/ssl/certs/ca-certificates.crt ] || missing="$$missing ca-certificates"; \
	[ -f /usr/share/publicsuffix/public_suffix_list.dat ] || missing="$$missing publicsuffix"; \
	command -v mkcert >/dev/null || missing="$$missing mkcert"; \
	command -v certtool >/dev/null || missing="$$missing gnutls-bin"; \
	[ -x /usr/share/easy-rsa/easyrsa ] || missing="$$missing easy-rsa"; \
	command -v nft >/dev/null || [ -x /usr/sbin/nft ] || missing="$$missing nftables"; \
	[ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing="$$missing iproute2"; \
	command -v microsocks >/dev/null || missing="$$missing microsocks"; \
	[ -x /usr/sbin/danted ] || missing="$$missing dante-server"; \
	command -v javac >/dev/null || missing="$$missing default-jdk-headless"; \
	command -v wrk >/dev/null || missing="$$missing wrk"; \
	command -v podman >/dev/null || missing="$$missing podman"; \
	command -v runc >/dev/null || [ -x /usr/sbin/runc ] || missing="$$missing runc"; \
	command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || missing="$$missing debootstrap"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES) >/dev/null; \
	  else \
	    echo "missing Debian packages:$$missing (run: sudo apt-get install -y$$missing)"; exit 1; \
	  fi; \
	fi
	@$(PYTHON) -c 'import pytest' 2>/dev/null || $(PYTHON) -m pip install -q pytest
	@$(PYTHON) -c 'import haralyzer' 2>/dev/null || $(PYTHON) -m pip install -q haralyzer
	@$(PYTHON) -c 'import jsonschema' 2>/dev/null || $(PYTHON) -m pip install -q jsonschema
	@$(PYTHON) -c 'import yaml' 2>/dev/null || $(PYTHON) -m pip install -q pyyaml
	@$(PYTHON) -c 'import selenium' 2>/dev/null || $(PYTHON) -m pip install -q selenium
	@$(PYTHON) -c 'import h2, httpx' 2>/dev/null || $(PYTHON) -m pip install -q h2 'httpx[http2]'
	@$(PYTHON) -c 'import grpc' 2>/dev/null || $(PYTHON) -m pip install -q grpcio
	@$(PYTHON) -c 'import grpc_tools' 2>/dev/null || $(PYTHON) -m pip install -q grpcio-tools
	@$(PYTHON) -c 'import websockets' 2>/dev/null || $(PYTHON) -m pip install -q websockets
	@$(PYTHON) -c 'import trustme' 2>/dev/null || $(PYTHON) -m pip install -q trustme
	@$(PYTHON) -c 'import socksio, socks' 2>/dev/null || $(PYTHON) -m pip install -q socksio PySocks
	@$(PYTHON) -c 'import opentelemetry.proto, opentelemetry.sdk, opentelemetry.instrumentation.requests, requests' 2>/dev/null \
	  || $(PYTHON) -m pip install -q opentelemetry-proto opentelemetry-sdk opentelemetry-instrumentation-requests requests
	@# mitmproxy pins its own h2/h11/cryptography: it gets a virtualenv of its own (the HAR it writes is simulated).
	@[ -x .build/mitmproxy/bin/mitmdump ] || ($(PYTHON) -m venv .build/mitmproxy && .build/mitmproxy/bin/pip install -q mitmproxy)
	@# The public X.509 path-validation suite test_verify.py runs when present (skipped, saying so, when not).
	@[ -s .build/x509-limbo/limbo.json ] || (mkdir -p .build/x509-limbo && curl -fsSL --max-time 60 \
	  -o .build/x509-limbo/limbo.json https://raw.githubusercontent.com/C2SP/x509-limbo/main/limbo.json) \
	  || (rm -f .build/x509-limbo/limbo.json; echo "x509-limbo: limbo.json not fetched (no network?); its test will be skipped")
	@# The container image's base and runtime stage, made once per machine (test_image.py builds the
	@# runtime-only image on them without the network); where podman cannot run, that test says why.
	@if [ "$$(id -u)" = 0 ] && command -v podman >/dev/null; then \
	  bash Docker/image.sh base >/dev/null || echo "image: no base image (test_image.py will say why)"; fi

# The container image, localhost/lookout:latest, from Docker/Dockerfile (podman, or docker when
# an engine runs); base images from a registry, else made here (Docker/image.sh).
image: pins
	bash Docker/image.sh

build: deps
	$(SWIFT) build --product lookout

release: deps
	$(SWIFT) build -c release --product lookout

run: release
	.build/release/lookout run --config $(CONFIG)

unit: deps
	$(SWIFT) test

integration: build
	LOOKOUT_BIN=$(CURDIR)/.build/debug/lookout $(PYTHON) -m pytest Tests/integration -q --junitxml=.build/test-results/integration.xml

test: deps
	$(SWIFT) build --product lookout
	$(SWIFT) test
	LOOKOUT_BIN=$(CURDIR)/.build/debug/lookout $(PYTHON) -m pytest Tests/integration -q --junitxml=.build/test-results/integration.xml
	$(MAKE) tsan-unit

# The Swift tests under ThreadSanitizer (part of `make test`).
tsan-unit: pins
	@rm -rf $(SANITIZER_REPORTS) && mkdir -p $(SANITIZER_REPORTS)
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build/tsan
	$(TSAN_ENV) $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build/tsan
	@bash Tests/sanitizers/check-reports.sh $(SANITIZER_REPORTS)

# Both sanitizers over both suites: the Swift tests, then the end-to-end suite against the
# sanitized binary. Zero reports is the bar.
sanitize: deps
	@rm -rf $(SANITIZER_REPORTS) && mkdir -p $(SANITIZER_REPORTS)
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build/tsan
	$(TSAN_ENV) $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build/tsan
	$(TSAN_ENV) LOOKOUT_BIN=$(CURDIR)/.build/tsan/debug/lookout \
	  $(PYTHON) -m pytest Tests/integration -q --junitxml=.build/test-results/integration-tsan.xml
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build/asan
	$(ASAN_ENV) $(SWIFT) test --skip-build --sanitize=address --scratch-path .build/asan
	$(ASAN_ENV) LOOKOUT_BIN=$(CURDIR)/.build/asan/debug/lookout \
	  $(PYTHON) -m pytest Tests/integration -q --junitxml=.build/test-results/integration-asan.xml
	@bash Tests/sanitizers/check-reports.sh $(SANITIZER_REPORTS)

# libFuzzer over every parser, FUZZ_SECONDS (default 60) per target (Tests/fuzz/README.md).
fuzz: deps
	bash Tests/fuzz/build.sh
	bash Tests/fuzz/run.sh

bench: deps
	bash Tests/bench/run.sh

clean:
	rm -rf .build
