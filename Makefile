# Makefile - builds mha-repl (the teaching REPL) and mha.so (the same library for a stock lua5.4),
# and runs the tests. Every target first installs missing Debian packages (tools/deps.sh).

BUILD  ?= build
# -O2, and the loops it leaves scalar for want of an epilogue vectorized too (-O3's cost model): a
# head's scale and causal fill, the elementwise ops, in SSE2 where no set of core/kernels reaches;
# without -ffast-math no sum is reordered, so the bits stay those of the scalar loops
CFLAGS ?= -O2 -g -fvect-cost-model=dynamic
SAN    ?=
WARN    = -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wvla -Wno-unused-parameter
DEFS    = -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -D_XOPEN_SOURCE=700
# pkg-config runs when a recipe needs it, that is after `deps` has installed it
LUA_CFLAGS = $(shell pkg-config --cflags lua5.4)
LUA_LIBS   = $(shell pkg-config --libs lua5.4)
RL_LIBS    = $(shell pkg-config --libs readline)
# the Jupyter kernel and the notebook export: ZeroMQ, jansson (JSON), OpenSSL's libcrypto (HMAC-SHA256)
NB_CFLAGS  = $(shell pkg-config --cflags libzmq jansson libcrypto)
NB_LIBS    = $(shell pkg-config --libs libzmq jansson libcrypto) -lpthread
# zlib: deflate and CRC-32 of .npz archives (core/io/npz.c)
CORE_LIBS  = -lz -lm
ALL_CFLAGS = $(DEFS) $(WARN) $(CFLAGS) $(SAN) -fPIC -Icore -Ilua/bind -Ilua/sys -Ilua/kernel -Ilua/notebook -I$(BUILD)

# Sources, room by room (README.md, Layout). Each Lua helper is embedded under the module name it is
# required by; a new file is added here by hand.
# core/, room by room in reading order (docs/architecture.md says what each room holds)
CORE_SRC  = core/base/status.c core/base/alloc.c
CORE_SRC += core/kernels/kernels.c core/kernels/attention_fused.c core/kernels/rows.c core/kernels/pool.c
CORE_SRC += core/tensor/tensor.c core/tensor/rng.c \
            core/tensor/ops.c core/tensor/ops_elementwise.c core/tensor/ops_reduce.c \
            core/tensor/ops_join.c core/tensor/ops_matmul.c
CORE_SRC += core/io/npy.c core/io/npz.c
CORE_SRC += core/autograd/autograd.c core/autograd/autograd_ops.c
CORE_SRC += core/nn/softmax.c core/nn/linear.c core/nn/layer_norm.c core/nn/embedding.c \
            core/nn/cross_entropy.c core/nn/positional.c core/nn/rope.c core/nn/sample.c
CORE_SRC += core/attention/masks.c core/attention/window.c core/attention/alibi.c
CORE_SRC += core/attention/sdpa_head.c core/attention/sdpa.c core/attention/sdpa_batch.c core/attention/heads.c \
            core/attention/multihead.c core/attention/multihead_grad.c
CORE_SRC += core/optim/optim.c
BIND_SRC  = lua/bind/lmha.c lua/bind/ltensor.c lua/bind/lmultihead.c
BIND_SRC += lua/bind/lauxmha.c
BIND_SRC += lua/bind/lautograd.c
BIND_SRC += lua/bind/lnpz.c lua/bind/loptim.c
BIND_SRC += lua/bind/lpositions.c
SYS_SRC   = lua/sys/lterm.c lua/sys/lgnuplot.c
SYS_SRC  += lua/sys/ldir.c
SYS_SRC  += lua/sys/lproc.c
REPL_SRC  = lua/repl/repl.c lua/repl/history.c lua/repl/traceback.c lua/repl/lazy.c
REPL_SRC += lua/repl/signals.c
REPL_SRC += lua/repl/modes.c lua/repl/usage.c lua/repl/completion.c
KERNEL_SRC = lua/kernel/kernel.c
NOTEBOOK_SRC = lua/notebook/ljson.c
EMBED     = mha=lua/mha.lua mha.repl=lua/repl/repl.lua mha.repl.complete=lua/repl/complete.lua \
            mha.repl.printer=lua/repl/printer.lua mha.repl.save=lua/repl/save.lua \
            mha.display=lua/show/display.lua mha.text=lua/show/text.lua mha.plot=lua/show/plot.lua \
            mha.plot.figure=lua/show/figure.lua mha.textmap=lua/show/textmap.lua \
            mha.attention_map=lua/show/attention_map.lua \
            mha.lesson=lua/lesson/lesson.lua mha.lesson.check=lua/lesson/check.lua \
            mha.lesson.files=lua/lesson/files.lua \
            mha.lesson.pager=lua/lesson/pager.lua \
            mha.lesson.tools=lua/lesson/tools.lua \
            mha.kernel=lua/kernel/kernel.lua \
            mha.notebook=lua/notebook/notebook.lua \
            mha.notebook.html=lua/notebook/html.lua \
            mha.help=lua/help/help.lua mha.docs_mha=lua/help/docs_mha.lua \
            mha.docs_display=lua/help/docs_display.lua mha.docs_lesson=lua/help/docs_lesson.lua
