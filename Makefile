# autopar build.  `make` builds bin/autopar and, where CUDA is found, the
# CUDA object beside it; `make bin/autopar` the command alone (everything
# but --backend cuda); `make test` runs every test binary; `make check-asan` runs them under AddressSanitizer and
# UndefinedBehaviorSanitizer; `make bench`, `make figures`, `make report`, `make install
# PREFIX=...`, `make clean`.  Optional CUDA parts are probed under CUDA_HOME;
# without them the CUDA entry points compile to stubs.

CC       ?= cc
PREFIX   ?= /usr/local
CUDA_HOME ?= /usr/local/cuda
BUILD    ?= build
SAN      ?=

WARN     := -Wall -Wextra -Werror -Wstrict-prototypes -Wvla -Wshadow
OPT      ?= -O2 -g
CFLAGS   := $(OPT) -std=c11 -D_GNU_SOURCE -pthread $(WARN) -MMD -MP -Icore -Iplanners -Iruntime -Ibench
CFLAGS   += -DAUTOPAR_DATADIR='"$(PREFIX)/share/autopar"'
LDLIBS   := -lglpk -ljansson -lcsv -lm -pthread
# The CPU runtime: OpenBLAS GEMM and Open MPI transport.
RT_PKGS  := openblas ompi-c
# On a fresh machine the packages are installed before pkg-config is asked
# for their flags below, so that the first `make`, `make test` or `make
# bench` builds (a `deps` prerequisite would run too late for that).
ifneq ($(filter-out clean,$(or $(MAKECMDGOALS),all)),)
ifneq ($(shell pkg-config --exists $(RT_PKGS) 2>/dev/null && echo ok),ok)
$(shell scripts/install-deps --if-missing >&2)
ifneq ($(.SHELLSTATUS),0)
$(error scripts/install-deps failed: see its message above)
endif
endif
endif
CFLAGS   += $(shell pkg-config --cflags $(RT_PKGS))
LDLIBS   += $(shell pkg-config --libs $(RT_PKGS))

ifneq ($(SAN),)
CFLAGS   += -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=address,undefined,float-cast-overflow
endif

# --- optional CUDA, cuDNN, NCCL -------------------------------------------
NVCC     := $(wildcard $(CUDA_HOME)/bin/nvcc)
CUDNN_H  := $(wildcard $(CUDA_HOME)/include/cudnn.h)
NCCL_H   := $(wildcard $(CUDA_HOME)/include/nccl.h)
ifeq ($(CUDA),0)
NVCC     :=
endif
# The CUDA backend (backend_cuda.c, cuda_*.cu) needs nvcc and cuDNN; its
# NCCL transport (transport_nccl.cu, comm_bench.cu) NCCL as well.  They
# make one shared object, CUDA_SO, beside the binary (installed in
# LIBDIR), which the binary loads the first time a command needs a GPU
# (runtime/cuda_load.h), so no other command loads the CUDA libraries;
# the object calls back into the binary, which exports its symbols for
# it (-rdynamic).  Without nvcc and cuDNN there is no object and
# cuda_stub.c says "not built with CUDA".  CUDA_ARCHS: the GPUs the
# kernels are compiled for, as compute capabilities: machine code (SASS)
# for each, so that none waits for the driver to compile PTX at its first
# launch, and PTX of the last, which the driver compiles for GPUs newer
# than all of them (docs/gpu.md, "Build").  By default A100 (80) and
# H100/H200 (90); CUDA_ARCH=N, the older setting, is CUDA_ARCHS=N.
CUDA_ARCHS ?= $(or $(CUDA_ARCH),80 90)
LIBDIR   := $(PREFIX)/lib/autopar
NVFLAGS  := -O2 -std=c++17 $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
            -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS)) \
            -Icore -Iruntime \
            -Xcompiler -Wall,-Wextra,-fPIC,-fvisibility=hidden --Werror all-warnings
SO_CFLAGS := -fPIC -fvisibility=hidden
ifneq ($(NVCC),)
CUDA_VER := $(shell $(NVCC) --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
CUDA_MSG := cuda $(CUDA_VER)
else
CUDA_MSG := cuda no
endif
ifneq ($(and $(NVCC),$(CUDNN_H)),)
CUDNN_MSG := cudnn yes
CUDA_LIB := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib))
# devices are counted through the CUDA runtime alone, opened by its soname
CUDART   := $(shell objdump -p $(CUDA_LIB)/libcudart.so 2>/dev/null | sed -n 's/^ *SONAME *//p')
LOAD_FLAGS := -isystem $(CUDA_HOME)/include -DAUTOPAR_LIBDIR='"$(LIBDIR)"' \
              -DAUTOPAR_CUDART='"$(or $(CUDART),libcudart.so)"'
