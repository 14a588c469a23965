# AMID — build, run and test. `make run` and `make test` set everything up on a fresh
# Debian 12 machine: Debian packages (installed with apt when run as root, else the exact
# apt-get line is printed), Go modules, the pinned Go tools of go.mod's tool block, and the
# real-image cache the tests read.

SHELL := /bin/bash
GO    ?= go
BIN   := bin
# Debian packages: cgo and GL/X11 headers for Fyne, protoc for the plugin protocol, OpenBLAS
# for the training engine, Xvfb, xdotool, ImageMagick and Mesa's software GL for the
# desktop's smoke test (.ci/screenshots.sh); the DICOM tests' reference tools: GDCM
# (libgdcm-tools, python3-gdcm), dcmtk and OpenJPEG's tools (the decoders' references),
# dicom3tools (dciodvfy validates the DICOM objects AMID writes), plastimatch (the anchor
# for rasterising RTSTRUCT contours), pydicom with numpy (reads them back) and dcm2niix
# (the anchor for how DICOM series become volumes: geometry, tilt, spacing), scikit-learn
# (python3-sklearn: the clinical metrics' reference, plugins/metrics/testdata/clinical_ref.py,
# which a test runs again in CI); the Vulkan
# loader and headers, Mesa's lavapipe (a Vulkan driver on the CPU, on which CI runs every
# GPU kernel), glslc and spirv-val for the engine's compute shaders, and vulkaninfo; Slurm
# (slurm-wlm: slurmctld, slurmd and the client commands) and munge, for the one-node
# cluster on loopback the Slurm executor's tests run against (.ci/slurm.sh); Orthanc with
# its DICOMweb plugin and curl, the PACS on loopback amid predict's PACS tests run against
# (.ci/orthanc.sh; the Debian service is never started). npm
# (for fetching real test images) is installed from Debian only when no npm command is on
# the PATH, since many machines carry their own Node.js.
APT_PKGS := gcc libc6-dev pkg-config libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev \
            libxinerama-dev libxi-dev libxxf86vm-dev protobuf-compiler libprotobuf-dev libopenblas-dev \
            xvfb xdotool imagemagick libgl1-mesa-dri \
            libgdcm-tools python3-gdcm dcmtk libopenjp2-tools \
            dicom3tools plastimatch python3-pydicom python3-numpy python3-sklearn dcm2niix \
            libvulkan-dev mesa-vulkan-drivers glslc spirv-tools vulkan-tools \
            slurm-wlm munge orthanc orthanc-dicomweb curl
FUZZTIME ?= 3000x

.PHONY: all deps build amid desktop plugins run test check fmt vet staticcheck race slurm floats-alt e2e fuzz-short \
        fuzz realdata bench-io bench-jpeg2000 bench-metrics bench-plugins bench-engine bench-predict bench-gorgonia bench-gpu gpu-bundle \
        bench-plugins-models bench-viewer bench-quality screenshots generate clean

all: build