EMBED    += mha.nn=lua/nn/nn.lua mha.nn.module=lua/nn/module.lua mha.nn.layers=lua/nn/layers.lua
EMBED    += mha.nn.optim=lua/nn/optim.lua mha.docs_nn=lua/help/docs_nn.lua
EMBED    += mha.nn.transformer=lua/nn/transformer.lua mha.nn.attention=lua/nn/attention.lua
EMBED    += mha.nn.cache=lua/nn/cache.lua mha.nn.hooks=lua/nn/hooks.lua
EMBED    += mha.interp=lua/interp/interp.lua mha.interp.lens=lua/interp/lens.lua
EMBED    += mha.docs_interp=lua/help/docs_interp.lua mha.help.zh_interp=lua/help/zh_interp.lua
EMBED    += mha.help.zh_nn=lua/help/zh_nn.lua
EMBED    += mha.tasks=lua/train/tasks.lua mha.train=lua/train/train.lua mha.heads=lua/train/heads.lua
EMBED    += mha.models=lua/train/models.lua mha.docs_train=lua/help/docs_train.lua
EMBED    += mha.data=lua/train/data.lua mha.tokenizer=lua/train/tokenizer.lua
EMBED    += mha.writing=lua/train/writing.lua mha.mlm=lua/train/mlm.lua
EMBED    += mha.help.entry=lua/help/entry.lua
EMBED    += mha.notebook.outputs=lua/notebook/outputs.lua mha.notebook.record=lua/notebook/record.lua
EMBED    += mha.i18n=lua/i18n/i18n.lua mha.i18n.en=lua/i18n/en.lua mha.i18n.zh=lua/i18n/zh.lua
TESTS     = test_tensor test_ops test_rng test_npy test_kernels test_attention test_repl test_lessons_pty \
            test_autograd
TESTS    += test_npz test_optim
TESTS    += test_alloc test_pool
TESTS    += test_modern
TESTS    += test_decode

LUA_FILES = $(foreach e,$(EMBED),$(word 2,$(subst =, ,$(e))))
EMBED    += mha.repl.habits=lua/repl/habits.lua mha.help.zh=lua/help/zh.lua \
            mha.help.zh_text=lua/help/zh_text.lua
EMBED    += mha.raise=lua/bind/raise.lua
EMBED    += mha.options=lua/bind/options.lua
# the fast kernels: two sources, core/kernels/kernels_simd.c and rows_simd.c, each compiled once per
# instruction set (the AVX ones are empty off x86-64); a * b + c contracts to one FMA where the set has it
KERNEL_SETS = portable avx2 avx512
CORE_OBJ  = $(CORE_SRC:%.c=$(BUILD)/%.o) $(KERNEL_SETS:%=$(BUILD)/core/kernels/kernels_%.o) \
            $(KERNEL_SETS:%=$(BUILD)/core/kernels/rows_%.o)
LIB_OBJ   = $(BIND_SRC:%.c=$(BUILD)/%.o) $(SYS_SRC:%.c=$(BUILD)/%.o) $(BUILD)/embedded.o
TEST_BIN  = $(addprefix $(BUILD)/tests/,$(TESTS))
CORE_H    = $(wildcard core/*/*.h)
LUA_H     = $(wildcard lua/*/*.h)

.PHONY: all run test asan fuzz bench bench-grad bench-train bench-generate models golden docs clean install-kernel deps deps-run deps-test deps-bench deps-fuzz \
        classroom classroom-report deps-hub
.DEFAULT_GOAL := all