LDFLAGS  += -rdynamic
LDLIBS   += -Wl,-rpath,$(CUDA_LIB) -ldl
GPU_OBJ  := $(BUILD)/runtime/cuda_load.o
NCCL_CU  := runtime/transport_nccl.cu runtime/comm_bench.cu
CUDA_CU  := $(filter-out $(NCCL_CU),$(wildcard runtime/*.cu))
# conv_algo.c and gpu_prec.c, plain C that the binary's tests call too,
# are built into the object as well (hidden copies: they hold no state);
# gpu_opts.c, which holds the command's settings, is the binary's alone
SO_OBJ   := $(CUDA_CU:%.cu=$(BUILD)/%.o) $(BUILD)/so/runtime/backend_cuda.o \
            $(BUILD)/so/runtime/conv_algo.o $(BUILD)/so/runtime/gpu_prec.o
SO_LIBS  := -L$(CUDA_LIB) -Wl,-rpath,$(CUDA_LIB) -lcudart -lcudnn -lcublas -lstdc++
else
CUDNN_MSG := cudnn no
GPU_OBJ  := $(BUILD)/runtime/cuda_stub.o
endif
ifneq ($(and $(NVCC),$(CUDNN_H),$(NCCL_H)),)
NCCL_MSG := nccl yes
# xpost.c, plain C that only the NCCL transport calls, is built into the
# object as well: the binary does not link it
SO_OBJ   += $(NCCL_CU:%.cu=$(BUILD)/%.o) $(BUILD)/so/runtime/xpost.o
SO_LIBS  += -lnccl
SO_CFLAGS += -DAUTOPAR_NCCL=1
LOAD_FLAGS += -DAUTOPAR_NCCL=1
else
NCCL_MSG := nccl no
endif
ifeq ($(MAKELEVEL),0)
$(info autopar: $(CUDA_MSG), $(CUDNN_MSG), $(NCCL_MSG) under $(CUDA_HOME))
endif

# --- sources ----------------------------------------------------------------
# core/ in its layers (docs/architecture.md), planners/ with algo/
CORE_SRC := $(wildcard core/*/*.c)
PLAN_SRC := $(wildcard planners/*.c planners/*/*.c)
BENCH_SRC := $(wildcard bench/*.c)
RT_SRC   := $(filter-out runtime/cuda_stub.c runtime/cuda_load.c runtime/backend_cuda.c, \
              $(wildcard runtime/*.c))
CLI_SRC  := $(wildcard cli/*.c)
TEST_SRC := $(wildcard tests/test_*.c)
# `make test ONLY="plan sim"`: only tests/test_plan.c and tests/test_sim.c.
ifneq ($(ONLY),)
TEST_SRC := $(foreach t,$(ONLY),$(or $(wildcard tests/test_$(t).c),$(error ONLY: no tests/test_$(t).c)))
endif

LIB_OBJ  := $(CORE_SRC:%.c=$(BUILD)/%.o) $(PLAN_SRC:%.c=$(BUILD)/%.o) \
            $(BENCH_SRC:%.c=$(BUILD)/%.o) $(RT_SRC:%.c=$(BUILD)/%.o) $(GPU_OBJ)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/libautopar.a
BIN      ?= bin/autopar
ifneq ($(SAN),)
BIN      := $(BUILD)/autopar
endif
CUDA_SO  := $(if $(SO_OBJ),$(dir $(BIN))libautopar-cuda.so)
TESTS    := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

# A change of flags (PREFIX, SAN, CUDA) rebuilds everything it affects.
FLAGS_NOW  := $(CC) $(CFLAGS) $(LDFLAGS) $(LDLIBS) $(NVFLAGS) $(SO_CFLAGS) $(SO_LIBS) \
              $(LOAD_FLAGS)
FLAGS_FILE := $(BUILD)/.flags
ifneq ($(FLAGS_NOW),$(file < $(FLAGS_FILE)))
$(shell mkdir -p $(BUILD))
$(file > $(FLAGS_FILE),$(FLAGS_NOW))
endif

.PHONY: all deps test check-asan bench figures report install clean
all: deps $(BIN) $(CUDA_SO)

deps:
	@scripts/install-deps --if-missing

$(BUILD)/%.o: %.c $(FLAGS_FILE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/runtime/%.o: runtime/%.cu $(FLAGS_FILE)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/runtime/cuda_load.o: CFLAGS += $(LOAD_FLAGS)
# The CPU kernels at -O3: their branch-free loops (cpu_kern.h) vectorise
# there, not at -O2; without -ffast-math the arithmetic is the same.  Their
# short copy and fill loops (im2col's rows) stay loops, not library calls.
$(BUILD)/runtime/cpu_%.o: CFLAGS += -O3 -fno-tree-loop-distribute-patterns

$(BUILD)/so/%.o: %.c $(FLAGS_FILE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SO_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BIN): $(CLI_OBJ) $(LIB) $(FLAGS_FILE)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

$(CUDA_SO): $(SO_OBJ) $(FLAGS_FILE)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(SO_OBJ) $(SO_LIBS)

$(BUILD)/tests/%: tests/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS) -lcmocka

# The CUDA kernel test loads the CUDA object, which calls back into the
# binary as it does into autopar: it links the whole library.
$(BUILD)/tests/test_cuda_kernels: tests/test_cuda_kernels.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -Wl,--whole-archive $(LIB) -Wl,--no-whole-archive \
		$(LDLIBS) -lcmocka

# The fuzz regression test replays tests/fuzz/ through the harnesses' own
# parser calls, built in with it.
$(BUILD)/tests/test_fuzz_regress: tests/test_fuzz_regress.c tests/fuzz/targets.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/fuzz $(LDFLAGS) -o $@ $(filter %.c,$^) $(LIB) $(LDLIBS) -lcmocka

# The test binaries find the CUDA object through AUTOPAR_CUDA_LIB (it is
# beside the binary, not beside them).
test: deps $(BIN) $(CUDA_SO) $(TESTS)
	@AUTOPAR_BIN=$(abspath $(BIN)) AUTOPAR_DATA=$(CURDIR) \
	$(if $(CUDA_SO),AUTOPAR_CUDA_LIB=$(abspath $(CUDA_SO))) scripts/run-tests $(TESTS)

# Open MPI keeps memory until exit: its leaks are suppressed (by library,
# so its plugins stay loaded and the full unwinder can name them).
check-asan:
	@OMPI_MCA_mca_base_component_disable_dlclose=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan-mpi.supp:fast_unwind_on_malloc=0 \
	$(MAKE) --no-print-directory BUILD=build-asan SAN=1 OPT='-O1 -g' test

# The main job: every cell of bench/default.matrix planned, validated and
# simulated into results/bench.csv (from scratch; `autopar bench` itself
# resumes an interrupted file), the small models' plans executed on CPU
# ranks (results/run.csv, predicted against measured), then the figures
# and the page that shows them with the key tables (results/report.html).
bench: all
	@mkdir -p results
	@rm -f results/bench.csv.new
	$(BIN) bench bench/default.matrix -o results/bench.csv.new
	@mv results/bench.csv.new results/bench.csv
	bench/sim-speed
	bench/pipedream-search
	bench/piper-search
	bench/ilp-sizes
	bench/graphpipe-compare
	bench/papers
	bench/megatron-table1
	bench/predict-sim
	BIN=$(BIN) bench/gpu-steps
	BIN=$(BIN) bench/scale-planners
	bench/run-small
	BIN=$(BIN) bench/startup
	@$(MAKE) --no-print-directory figures
	@$(MAKE) --no-print-directory report

figures: all
	scripts/figures results/bench.csv

# One static page of the results: every figure, the key tables, and the
# command behind each (scripts/report; it needs no build).
report:
	scripts/report results

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/autopar
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/autopar
ifneq ($(CUDA_SO),)
	install -d $(DESTDIR)$(LIBDIR)
	install -m 755 $(CUDA_SO) $(DESTDIR)$(LIBDIR)/
endif
	cp -R models profiles $(DESTDIR)$(PREFIX)/share/autopar/
	install -d $(DESTDIR)$(PREFIX)/share/autopar/scripts
	install -m 755 scripts/onnx2model $(DESTDIR)$(PREFIX)/share/autopar/scripts/

# --- fuzzing ------------------------------------------------------------------
# `make fuzz`: one libFuzzer harness per parser (tests/fuzz/fuzz.c built
# for each of FUZZ_NAMES, the parser calls in tests/fuzz/targets.c), built with clang under
# AddressSanitizer and UndefinedBehaviorSanitizer into FUZZ_DIR, each run
# FUZZ_SECONDS on its seed corpus tests/fuzz/corpus/NAME.  New inputs go to
# FUZZ_DIR/corpus/NAME (libFuzzer writes to the first corpus directory
# only), crashes to FUZZ_DIR/crash/NAME/, the logs to FUZZ_DIR/log/; the
# closing table gives each harness's executions.  The project's sources
# are built there too, with coverage; the runtime is left out, no parser
# needs it.  A crash's input belongs in tests/fuzz/regress/NAME/, which
# tests/test_fuzz_regress.c replays under `make test`.  The ONNX importer's
# converter is Python, out of libFuzzer's sight: its harness, fuzz_onnx,
# runs tests/fuzz/onnx_fuzz over `autopar models import` ($(BIN)) with
# libFuzzer's arguments (tests/fuzz/README.md), and
# tests/test_onnx_edges.c replays tests/fuzz/regress/onnx/.
FUZZ_CC      ?= clang
FUZZ_DIR     ?= build-fuzz
FUZZ_SECONDS ?= 600
FUZZ_CFLAGS  := -g -O1 -std=c11 -D_GNU_SOURCE -pthread -Wall -Wextra -MMD -MP \
                -fsanitize=address,undefined,integer -fno-sanitize=unsigned-integer-overflow \
                -fno-sanitize-recover=all \
                -Icore -Iplanners -Iruntime -Ibench -Itests/fuzz \
                -DAUTOPAR_DATADIR='"$(PREFIX)/share/autopar"'
FUZZ_LIBFUZZER := model pipedream profile cluster plan matrix piper
FUZZ_NAMES   := $(FUZZ_LIBFUZZER) onnx
FUZZ_OBJ     := $(patsubst %.c,$(FUZZ_DIR)/%.o,$(CORE_SRC) $(PLAN_SRC) $(BENCH_SRC) \
                  tests/fuzz/targets.c)
FUZZ_BINS    := $(FUZZ_LIBFUZZER:%=$(FUZZ_DIR)/fuzz_%)
# the python3 the converter runs under (core/util/datadir.c, python_path())
FUZZ_PYTHON  ?= $(or $(AUTOPAR_PYTHON),$(wildcard /usr/bin/python3),python3)

.PHONY: fuzz fuzz-build fuzz-deps
fuzz-deps:
	@scripts/install-deps --fuzz --if-missing

fuzz-build: fuzz-deps
	@$(MAKE) --no-print-directory $(FUZZ_BINS) $(FUZZ_DIR)/fuzz_onnx

$(FUZZ_DIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BINS): $(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -DFUZZ_TARGET='"$*"' -o $@ $< $(FUZZ_OBJ) \
		-lglpk -ljansson -lcsv -lm -pthread

$(FUZZ_DIR)/fuzz_onnx: tests/fuzz/onnx_fuzz $(BIN)
	@mkdir -p $(dir $@)
	printf '#!/bin/sh\nexec "%s" "%s" --autopar "%s" "$$@"\n' '$(FUZZ_PYTHON)' \
		'$(CURDIR)/tests/fuzz/onnx_fuzz' '$(abspath $(BIN))' >$@
	chmod +x $@

fuzz: fuzz-build
	@mkdir -p $(FUZZ_DIR)/log $(FUZZ_DIR)/tmp
	@st=0; for n in $(FUZZ_NAMES); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$n $(FUZZ_DIR)/crash/$$n; \
		echo "fuzz: $$n for $(FUZZ_SECONDS) s"; \
		AUTOPAR_DATA=$(CURDIR) TMPDIR=$(CURDIR)/$(FUZZ_DIR)/tmp \
		$(FUZZ_DIR)/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
			-print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/crash/$$n/ \
			$(FUZZ_DIR)/corpus/$$n tests/fuzz/corpus/$$n \
			>$(FUZZ_DIR)/log/$$n.log 2>&1 || st=1; \
	done; \
	echo "fuzz: harness, executions, crash inputs (logs in $(FUZZ_DIR)/log)"; \
	for n in $(FUZZ_NAMES); do \
		ex=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_DIR)/log/$$n.log); \
		cr=$$(ls $(FUZZ_DIR)/crash/$$n | wc -l); \
		printf '  %-10s %12s %4s\n' $$n "$${ex:-?}" $$cr; \
		for f in $(FUZZ_DIR)/crash/$$n/*; do [ -e "$$f" ] && echo "    $$f"; done; \
	done; \
	exit $$st

clean:
	rm -rf build build-asan bin

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
ifneq ($(filter fuzz fuzz-build $(FUZZ_DIR)/%,$(MAKECMDGOALS)),)
-include $(shell find $(FUZZ_DIR) -name '*.d' 2>/dev/null)
endif
