# attograd - build, test, install.
#
#   make                 build build/float/libattograd.a and build/float/attograd
#   make run             train the default task (the main job)
#   make check           the whole test suite, in float and in double
#   make REAL=double     build with ag_real = double
#   make PORTABLE=1      plain C kernels only, no x86 SIMD (build/float-portable)
#   make WERROR=1        warnings are errors (CI builds so; in a fresh build directory, as
#                        objects already built are not compiled again)
#   make check SANITIZE=address,undefined
#   TSAN_OPTIONS=die_after_fork=0 make check SANITIZE=thread
#   make install PREFIX=/usr/local DESTDIR=
#   make format          rewrite the C sources with clang-format (.clang-format)
#   make format-check    fail when a C source is not formatted as .clang-format says
#   make lint            cppcheck (warning, portability), clang's scan-build, the layer order
#   make web             the page in build/web (WebAssembly, emscripten); make serve, make check-web
#
CC ?= cc
CFLAGS ?= -O3 -g
PREFIX ?= /usr/local
REAL ?= float
SANITIZE ?=
# PORTABLE=1: plain C only, no x86 kernels (for other machines, WebAssembly)
PORTABLE ?= 0
# WERROR=1: -Werror, so that no warning stands (off by default: another
# compiler's new warning should not stop a user's build)
WERROR ?= 0

ifeq ($(filter $(REAL),float double),)
$(error REAL must be float or double, not '$(REAL)')
endif

BUILDROOT ?= build
# one directory per precision, sanitizer setting and compiler, so switching never mixes objects
# (SANITIZE=address,undefined builds in build/float-san-address-undefined)
comma := ,
BUILD_TAG := $(if $(filter 1,$(PORTABLE)),-portable)$(if $(SANITIZE),-san-$(subst $(comma),-,$(SANITIZE)))$(if $(filter-out cc,$(CC)),-$(notdir $(CC)))
BUILD := $(BUILDROOT)/$(REAL)$(BUILD_TAG)
WARN := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes
ifeq ($(WERROR),1)
WARN += -Werror
endif
# -fno-math-errno: nothing here reads errno after a math function, and without it
# GCC will not vectorise a loop that calls sqrt (the optimizers' element loops)
ALL_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) -fno-math-errno -Iinclude -MMD -MP
ALL_LDFLAGS := $(LDFLAGS)
# clang 14 writes DWARF 5, which Debian 12's valgrind (3.19) cannot read;
# `make check` runs the command under valgrind, so DWARF 4 when -g asks for it
ifneq ($(findstring clang,$(notdir $(CC))),)
ALL_CFLAGS += -fdebug-default-version=4
endif
ifeq ($(PORTABLE),1)
ALL_CFLAGS += -DAG_NO_SIMD
endif
ifeq ($(REAL),double)
ALL_CFLAGS += -DAG_REAL_DOUBLE
PC_CFLAGS := -DAG_REAL_DOUBLE
endif
ifneq ($(SANITIZE),)
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
ALL_LDFLAGS += -fsanitize=$(SANITIZE)
# The attention tiles' fully unrolled kernels, instrumented, take about two
# minutes to compile at -O3 and 20 s at -O1, most of a sanitized build's time
# (CI builds one): -O1 for that file alone, still every access checked.
SANITIZED_SLOW := $(BUILD)/src/kernels/attn_tile_simd.o
$(SANITIZED_SLOW): ALL_CFLAGS += -O1
endif
LIBS := -lm -lpthread