# all: the REPL binary and the loadable module, linked at the top for convenience
all: $(BUILD)/mha-repl $(BUILD)/mha.so
	@[ "$(BUILD)" != build ] || { ln -sf build/mha-repl mha-repl; ln -sf build/mha.so mha.so; }

# run: start the REPL on the first lesson
run: deps-run all
	$(BUILD)/mha-repl --lesson 1

# test: build and run every suite; the last line is "N passed, M failed"
test: deps-test all $(TEST_BIN)
	tests/run.sh $(BUILD)

# asan: the whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer
asan:
	$(MAKE) BUILD=build/asan CFLAGS="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" test

# fuzz: each libFuzzer target of tests/fuzz/ (the .npy and .npz readers, the Lua API) for FUZZ_SECONDS (default 120)
# from its committed corpus, built with clang under AddressSanitizer and UndefinedBehaviorSanitizer
FUZZ_SECONDS ?= 120
FUZZ_BUILD    = build/fuzz
FUZZ_TARGETS  = fuzz_npy fuzz_npz fuzz_lua
fuzz: deps-fuzz
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang CFLAGS="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize=fuzzer-no-link" \
	  $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/tests/%)
	tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# golden: regenerate the lesson transcripts in tests/golden/ on purpose
golden: deps-test all
	tests/golden.sh $(BUILD) --update

# docs: the API reference (docs/api.md, docs/api.zh.md) written from the help entries, as ?name prints each;
# tests/sh/test_docs.sh fails when they differ
docs: all
	COLUMNS=100 $(BUILD)/mha-repl tools/api_docs.lua en > docs/api.md.tmp && mv docs/api.md.tmp docs/api.md
	COLUMNS=100 $(BUILD)/mha-repl tools/api_docs.lua zh > docs/api.zh.md.tmp && mv docs/api.zh.md.tmp docs/api.zh.md

# lint: the architecture's rules (tools/lint.lua): no include, room or require cycle, core includes
# no Lua, no file over 900 lines, no function over 100, no comment past column 100 (as test_lint.sh)
.PHONY: lint
lint: all
	$(BUILD)/mha-repl tools/lint.lua

# install-kernel: the Jupyter kernelspec "mha-repl" for this user (jupyter kernelspec list shows it)
KERNEL_DIR ?= $(or $(XDG_DATA_HOME),$(HOME)/.local/share)/jupyter/kernels/mha-repl
install-kernel: all
	@mkdir -p "$(KERNEL_DIR)"
	MHA_KERNEL_EXE="$$(realpath $(BUILD)/mha-repl)" $(BUILD)/mha-repl -e 'io.write(require("mha.json").encode({argv = {os.getenv("MHA_KERNEL_EXE"), "--kernel", "{connection_file}"}, display_name = "mha-repl (Lua 5.4)", language = "lua", interrupt_mode = "signal"}, 1), "\n")' > "$(KERNEL_DIR)/kernel.json.tmp"
	mv "$(KERNEL_DIR)/kernel.json.tmp" "$(KERNEL_DIR)/kernel.json"
	@echo "installed the kernelspec mha-repl in $(KERNEL_DIR)"

# classroom: a JupyterHub for a class (classroom/, docs/classroom.md), in the foreground, as root:
# accounts from classroom/roster.txt, the kernel registered for every user, the lessons as notebooks
SYSTEM_KERNEL_DIR = /usr/local/share/jupyter/kernels/mha-repl
classroom: deps-hub all
	$(MAKE) --no-print-directory install-kernel KERNEL_DIR=$(SYSTEM_KERNEL_DIR)
	classroom/classroom.sh $(BUILD)

# classroom-report: every student's answers to every exercise, as a table (in the teacher's
# language) and classroom-report.csv (mode 0600: it names students and their answers)
classroom-report: all
	umask 077; $(BUILD)/mha-repl classroom/report.lua $(or $(MHA_CLASSROOM_ROSTER),classroom/roster.txt) classroom-report.csv

# clean: remove everything the build made
clean:
	rm -rf build mha-repl mha.so

deps:
	@tools/deps.sh build
deps-run:
	@tools/deps.sh run
deps-test:
	@tools/deps.sh test
deps-bench:
	@tools/deps.sh bench
deps-fuzz:
	@tools/deps.sh fuzz
deps-hub:
	@tools/deps.sh hub

