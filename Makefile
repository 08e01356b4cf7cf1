# xip83: PGXS build of the extension, its protobuf code, the libpq tools and tests.
#
#   make                 extension library, xip83-tail and test programs
#   make install         into the PostgreSQL found by pg_config
#   make test            every test on a throwaway cluster (tests/driver.sh check)
#   make demo            the main job end to end (tests/driver.sh demo)
#   make cppcheck        static analysis of src/ (tests/cppcheck.sh)
#   make SANITIZE=1      ASan + UBSan build; XIP83_SANITIZE=1 tests/driver.sh check runs it

EXTVERSION   = 0.1.0
PG_CONFIG   ?= pg_config
BUILD        = build

# Generated protobuf-c code lives in the build tree and is never edited.
PROTOS       = $(shell find proto -name '*.proto' | sort)
PROTO_C      = $(patsubst proto/%.proto,$(BUILD)/proto/%.pb-c.c,$(PROTOS))
PROTO_H      = $(PROTO_C:.c=.h)

MODULE_big   = xip83
OBJS         = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c))) $(PROTO_C:.c=.o)

# The install script is assembled from one file per concern, in name order.
INSTALL_PARTS = $(sort $(wildcard control/xip83--$(EXTVERSION)/*.sql))
DATA_built   = $(BUILD)/xip83--$(EXTVERSION).sql
DATA         = control/xip83.control $(wildcard control/xip83--*--*.sql)
MODULEDIR    = extension

PROTOBUF_CFLAGS := $(shell pkg-config --cflags libprotobuf-c)
PROTOBUF_LIBS   := $(shell pkg-config --libs libprotobuf-c)
PG_CPPFLAGS  = -I$(BUILD)/proto -Isrc $(PROTOBUF_CFLAGS)
PG_CFLAGS    = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers
SHLIB_LINK   = $(PROTOBUF_LIBS)

EXTRA_CLEAN  = $(BUILD)

# make SANITIZE=1: the extension and the libpq programs with AddressSanitizer
# and UBSan. The server must then run with the ASan runtime preloaded:
# `XIP83_SANITIZE=1 bash tests/driver.sh check` does it all (tests/sanitize/sanitize.sh).
# UBSan does not recover: the first report aborts (gcc would otherwise warn,
# -Werror, about the null arguments of the paths after a recovered report).
ifeq ($(SANITIZE),1)
SANITIZE_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
PG_CFLAGS   += $(SANITIZE_FLAGS)
SHLIB_LINK  += $(SANITIZE_FLAGS)
endif

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies here (Debian builds without
# --enable-depend): every object depends on every header, which is cheap at
# this size and never leaves a stale object after a struct changes.
$(OBJS): $(PROTO_H) $(wildcard src/*.h)

$(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/proto
	protoc-c --proto_path=proto --c_out=$(BUILD)/proto $<

# The directory is a prerequisite too: removing a part changes its mtime.
$(BUILD)/xip83--$(EXTVERSION).sql: $(INSTALL_PARTS) control/xip83--$(EXTVERSION)
	@mkdir -p $(BUILD)
	( printf '%s\n' '-- generated from control/xip83--$(EXTVERSION)/*.sql; edit those' \
	         '\echo Use "CREATE EXTENSION xip83" to load this file. \quit'; \
	  for f in $(INSTALL_PARTS); do printf '\n-- %s\n' "$$f"; cat "$$f"; done ) > $@

# ---------------------------------------------------------------- client side
# libpq programs: the feed library under src/client, tools, and test programs.
PQ_CFLAGS    = -O2 -g -Wall -Wextra -Werror -std=gnu11 -I$(shell $(PG_CONFIG) --includedir) \
               -I$(BUILD)/proto -Isrc/client -Itests/libpq/lib $(PROTOBUF_CFLAGS) $(SANITIZE_FLAGS)
PQ_LIBS      = -L$(shell $(PG_CONFIG) --libdir) -lpq $(PROTOBUF_LIBS) -lm -lpthread
CLIENT_SRC   = $(sort $(filter-out src/client/xip83_tail.c,$(wildcard src/client/*.c)))
CLIENT_OBJ   = $(patsubst %.c,$(BUILD)/%.o,$(CLIENT_SRC)) $(patsubst %.c,$(BUILD)/client/%.o,$(PROTO_C))
TESTLIB_OBJ  = $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/libpq/lib/*.c))
LIBPQ_TESTS  = $(patsubst tests/libpq/%.c,$(BUILD)/tests/%,$(wildcard tests/libpq/t_*.c))
BENCHES      = $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(wildcard tests/bench/*.c))
TOOLS        = $(if $(wildcard src/client/xip83_tail.c),$(BUILD)/xip83-tail)

all: $(TOOLS) $(LIBPQ_TESTS) $(BENCHES)

$(BUILD)/src/client/%.o: src/client/%.c $(PROTO_H) $(wildcard src/client/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(PQ_CFLAGS) -c -o $@ $<

$(BUILD)/client/$(BUILD)/proto/%.o: $(BUILD)/proto/%.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(PQ_CFLAGS) -c -o $@ $<

$(BUILD)/tests/libpq/lib/%.o: tests/libpq/lib/%.c $(wildcard tests/libpq/lib/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(PQ_CFLAGS) -c -o $@ $<

$(BUILD)/xip83-tail: src/client/xip83_tail.c $(CLIENT_OBJ)
	$(CC) $(PQ_CFLAGS) -o $@ $^ $(PQ_LIBS)

$(BUILD)/tests/%: tests/libpq/%.c $(TESTLIB_OBJ) $(CLIENT_OBJ) $(wildcard tests/libpq/lib/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(PQ_CFLAGS) -o $@ $(filter %.c %.o,$^) $(PQ_LIBS)

$(BUILD)/bench/%: tests/bench/%.c $(TESTLIB_OBJ) $(CLIENT_OBJ) $(wildcard tests/libpq/lib/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(PQ_CFLAGS) -o $@ $(filter %.c %.o,$^) $(PQ_LIBS)

# ---------------------------------------------------------------- fuzzing
# libFuzzer harnesses over the decoders (tests/fuzz), built with clang and
# AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer; run by
# tests/libpq/t_frames_fuzz for a bounded time. Skipped when clang is absent
# (that test then fails).
FUZZ_CC      ?= clang
FUZZERS      = $(if $(shell command -v $(FUZZ_CC) 2>/dev/null),$(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/*.c)))

all: $(FUZZERS)

$(BUILD)/fuzz/%: tests/fuzz/%.c src/frames_json.c src/frames_json.h $(PROTO_C) $(PROTO_H)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-I$(BUILD)/proto -Isrc $(PROTOBUF_CFLAGS) -o $@ $(filter %.c,$^) $(PROTOBUF_LIBS)

install: install-tools
install-tools: $(TOOLS)
	$(if $(TOOLS),$(INSTALL_PROGRAM) $(TOOLS) '$(DESTDIR)$(bindir)/')

test:
	bash tests/driver.sh check

demo:
	bash tests/driver.sh demo

# cppcheck over src/ with the PostgreSQL include paths (tests/cppcheck.sh)
cppcheck:
	bash tests/cppcheck.sh

.PHONY: test demo install-tools cppcheck
