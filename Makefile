# homatb: `make demo` installs, builds and runs the default scenario;
# `make test` installs and runs every test (root-only tests skip without root).

GO ?= go
BIN := bin/homatb
PKGS := ./...

.PHONY: all deps bpf build test vet fmt-check demo bench soak p4c clean

all: build

deps:
	./scripts/install-deps.sh

# Compiles the BPF programs (the congestion controls in hostagent/tcpcc/bpf,
# PIAS's tagger in hostagent/pias/bpf) with clang against the running
# kernel's BTF and regenerates their Go bindings (bpf2go).
# Without kernel BTF the committed objects are kept (docs/tcp.md).
BPF_PKGS := ./hostagent/tcpcc ./hostagent/pias
bpf:
	@if [ -r /sys/kernel/btf/vmlinux ]; then echo "$(GO) generate $(BPF_PKGS)"; $(GO) generate $(BPF_PKGS); \
	else echo "no /sys/kernel/btf/vmlinux: keeping the committed BPF objects in $(BPF_PKGS)"; fi

# The commit (with +dirty for uncommitted changes) is linked in for
# `homatb version` and manifest.json: Go records none in a git worktree or
# under GOFLAGS=-buildvcs=false.
COMMIT := $(shell c=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null || c=$$c+dirty; echo $$c; })
LDFLAGS := -X github.com/homatb/homatb/internal/buildinfo.commit=$(COMMIT)

build: bpf
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/homatb

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# -p 1: the namespace and switch tests shape links and measure time; running
# packages in parallel on two vCPUs would make them measure each other.
# The second line runs the packages where goroutines share protocol state
# (Homa's endpoint, the P4Runtime client) again under the race detector.
test: deps build fmt-check vet
	$(GO) test -p 1 -count=1 -timeout 25m $(PKGS)
	$(GO) test -race -p 1 -count=1 -timeout 10m ./hostagent/homa/... ./controller

demo: deps build
	./$(BIN) run scenarios/incast.yaml

# The Go benchmarks of every part, then the switch against the kernel bridge
# (root). Results and methods: docs/homa.md, docs/agent.md, docs/bench-switch.md.
bench: build
	$(GO) test -p 1 -run '^$$' -bench . ./internal/hrtime ./p4/dataplane ./controller ./hostagent/homa ./hostagent/agent ./reports
	./bench/switch/run.sh

# Long runs that must stay healthy (docs/soak.md), not part of `make test`:
# 30 simulated minutes, then (as root, with Mininet) 10 emulated minutes with
# link flaps, loss and an agent killed and restarted; the books, every
# process's memory, threads and descriptors, and what the run leaves behind
# are checked. SOAK_OUT is where the run directories go.
SOAK_OUT ?= /tmp/homatb-soak
soak: build
	./scripts/soak.py --bin $(BIN) --out $(SOAK_OUT)

# Compiles p4/tor.p4 for BMv2 where p4c is installed, and records the
# SHA-256 of the tor.p4 it compiled: the BMv2 preflight refuses a tor.json
# whose stamp does not match the tor.p4 the homatb binary carries.
p4c:
	@if command -v p4c-bm2-ss >/dev/null; then \
		mkdir -p build && rm -f build/tor.p4.sha256 && \
		p4c-bm2-ss --p4v 16 --p4runtime-files build/tor.p4info.txtpb -o build/tor.json p4/tor.p4 && \
		sha256sum p4/tor.p4 > build/tor.p4.sha256; \
	else echo "p4c-bm2-ss not installed: skipping the BMv2 compile (the embedded target needs none)"; fi

clean:
	rm -rf bin build