$(BUILD)/core/%.o: core/%.c $(CORE_H) | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# a per-set object: kernels_SET.o from kernels_simd.c, rows_SET.o from rows_simd.c; -Wno-psabi:
# GCC notes that passing a wide vector by value changed ABI in GCC 4.6, for static inline helpers
# that never cross an object's boundary (its diagnostic pragma does not silence the note)
SET_CFLAGS = $(ALL_CFLAGS) -ffp-contract=fast -Wno-psabi
SET_DEFS_portable =
SET_DEFS_avx2     = -DMHA_SIMD_AVX2
SET_DEFS_avx512   = -DMHA_SIMD_AVX512
$(BUILD)/core/kernels/kernels_%.o: core/kernels/kernels_simd.c $(CORE_H) | deps
	@mkdir -p $(@D)
	$(CC) $(SET_CFLAGS) $(SET_DEFS_$*) -c $< -o $@
$(BUILD)/core/kernels/rows_%.o: core/kernels/rows_simd.c $(CORE_H) | deps
	@mkdir -p $(@D)
	$(CC) $(SET_CFLAGS) $(SET_DEFS_$*) -c $< -o $@

$(BUILD)/lua/%.o: lua/%.c $(CORE_H) $(LUA_H) | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LUA_CFLAGS) -c $< -o $@

$(BUILD)/bin2c: tools/bin2c.c | deps
	@mkdir -p $(@D)
	$(CC) -O1 -o $@ $<

$(BUILD)/embedded.c: $(BUILD)/bin2c $(LUA_FILES)
	$(BUILD)/bin2c $@ $(EMBED)

$(BUILD)/embedded.o: $(BUILD)/embedded.c lua/bind/embedded.h
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libmhacore.a: $(CORE_OBJ)
	rm -f $@; ar rcs $@ $^

$(BUILD)/lua/kernel/%.o: lua/kernel/%.c $(CORE_H) $(LUA_H) | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LUA_CFLAGS) $(NB_CFLAGS) -c $< -o $@

$(BUILD)/lua/notebook/%.o: lua/notebook/%.c $(LUA_H) | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LUA_CFLAGS) $(NB_CFLAGS) -c $< -o $@

$(BUILD)/lua/repl/%.o: lua/repl/%.c $(CORE_H) $(LUA_H) | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LUA_CFLAGS) $(NB_CFLAGS) -c $< -o $@

$(BUILD)/mha-repl: $(REPL_SRC:%.c=$(BUILD)/%.o) $(KERNEL_SRC:%.c=$(BUILD)/%.o) $(NOTEBOOK_SRC:%.c=$(BUILD)/%.o) \
                   $(LIB_OBJ) $(BUILD)/libmhacore.a
	$(CC) $(CFLAGS) $(SAN) -o $@ $^ $(LUA_LIBS) $(RL_LIBS) $(NB_LIBS) $(CORE_LIBS)

$(BUILD)/mha.so: $(LIB_OBJ) $(BUILD)/libmhacore.a
	$(CC) $(CFLAGS) $(SAN) -shared -o $@ $^ $(CORE_LIBS)

# each tests/core/test_X.c is one test program linked against the core; tests/repl/ ones drive a pty
$(BUILD)/tests/%: tests/core/%.c tests/core/splitmix.h tests/check.h tests/manifest.h $(BUILD)/libmhacore.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -o $@ $< $(BUILD)/libmhacore.a $(CORE_LIBS)

# the fuzz targets (make fuzz builds them with clang): the .npy/.npz ones need the core, the Lua one the bindings too
$(BUILD)/tests/fuzz_npy $(BUILD)/tests/fuzz_npz: $(BUILD)/tests/fuzz_%: tests/fuzz/fuzz_%.c $(BUILD)/libmhacore.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $< $(BUILD)/libmhacore.a $(CORE_LIBS)

$(BUILD)/tests/fuzz_lua: tests/fuzz/fuzz_lua.c $(LIB_OBJ) $(BUILD)/libmhacore.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LUA_CFLAGS) -fsanitize=fuzzer -o $@ $< $(LIB_OBJ) $(BUILD)/libmhacore.a $(LUA_LIBS) $(CORE_LIBS)

$(BUILD)/tests/%: tests/repl/%.c tests/repl/pty_session.h tests/check.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -o $@ $< -lutil