LIB_SRC := $(sort $(wildcard src/core/*.c src/kernels/*.c src/ops/*.c src/nn/*.c src/optim/*.c src/io/*.c src/check/*.c))
CLI_SRC := $(sort $(wildcard src/cli/*.c))
TEST_SRC := $(sort $(wildcard tests/*.c))
EXAMPLES := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)

LIB := $(BUILD)/libattograd.a
# the command's code but main(), for the tests of its parts (curves, plots, option tables)
CLI_LIB := $(BUILD)/libattograd_cli.a
BIN := $(BUILD)/attograd
TEST_BIN := $(BUILD)/tests/run_tests

CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)

.PHONY: all run demo check check-float check-double check-deps test examples install uninstall clean format format-check lint layers

all: $(LIB) $(BIN) $(EXAMPLES)

$(LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(CLI_LIB): $(filter-out %/main.o,$(CLI_OBJ))
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(BIN): $(CLI_OBJ) $(LIB)
	$(CC) $(ALL_CFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(ALL_LDFLAGS) $(LIBS)

$(BUILD)/examples/%: examples/%.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB) $(ALL_LDFLAGS) $(LIBS)

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -Isrc -I$(BUILD)/tests -c -o $@ $<

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# Every `Suite *suite_NAME(void)` in tests/*.c is run: adding a test file is
# all it takes to add a suite.
$(BUILD)/tests/suites.h: $(TEST_SRC)
	@mkdir -p $(@D)
	sed -n 's/^Suite \*\(suite_[a-z0-9_]*\)(void)$$/AG_SUITE(\1)/p' $(TEST_SRC) > $@.tmp && mv $@.tmp $@

$(BUILD)/tests/run_tests.o: $(BUILD)/tests/suites.h

$(TEST_BIN): $(TEST_OBJ) $(CLI_LIB) $(LIB)
	$(CC) $(ALL_CFLAGS) -o $@ $(TEST_OBJ) $(CLI_LIB) $(LIB) $(ALL_LDFLAGS) $(CHECK_LIBS) $(LIBS)

examples: $(EXAMPLES)

# The main job: train the default task (lookup) and watch it learn. The loss
# log goes to loss.csv; loss.png is drawn when gnuplot is installed.
run: $(BIN)
	$(BIN) train --log loss.csv --plot loss.png

demo: $(BIN)
	$(BIN) demo

# Check (the test framework) comes from Debian's packages. As root we install
# it; otherwise we say exactly what to run.
check-deps:
	@if ! pkg-config --exists check 2>/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Check is missing: installing it with apt-get (check, pkg-config)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq check pkg-config >/dev/null || exit 1; \
	  else \
	    echo "Check is missing. Install it with:  sudo apt-get install check pkg-config"; exit 1; \
	  fi; \
	fi

# Both precisions, each in its own build directory. Check runs one test at a
# time, so with -j2 the two precisions run side by side; each one's output is
# kept in its build directory and shown whole when it ends.
check: check-float check-double

check-float check-double: check-deps
	@mkdir -p $(BUILDROOT)/$(@:check-%=%)$(BUILD_TAG)
	@echo "$@: building and testing REAL=$(@:check-%=%), output shown when done"
	@log=$(BUILDROOT)/$(@:check-%=%)$(BUILD_TAG)/check.log; \
	if $(MAKE) --no-print-directory REAL=$(@:check-%=%) test >$$log 2>&1; then \
	  cat $$log; else cat $$log; echo "$@: failed (log: $$log)"; exit 1; fi

# Sanitized runs keep every test in one process (CK_FORK=no): LeakSanitizer
# then checks once, at the end, instead of at the exit of each test's forked
# child, which cost ~45 ms a test, most of the sanitizer run. A crash still
# fails the run, with the sanitizer's report; CK_FORK=yes forks as usual.
# Sanitized code runs several times slower, so the time bounds (Check's per
# test, the tests' own on the commands they run) are five times as long.
# Either variable set in the environment wins.
SANITIZED_ENV = $(if $(SANITIZE),CK_FORK=$${CK_FORK:-no} CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-5})

test: $(TEST_BIN) $(BIN) $(EXAMPLES)
	@echo "== tests: REAL=$(REAL)$(if $(SANITIZE), SANITIZE=$(SANITIZE)) =="
	AG_BIN=$(BIN) AG_EXAMPLES=$(BUILD)/examples AG_SANITIZE=$(SANITIZE) $(SANITIZED_ENV) $(TEST_BIN)

$(BUILD)/attograd.pc: Makefile include/attograd.h
	@mkdir -p $(@D)
	printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: attograd\nDescription: a small autograd in C, centered on attention\nVersion: %s\nCflags: -I$${includedir} %s\nLibs: -L$${libdir} -lattograd -lm -lpthread\n' \
	  '$(PREFIX)' "$$(sed -n 's/^#define AG_VERSION "\(.*\)"/\1/p' include/attograd.h)" '$(PC_CFLAGS)' > $@

install: $(LIB) $(BIN) $(BUILD)/attograd.pc
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/attograd
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/attograd
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libattograd.a
	install -m 644 include/attograd.h $(DESTDIR)$(PREFIX)/include/attograd.h
	install -m 644 include/attograd/core.h include/attograd/io.h include/attograd/nn.h $(DESTDIR)$(PREFIX)/include/attograd
	install -m 644 $(BUILD)/attograd.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/attograd.pc

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/attograd $(DESTDIR)$(PREFIX)/lib/libattograd.a \
	  $(DESTDIR)$(PREFIX)/include/attograd.h $(DESTDIR)$(PREFIX)/lib/pkgconfig/attograd.pc
	rm -rf $(DESTDIR)$(PREFIX)/include/attograd

clean:
	rm -rf $(BUILDROOT)

# ---- Formatting and static analysis (Debian: clang-format, cppcheck, clang-tools) ----
CLANG_FORMAT ?= clang-format
CPPCHECK ?= cppcheck
SCAN_BUILD ?= scan-build
FORMAT_SRC = $(sort $(wildcard include/*.h include/attograd/*.h src/*/*.c src/*/*.h tests/*.c tests/*.h tests/*/*.c examples/*.c bench/*.c web/*.c))

format:
	$(CLANG_FORMAT) -i $(FORMAT_SRC)

format-check:
	$(CLANG_FORMAT) --dry-run --Werror $(FORMAT_SRC)

# Every finding is fixed or carries a one-line inline suppression saying why;
# and no call runs against the layer order (docs/architecture.md).
lint: layers
	$(CPPCHECK) --quiet --enable=warning,portability --std=c11 -D__GNUC__ -Iinclude -Isrc \
	  --inline-suppr --error-exitcode=1 src examples
	rm -rf $(BUILDROOT)/lint
	$(SCAN_BUILD) --status-bugs -o $(BUILDROOT)/lint/report \
	  $(MAKE) --no-print-directory BUILDROOT=$(BUILDROOT)/lint CC=clang all

# The layer order, read from what each object calls (tests/lint/layers.sh).
layers: $(LIB) $(CLI_OBJ)
	sh tests/lint/layers.sh $(BUILD)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d)

# ---- Fuzzing (clang's libFuzzer): its rules are in fuzz.mk ----
include fuzz.mk

# ---- The browser build (emscripten): its rules are in web.mk ----
include web.mk
