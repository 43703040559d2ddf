# fuzz.mk - the libFuzzer targets, included by the Makefile (see docs/fuzzing.md).
#   make fuzz                   build $(BUILDROOT)/fuzz/fuzz_safetensors, fuzz_cli, fuzz_paths
#                               and fuzz_gpt_file
#   make fuzz-run               fuzz each for FUZZ_SECONDS (default 60); fails on a crash
#   make fuzz-run-safetensors   only the safetensors reader
#   make fuzz-run-cli           only the command-line parsers
#   make fuzz-run-paths         only the handling of file names (in a scratch tree under /tmp)
#   make fuzz-run-gpt           only GPT checkpoints, read as sample, eval and train --load do
# New inputs go to $(BUILDROOT)/fuzz/corpus, corpus_cli, corpus_paths and
# corpus_gpt; the seeds in tests/fuzz are not touched. A crash is saved as
# $(BUILDROOT)/fuzz/crash-* (the CLI's as cli-crash-*, the paths' as
# paths-crash-*, the GPT's as gpt-crash-*): replay it by giving the file to
# the target.
# See docs/fuzzing.md.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_DIR := $(BUILDROOT)/fuzz
FUZZ_BIN := $(FUZZ_DIR)/fuzz_safetensors
FUZZ_CLI_BIN := $(FUZZ_DIR)/fuzz_cli
FUZZ_PATHS_BIN := $(FUZZ_DIR)/fuzz_paths
FUZZ_GPT_BIN := $(FUZZ_DIR)/fuzz_gpt_file
FUZZ_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) -O1 -g -Iinclude -Isrc \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CLI_SRC := $(filter-out src/cli/main.c,$(CLI_SRC))

.PHONY: fuzz fuzz-run fuzz-run-safetensors fuzz-run-cli fuzz-run-paths fuzz-run-gpt

fuzz: $(FUZZ_BIN) $(FUZZ_CLI_BIN) $(FUZZ_PATHS_BIN) $(FUZZ_GPT_BIN)

# Every source is compiled once with the sanitizers and libFuzzer's coverage
# (fuzzer-no-link) and linked into each target with its own entry point.
FUZZ_OBJ_CFLAGS := $(subst -fsanitize=fuzzer$(comma),-fsanitize=fuzzer-no-link$(comma),$(FUZZ_CFLAGS)) -MMD -MP
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_CLI_OBJ := $(FUZZ_CLI_SRC:%.c=$(FUZZ_DIR)/obj/%.o)
-include $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_CLI_OBJ:.o=.d)

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_OBJ_CFLAGS) -c -o $@ $<

# The attention tiles' SIMD templates inline into a few huge functions:
# with the sanitizers at -O1 clang takes about 3 minutes on them (the rest of
# the build's critical path is under 2), at -O0 one. The fuzz targets reach
# them only through small models.
$(FUZZ_DIR)/obj/src/kernels/attn_tile_simd.o: FUZZ_OBJ_CFLAGS += -O0

FUZZ_HDR := include/attograd.h $(wildcard include/attograd/*.h src/*/*.h)

$(FUZZ_BIN): tests/fuzz/fuzz_safetensors.c $(FUZZ_LIB_OBJ) $(FUZZ_HDR)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c %.o,$^) -lm

# the parse steps of the commands, without main(): libFuzzer brings its own
$(FUZZ_CLI_BIN): tests/fuzz/fuzz_cli.c $(FUZZ_CLI_OBJ) $(FUZZ_LIB_OBJ) $(FUZZ_HDR)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c %.o,$^) -lm

# the file layer's and the command's handling of names, with the same sources
$(FUZZ_PATHS_BIN): tests/fuzz/fuzz_paths.c $(FUZZ_CLI_OBJ) $(FUZZ_LIB_OBJ) $(FUZZ_HDR)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c %.o,$^) -lm

# GPT checkpoints as the commands read them: the library alone
$(FUZZ_GPT_BIN): tests/fuzz/fuzz_gpt_file.c $(FUZZ_LIB_OBJ) $(FUZZ_HDR)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c %.o,$^) -lm

fuzz-run: fuzz-run-safetensors fuzz-run-cli fuzz-run-paths fuzz-run-gpt

fuzz-run-safetensors: $(FUZZ_BIN)
	@mkdir -p $(FUZZ_DIR)/corpus
	$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 \
	  -dict=tests/fuzz/safetensors.dict -artifact_prefix=$(FUZZ_DIR)/ -print_final_stats=1 \
	  $(FUZZ_DIR)/corpus tests/fuzz/corpus_safetensors

# usage messages go to stderr: -close_fd_mask=2 keeps them off the screen
fuzz-run-cli: $(FUZZ_CLI_BIN)
	@mkdir -p $(FUZZ_DIR)/corpus_cli
	$(FUZZ_CLI_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=512 -timeout=10 -close_fd_mask=2 \
	  -dict=tests/fuzz/cli.dict -artifact_prefix=$(FUZZ_DIR)/cli- -print_final_stats=1 \
	  $(FUZZ_DIR)/corpus_cli tests/fuzz/corpus_cli

# usage messages (two names of one file) go to stderr, closed as for the CLI
fuzz-run-paths: $(FUZZ_PATHS_BIN)
	@mkdir -p $(FUZZ_DIR)/corpus_paths
	$(FUZZ_PATHS_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=600 -timeout=10 -close_fd_mask=2 \
	  -dict=tests/fuzz/paths.dict -artifact_prefix=$(abspath $(FUZZ_DIR))/paths- -print_final_stats=1 \
	  $(FUZZ_DIR)/corpus_paths tests/fuzz/corpus_paths

fuzz-run-gpt: $(FUZZ_GPT_BIN)
	@mkdir -p $(FUZZ_DIR)/corpus_gpt
	$(FUZZ_GPT_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -timeout=10 \
	  -dict=tests/fuzz/gpt.dict -artifact_prefix=$(FUZZ_DIR)/gpt- -print_final_stats=1 \
	  $(FUZZ_DIR)/corpus_gpt tests/fuzz/corpus_gpt