# bench: the cases timed in C (one thread, then every core) beside NumPy and torch, then from Lua through
# mha-repl beside those. No malloc settings (the caching allocator does that job, core/base/alloc.h); NumPy
# runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset, so OpenBLAS picks its kernels as a user's does.
# ISA=avx2 (or portable) times another kernel variant of the same CPU; each table's header names the one that ran
# Each part saves its rows ($(BUILD)/bench_*.txt); bench/table.lua ends by writing $(BUILD)/bench.md from them.
ISA        ?=
BENCH_ENV   = env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(if $(ISA),MHA_ISA=$(ISA))
BENCH_NUMPY = $(BENCH_ENV) /usr/bin/python3 bench/bench_numpy.py
# The fair peer: where OpenBLAS, left to choose, falls back to its generic Prescott kernel on this
# CPU, $(call BENCH_FAIR,COMMAND) is COMMAND told the kernel it should have chosen (SkylakeX, Zen or
# Haswell: bench_numpy.py --coretype, asked once), else empty; every part times it beside the rule's
# peer, in the columns "fair ms" and "ours/fair".
BENCH_CORETYPE = $(eval BENCH_CORETYPE := $$(shell $(BENCH_NUMPY) --coretype 2>/dev/null))$(BENCH_CORETYPE)
BENCH_FAIR  = $(if $(BENCH_CORETYPE),env OPENBLAS_CORETYPE=$(BENCH_CORETYPE) OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(1))
bench: deps-bench all $(BUILD)/bench
	$(if $(ISA),MHA_ISA=$(ISA)) $(BUILD)/bench --numpy '$(BENCH_NUMPY)' --fair '$(call BENCH_FAIR,/usr/bin/python3 bench/bench_numpy.py)' \
		--save $(BUILD)/bench_c.txt
	$(if $(ISA),MHA_ISA=$(ISA)) $(BUILD)/mha-repl bench/bench.lua --probe '$(BUILD)/bench --probe' --save $(BUILD)/bench_lua.txt \
		--c '$(BUILD)/bench --threads 1 --cpu --save /dev/stdout --only' $(BUILD)/bench_c.txt
	$(BUILD)/mha-repl bench/table.lua $(BUILD)

# bench-grad: MultiheadAttention forward + backward beside torch 1.13's autograd, and the attention backward's memory
bench: bench-grad
bench-grad: deps-bench $(BUILD)/bench_grad
	$(BENCH_ENV) $(BUILD)/bench_grad --torch '/usr/bin/python3 bench/bench_grad_torch.py' \
		--fair '$(call BENCH_FAIR,/usr/bin/python3 bench/bench_grad_torch.py)' --save $(BUILD)/bench_grad.txt

# bench-train: one AdamW training step of the induction model and of nanoGPT's CPU configuration beside torch 1.13,
# one thread and every core
bench: bench-train
bench-train: deps-bench all
	$(BENCH_ENV) $(BUILD)/mha-repl bench/bench_train.lua '/usr/bin/python3 bench/bench_train_torch.py' \
		--fair '$(call BENCH_FAIR,/usr/bin/python3 bench/bench_train_torch.py)' --save $(BUILD)/bench_train.txt

# bench-generate: 256 tokens by model:generate with the KV cache and without, beside a cached loop in torch 1.13
bench: bench-generate
bench-generate: deps-bench all
	$(BENCH_ENV) MHA_THREADS=1 $(BUILD)/mha-repl bench/bench_generate.lua '/usr/bin/python3 bench/bench_generate_torch.py' \
		--fair '$(call BENCH_FAIR,/usr/bin/python3 bench/bench_generate_torch.py)' --save $(BUILD)/bench_generate.txt

# models: the checkpoints mha.load_model ships (models/*.npz, committed), trained from a fixed seed
models: all
	MHA_THREADS=1 $(BUILD)/mha-repl tools/train_models.lua models

$(BUILD)/bench_grad: bench/bench_grad.c bench/peak.c bench/peak.h $(BUILD)/libmhacore.a
	$(CC) $(ALL_CFLAGS) -o $@ bench/bench_grad.c bench/peak.c $(BUILD)/libmhacore.a -lm

$(BUILD)/bench: bench/bench.c bench/peak.c bench/peak.h $(BUILD)/libmhacore.a
	$(CC) $(ALL_CFLAGS) -o $@ bench/bench.c bench/peak.c $(BUILD)/libmhacore.a $(CORE_LIBS)