# deps installs the Debian packages the build needs, or says how.
deps:
	@command -v $(GO) >/dev/null || { echo "Go 1.26 or newer is needed: https://go.dev/dl/ (install into /usr/local/go)"; exit 1; }
	@missing=$$(for p in $(APT_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done; \
	  command -v npm >/dev/null || echo npm); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing: $$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else \
	    echo "missing Debian packages; run:"; echo "  sudo apt-get install -y $$missing"; exit 1; \
	  fi; \
	fi
	@$(GO) mod download

build: plugins amid desktop

# The programs are linked after the plugins with the plugins' sha256 (BUILTIN_LDFLAGS, from
# .ci/builtin-sums.sh; expanded when a recipe runs, after the plugins are built): the host
# trusts exactly those binaries in bin/plugins. A plain `go build` embeds no sums, and then
# every plugin needs `amid plugins trust NAME`.
BUILTIN_LDFLAGS = $(shell .ci/builtin-sums.sh $(BIN)/plugins $(PLUGINS))

amid: deps plugins
	CGO_ENABLED=0 $(GO) build -ldflags='$(BUILTIN_LDFLAGS)' -o $(BIN)/amid ./app/cmd/amid

desktop: deps plugins
	$(GO) build -ldflags='$(BUILTIN_LDFLAGS)' -o $(BIN)/amid-desktop .

# plugins builds the built-in task plugins into bin/plugins/, the host's built-in plugin
# folder.
PLUGINS := segmentation detection classification iqa enhancement
plugins: deps
	@mkdir -p $(BIN)/plugins
	@for p in $(PLUGINS); do \
	  if [ -f plugins/$$p/main.go ]; then \
	    echo "$(GO) build -o $(BIN)/plugins/amid-plugin-$$p ./plugins/$$p"; \
	    $(GO) build -o $(BIN)/plugins/amid-plugin-$$p ./plugins/$$p || exit 1; \
	  fi; \
	done

# The main job: the demo task (generated head CTs, in bin/demo) end to end with the rules
# planner, no network: profile, plan, train within 3 minutes, verify, export; then the
# package is verified again from scratch. The plugins just built are trusted as built-in.
DEMO   := $(BIN)/demo
BUDGET ?= 3m
run: build
	rm -rf $(DEMO)
	$(BIN)/amid demo $(DEMO)/data
	AMID_HOME=$(BIN)/home $(BIN)/amid run $(DEMO)/data/task.yaml --out $(DEMO)/run --budget $(BUDGET) --answers $(DEMO)/data/answers
	AMID_HOME=$(BIN)/home $(BIN)/amid verify $(DEMO)/run/package
	@echo "package: $(DEMO)/run/package (zip: $(DEMO)/run/package.zip)"

realdata: deps
	@.ci/realdata.sh

# test runs each step in turn (.ci/steps.sh) and prints each one's wall time at the end.
test:
	@MAKE=$(MAKE) .ci/steps.sh deps realdata check race floats-alt e2e fuzz-short screenshots-check

check: fmt vet staticcheck

fmt:
	@out=$$(git ls-files -co --exclude-standard '*.go' | xargs -r gofmt -l); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd plugins/engine/cmd/benchgorgonia && $(GO) vet ./...

staticcheck:
	$(GO) tool staticcheck ./...

# e2e runs every ReX-MLE challenge end to end on tiny generated data (host/bench), and a
# plain task of every kind, and the class, multi-label and box layouts datasets ship in on
# real images, through `amid run` (app/cli), without the race detector, which the rest of
# the suite already runs under.
e2e:
	$(GO) test -count=1 -timeout 45m -run TestEveryChallenge ./host/bench
	$(GO) test -count=1 -timeout 20m -run 'TestPlainTaskOfEveryKind|TestClassLayouts|TestBoxLayouts|TestMultiLabelLayouts' ./app/cli

# floats-alt runs the float-sensitive packages again, without the race detector, with
# another OpenBLAS core type forced than the CPU's own (Haswell on an AVX-512 CPU,
# Sandybridge on an AVX2 one), so that no test depends on the kernels of the CPU that
# made its goldens. Plugin processes honour the forced core too. It is also the pass
# without -race for the tests the race pass skips because -race slows them several times
# over and they check a result, not concurrency (ci.NotUnderRace): the plugins' learning
# tests (the detection plugin's TestLearns*), the benchmark's real-image task builders
# (host/bench/cmd/benchquality) and host/run's DICOM end-to-end runs (skipLong). host/run's
# other tests run once, under -race: they have no goldens (every comparison is between two
# runs on the same machine), and running them twice cost CI about 5 minutes. The Vulkan
# tests run once too, in the race pass (vktest.SkipEnv says why).
FLOAT_PKGS := ./plugins/engine/... ./plugins/segmentation/... ./plugins/detection/... ./plugins/classification/... \
              ./plugins/iqa/... ./plugins/enhancement/... ./host/bench/cmd/benchquality
NORACE_RUN := '^(TestDICOMEndToEnd|TestDeidentifiedEndToEnd)$$'
floats-alt:
	@core=$$(if grep -qw avx512f /proc/cpuinfo; then echo Haswell; elif grep -qw avx2 /proc/cpuinfo; then echo Sandybridge; fi); \
	if [ -z "$$core" ]; then echo "floats-alt: this CPU has neither AVX-512 nor AVX2: no second core type to force"; exit 1; fi; \
	echo "OPENBLAS_CORETYPE=$$core $(GO) test -count=1 $(FLOAT_PKGS)"; \
	AMID_TEST_VK_SKIP="the race pass ran the Vulkan tests (vktest.SkipEnv)" OPENBLAS_CORETYPE=$$core $(GO) test -count=1 -timeout 10m $(FLOAT_PKGS) && \
	echo "OPENBLAS_CORETYPE=$$core $(GO) test -count=1 -run $(NORACE_RUN) ./host/run" && \
	OPENBLAS_CORETYPE=$$core $(GO) test -count=1 -timeout 10m -run $(NORACE_RUN) ./host/run

race:
	$(GO) test -race -timeout 30m ./...
	cd plugins/examples/echo && $(GO) test -race ./...

# slurm runs the Slurm executor's tests (amid/host/slurm) without the race detector against
# a one-node cluster on loopback that .ci/slurm.sh starts before and stops after, whatever
# the tests' outcome: jobs of what the plan asks for, a plugin changed on the shared folder
# refused on the node, jobs cancelled by the run and from outside, a node failure, and the
# demo task on Slurm against the same run here (about 2 minutes). make test does not run
# this target: its race pass runs the same tests under the race detector (their TestMain
# starts the cluster when none answers, through the same script, and stops it after), and
# running them twice cost CI two minutes.
slurm: deps
	@.ci/slurm.sh start
	@rc=0; $(GO) test -count=1 -timeout 10m ./host/slurm/... || rc=$$?; .ci/slurm.sh stop; exit $$rc

# fuzz-short runs every fuzz target briefly; fuzz runs each for minutes.
fuzz-short:
	@.ci/fuzz.sh $(FUZZTIME)

fuzz:
	@.ci/fuzz.sh 3m

bench-io: realdata
	@.ci/bench-io.sh

# bench-jpeg2000: a real 512×512 16-bit lossless CT slice decoded by viewer/dicom/codec/jpeg2000,
# GDCM and OpenJPEG, side by side (CPU and wall time, ratios to GDCM).
bench-jpeg2000: realdata
	$(GO) test -run '^$$' -bench DecodeCT -benchtime 20x ./viewer/dicom/codec/jpeg2000/

bench-metrics: deps
	@.ci/bench-metrics.sh

bench-plugins: deps
	$(GO) test -run '^$$' -bench . -benchtime 3s ./host/supervisor/

# bench-engine: one U-Net training step, 2D and 3D, in the engine and in PyTorch 1.13.
bench-engine: deps
	@/usr/bin/python3 -c 'import torch' 2>/dev/null || { [ "$$(id -u)" = 0 ] && apt-get install -y -qq python3-torch >/dev/null; } || { echo "bench-engine needs: sudo apt-get install -y python3-torch"; exit 1; }
	$(GO) run ./plugins/engine/cmd/benchengine -steps 3

# bench-predict: whole-volume sliding-window prediction on this CPU, the engine (the
# segmentation plugin's path: infer.Classes) against PyTorch 1.13 running nnU-Net's loop, each
# in its own process: seconds, peak memory, their ratios and the labels' agreement, on a
# generated CT (512×512×300, 7 classes) and MR (256×256×176, 4 classes), every axis times
# SCALE, with the reference 3D U-Net (random weights, the same on both sides). FLIPS=8 mirrors
# every window along the three axes (8 passes each). The default, SCALE=0.85 (a CT of
# 435×435×255, an MR of 218×218×150), takes about 22 minutes on the 2-vCPU AMD EPYC of
# plugins/engine/infer/README.md's table (SCALE=1: 36), the estimate printed first.
SCALE ?= 0.85
FLIPS ?= 1
bench-predict: deps
	@/usr/bin/python3 -c 'import torch' 2>/dev/null || { [ "$$(id -u)" = 0 ] && apt-get install -y -qq python3-torch >/dev/null; } || { echo "bench-predict needs: sudo apt-get install -y python3-torch"; exit 1; }
	@awk 'BEGIN { printf "bench-predict: SCALE=$(SCALE) FLIPS=$(FLIPS): expect about %.0f minutes on 2 cores (SCALE=1 FLIPS=1: 36)\n", 36 * $(SCALE)^3 * $(FLIPS) }'
	$(GO) run ./plugins/engine/cmd/benchpredict -scale $(SCALE) -flips $(FLIPS)

# bench-gorgonia: the reference 2D U-Net's training step in the engine and in gorgonia,
# with batch norm and upsampling + convolution on both sides (gorgonia has neither instance
# norm nor transposed convolutions). Its own module keeps gorgonia out of go.mod.
bench-gorgonia: deps
	cd plugins/engine/cmd/benchgorgonia && $(GO) run . -steps 3

# bench-gpu: training samples/s of the same reference U-Nets on the CPU engine and on every
# Vulkan device found, with the share of each device's measured float32 peak (the whole step
# and the convolutions); on lavapipe (a CPU) only a smoke test on shrunk networks. TORCH names
# a Python whose PyTorch has CUDA, to time it beside the engine.
TORCH ?=
bench-gpu: deps
	$(GO) run ./plugins/engine/cmd/benchgpu -steps 3 $(if $(TORCH),-torch $(TORCH))

# gpu-bundle: bin/gpu-check.tar.xz, what .ci/gpu-check.sh needs on a machine with a GPU
# but no Go, apt or OpenBLAS (prebuilt parity tests, the GPU benchmark, vulkaninfo).
gpu-bundle: deps
	@.ci/gpu-bundle.sh

# bench-quality: the loop on real labelled images at fixed budgets, beside the shortcuts a
# careless model could hide behind: segmentation tasks cut into slabs from real scans (the
# tuning set the schedule was fitted on, the reporting set nothing was fitted on), and one
# real-image task of each other kind (detection, classification, IQA, enhancement) at 5
# and 10 minutes; the old schedule (commit OLD, built from git) at 20 minutes against the
# new one at 10 on the tuning task; the old runs' results are kept and not run again
# (RERUN_OLD=1). ONLY=TASK,RUN runs those; RECORD=1 records the learning curves behind
# the minimum step count into host/schedule/curves.json instead.
OLD ?= ddf52c3
bench-quality: deps realdata
	AMID_REALDATA=$${AMID_REALDATA:-$(CURDIR)/.cache/realdata} $(GO) run ./host/bench/cmd/benchquality -old $(OLD) \
		$(if $(RERUN_OLD),-rerun-old) $(if $(RECORD),-record) $(if $(ONLY),-only $(ONLY))

# bench-plugins-models: training samples/s of each built-in plugin's default model (its
# BenchmarkTrainStep) against PyTorch 1.13 on the same architecture, ratio printed.
bench-plugins-models: deps
	@.ci/bench-plugins-models.sh

# bench-viewer: one 512×512 slice of a 512×512×300 CT with a 16-class overlay, a full
# scroll through it (median and 95th percentile per slice), a correction's frame on that
# slice (a 10 mm brush dab, its changes, the redraw; beside the redraw alone), the same slice zoomed 2× into a
# 512×512 view with 40 boxes, the same slice with ten measurements drawn on it, and the memory the loaded study holds in a three-plane viewer
# (x-data: against its voxel data, image and labels).
bench-viewer: deps
	$(GO) test -run '^$$' -bench 'RenderSlice|EditSlice|MeasuredSlice|Scroll|ZoomedSlice|StudyMemory' -benchtime 5x ./viewer/widget/

# screenshots drives the real desktop binary under Xvfb and writes its screenshots;
# screenshots-check (part of make test) does the same into a temporary folder, and fails
# when Xvfb, xdotool or ImageMagick are missing and cannot be installed.
screenshots: desktop amid
	@.ci/screenshots.sh assets/screenshots

.PHONY: screenshots-check package
screenshots-check: desktop amid
	@out=$$(mktemp -d); .ci/screenshots.sh $$out; s=$$?; rm -rf $$out; exit $$s

# package builds the Linux desktop bundle bin/AMID.tar.xz from FyneApp.toml (icon
# assets/icon.png) with the fyne CLI. The CLI (fyne.io/tools) needs a newer Fyne than the
# app's, so it is run by version rather than pinned in go.mod's tool block; it builds the
# app with the app's own go.mod. The bundled program is amid-desktop, not the module's name
# amid (the CLI's): fyne package names it after its executable and has no option for the
# name, so fyne build (which embeds FyneApp.toml's metadata) writes it as amid-desktop and
# fyne package -executable bundles that file. The fyne CLI bumps the build number in
# FyneApp.toml, which is put back afterwards. As make build does, the plugins are built
# first and their sha256 linked into the program (fyne build takes -ldflags from GOFLAGS);
# .ci/package-plugins.sh then puts them in the bundle beside it, in bin/plugins, with the
# headless amid program (which the process and Slurm executors run) beside amid-desktop,
# and has the bundle's Makefile install them.
FYNE_CLI ?= fyne.io/tools/cmd/fyne@v1.7.4
package: deps plugins amid
	@mkdir -p $(BIN)/package
	@cp FyneApp.toml $(BIN)/.FyneApp.toml.orig
	@GOFLAGS="$$($(GO) env GOFLAGS) -ldflags=$(BUILTIN_LDFLAGS)" $(GO) run $(FYNE_CLI) build -os linux -o $(BIN)/package/amid-desktop && \
	  $(GO) run $(FYNE_CLI) package -os linux -executable $(BIN)/package/amid-desktop; \
	  s=$$?; cp $(BIN)/.FyneApp.toml.orig FyneApp.toml; rm -rf $(BIN)/.FyneApp.toml.orig $(BIN)/package; exit $$s
	@mv AMID.tar.xz $(BIN)/AMID.tar.xz
	@.ci/package-plugins.sh $(BIN)/AMID.tar.xz $(BIN)/plugins $(BIN)/amid $(PLUGINS)
	@tar -tJf $(BIN)/AMID.tar.xz | grep -q '^amid-desktop/usr/local/bin/amid-desktop$$' || { echo "package: bin/AMID.tar.xz holds no amid-desktop program"; exit 1; }
	@tar -tJf $(BIN)/AMID.tar.xz | grep -q '^amid-desktop/usr/local/bin/amid$$' || { echo "package: bin/AMID.tar.xz holds no amid program"; exit 1; }
	@echo "package: $(BIN)/AMID.tar.xz"

# generate regenerates the plugin protocol's Go code and the engine's SPIR-V shaders (make
# test checks both are current).
generate: deps
	$(GO) generate ./plugins/protocol ./plugins/engine/shaders

clean:
	rm -rf $(BIN)
