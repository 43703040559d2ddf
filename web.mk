# web.mk - the browser build, included by the Makefile (see docs/web.md).
#   make web         a static site in $(BUILDROOT)/web: index.html, attograd.js, attograd.wasm
#                    and the page's files; the library and the command compiled to WebAssembly
#   make serve       serve it on http://127.0.0.1:$(WEB_PORT)/ (python3's http.server)
#   make check-web   build it, open it in headless Chromium and check it (tests/web)
# Needs Debian's emscripten (apt-get install emscripten); check-web also needs
# chromium and the npm packages of package-lock.json (npm ci). Nothing here
# is built by `make` or `make check`.
EMCC ?= emcc
# Debian's emcc runs its JavaScript passes with the machine's node, which
# finds their modules (acorn) only here
EMCC_ENV ?= NODE_PATH=/usr/share/nodejs
PYTHON ?= python3
WEB_PORT ?= 8000
WEB_DIR := $(BUILDROOT)/web
WEB_OBJ_DIR := $(BUILDROOT)/wasm
# The plain C kernels (as make PORTABLE=1), auto-vectorised to wasm SIMD128; one thread.
# The code that does the numbers is built for speed; the command's own code, the file
# formats and the gradient checker (flags, messages, parsing: none of it hot) for size,
# which keeps the module well under the page's 500 KB.
WEB_OPT = -O3
WEB_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(WEB_OPT) -msimd128 -fno-math-errno \
  -DAG_NO_SIMD -Iinclude -MMD -MP
WEB_SRC := $(LIB_SRC) $(CLI_SRC) web/glue.c web/posix.c
WEB_OBJ := $(WEB_SRC:%.c=$(WEB_OBJ_DIR)/%.o)
# every agw_ function of web/glue.c, and what web/api.js uses
paren := (
space := $(empty) $(empty)
WEB_EXPORTS := _main _malloc _free \
  $(patsubst %,_%,$(shell sed -n 's/^[a-z][a-z_ *]* \**\(agw_[a-z_0-9]*\)$(paren).*/\1/p' web/glue.c))
WEB_LDFLAGS := -sMODULARIZE=1 -sEXPORT_NAME=attogradModule -sENVIRONMENT=web,worker \
  -sINVOKE_RUN=0 -sEXIT_RUNTIME=1 -sFORCE_FILESYSTEM=1 \
  -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=2GB -sABORTING_MALLOC=0 \
  -sEXPORTED_FUNCTIONS=$(subst $(space),$(comma),$(strip $(WEB_EXPORTS))) \
  -sEXPORTED_RUNTIME_METHODS=FS,callMain,UTF8ToString,stringToUTF8,lengthBytesUTF8 \
  --extern-post-js web/api.js
# the page's own files, copied as they are; the little play is the text it offers
WEB_ASSETS := $(filter-out web/api.js,$(wildcard web/*.html web/*.css web/*.js web/*.svg))
WEB_FILES := $(WEB_ASSETS:web/%=$(WEB_DIR)/%) $(WEB_DIR)/mill.txt

.PHONY: web serve check-web

# What each goal needs, said before anything starts
ifneq ($(filter web serve check-web,$(MAKECMDGOALS)),)
ifeq ($(shell command -v $(EMCC) 2>/dev/null),)
$(error make web needs emscripten's emcc (apt-get install emscripten))
endif
endif
ifneq ($(filter check-web,$(MAKECMDGOALS)),)
ifeq ($(shell command -v node 2>/dev/null),)
$(error make check-web needs Node.js and npm (apt-get install nodejs npm))
endif
ifeq ($(wildcard $(or $(AG_CHROMIUM),/usr/bin/chromium)),)
$(error make check-web needs Debian's chromium (apt-get install chromium))
endif
endif

web: $(WEB_DIR)/attograd.js $(WEB_FILES)

$(WEB_OBJ_DIR)/src/cli/%.o $(WEB_OBJ_DIR)/src/io/%.o $(WEB_OBJ_DIR)/src/check/%.o \
  $(WEB_OBJ_DIR)/web/%.o: WEB_OPT = -Os

$(WEB_OBJ_DIR)/%.o: %.c
	@mkdir -p $(@D)
	$(EMCC_ENV) $(EMCC) $(WEB_CFLAGS) -c -o $@ $<

# attograd.js is emscripten's loader with web/api.js (window.attograd) after it
$(WEB_DIR)/attograd.js: $(WEB_OBJ) web/api.js
	@mkdir -p $(@D)
	$(EMCC_ENV) $(EMCC) $(WEB_CFLAGS) -o $@ $(WEB_OBJ) $(WEB_LDFLAGS)

$(WEB_DIR)/%: web/%
	@mkdir -p $(@D)
	cp $< $@

$(WEB_DIR)/mill.txt: examples/mill.txt
	@mkdir -p $(@D)
	cp $< $@

-include $(WEB_OBJ:.o=.d)

serve: web
	@echo "serving $(WEB_DIR) on http://127.0.0.1:$(WEB_PORT)/ (Ctrl-C stops)"
	$(PYTHON) -m http.server --bind 127.0.0.1 --directory $(WEB_DIR) $(WEB_PORT)

# The native command on the same kernels (plain C, make PORTABLE=1), which
# the tests compare with byte for byte.
WEB_NATIVE := $(BUILDROOT)/float-portable/attograd

# playwright-core drives Debian's chromium; npm ci installs it from package-lock.json
check-web: web
	@$(MAKE) --no-print-directory PORTABLE=1 REAL=float SANITIZE= CC=cc $(WEB_NATIVE)
	@test -d node_modules/playwright-core || npm ci --no-audit --no-fund
	AG_WEB_DIR=$(WEB_DIR) AG_NATIVE=$(WEB_NATIVE) AG_WEB_OUT=$(BUILDROOT)/web-test \
	  node --test --test-reporter=spec tests/web/
