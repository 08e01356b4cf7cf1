# xip83: PGXS build of the extension, its protobuf code, the libpq tools and tests.
#
#   make                 extension library and the programs users run
#                        (xip83-tail, xip83-session; xip83-gateway where
#                        libnghttp2-dev and libssl-dev are installed)
#   make test-programs   the libpq test programs, and the Go example and the
#                        libFuzzer harness when go and clang are at hand, and the
#                        gRPC transport's test server
#   make bench           the benchmarks (tests/bench)
#   make install         into the PostgreSQL found by pg_config: the library and
#                        SQL scripts, the programs into `pg_config --bindir`
#                        and their man pages (man/*.1) into `pg_config --mandir`
#   make installcheck    regression, isolation and TAP tests (PGXS) against the
#                        installed extension and the server at PGHOST/PGPORT,
#                        which must preload xip83 (tests/xip83.conf)
#   make tempcheck       the same, regression and isolation in a temporary
#                        instance (pg_regress --temp-instance), as a non-root user
#   make installcheck-libpq  builds and runs the libpq programs tests/libpq/t_*.c
#                        (and scripts t_*.sh) against PGHOST, and the gRPC
#                        tests tests/grpc/t_*.py (the gateway's, t_gateway_*,
#                        on a fresh database too), and the browser tests
#                        tests/browser/t_*.py (Chromium, Node; fresh database)
#   make test            every test on a throwaway cluster (tests/driver.sh check)
#   make demo            the main job end to end (tests/driver.sh demo)
#   make cppcheck        static analysis of include/, src/, client/ (tests/cppcheck.sh)
#   make check-layers    the floors of the source tree (tests/house/check_layers.py)
#   make SANITIZE=1      ASan + UBSan build; XIP83_SANITIZE=1 tests/driver.sh check runs it
#
# Every test is found by wildcard: sql/NAME.sql with expected/NAME.out,
# specs/NAME.spec with expected/NAME.out, t/NNN_name.pl, tests/libpq/t_NAME.c,
# tests/libpq/t_NAME.sh, tests/grpc/t_NAME.py and tests/browser/t_NAME.py.

EXTVERSION   = 0.2.0
PG_CONFIG   ?= pg_config
BUILD        = build

# A VPATH build (make -f SRC/Makefile VPATH=SRC, as pg_buildext runs it) finds
# sources under $(S) and writes everything else here. File lists keep names
# relative to the source tree; make finds each prerequisite through VPATH.
S            = $(if $(VPATH),$(VPATH)/)
srcfiles     = $(patsubst $(S)%,%,$(sort $(wildcard $(addprefix $(S),$(1)))))

# Generated protobuf-c code lives in the build tree and is never edited.
PROTOS       = $(shell cd '$(S).' && find proto -name '*.proto' | sort)
PROTO_C      = $(patsubst proto/%.proto,$(BUILD)/proto/%.pb-c.c,$(PROTOS))
PROTO_H      = $(PROTO_C:.c=.h)

MODULE_big   = xip83
OBJS         = $(patsubst %.c,%.o,$(call srcfiles,src/*/*.c)) $(PROTO_C:.c=.o)

# The install script of the current version is assembled from one file per
# concern under control/install/, in name order. Released versions' scripts
# (control/xip83--V.sql) are installed as they are. Upgrade scripts
# (control/xip83--A--B.sql) are built: a line "-- include: control/install/F"
# stands for that whole part, so what an upgrade adds is written once.
INSTALL_PARTS = $(call srcfiles,control/install/*.sql)
UPGRADE_SRC  = $(call srcfiles,control/xip83--*--*.sql)
DATA_built   = $(BUILD)/xip83--$(EXTVERSION).sql $(patsubst control/%,$(BUILD)/%,$(UPGRADE_SRC))
DATA         = control/xip83.control \
               $(filter-out control/xip83--$(EXTVERSION).sql $(UPGRADE_SRC),$(call srcfiles,control/xip83--*.sql))
MODULEDIR    = extension

PROTOBUF_CFLAGS := $(shell pkg-config --cflags libprotobuf-c)
PROTOBUF_LIBS   := $(shell pkg-config --libs libprotobuf-c)
PG_CPPFLAGS  = -I$(BUILD)/proto -I$(S)include -I$(S)src $(PROTOBUF_CFLAGS)
PG_CFLAGS    = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers
SHLIB_LINK   = $(PROTOBUF_LIBS)

# ---------------------------------------------------------------- tests
REGRESS      = $(patsubst sql/%.sql,%,$(call srcfiles,sql/*.sql))
ISOLATION    = $(patsubst specs/%.spec,%,$(call srcfiles,specs/*.spec))
TAP_TESTS    = 1
# Every suite needs xip83 preloaded (the horizon registry and the notifier live
# in shared memory): --temp-config applies it to temporary instances, and
# --load-extension creates the extension in each test database. No
# NO_INSTALLCHECK: the suites change nothing outside their own databases
# (uninstall's database regress_uninstall is created and dropped again), so
# they may run against any server that preloads xip83.
REGRESS_OPTS   = --temp-config=$(srcdir)/tests/xip83.conf --load-extension=xip83
ISOLATION_OPTS = --temp-config=$(srcdir)/tests/xip83.conf --load-extension=xip83

EXTRA_CLEAN  = $(BUILD) results output_iso tmp_check tmp_check_iso tmp_instance \
               regression.diffs regression.out

# make SANITIZE=1: the extension and the libpq programs with AddressSanitizer
# and UBSan. The server must then run with the ASan runtime preloaded:
# `XIP83_SANITIZE=1 bash tests/driver.sh check` does it all (tests/sanitize/sanitize.sh).
# UBSan does not recover: the first report aborts (gcc would otherwise warn,
# -Werror, about the null arguments of the paths after a recovered report).
ifeq ($(SANITIZE),1)
SANITIZE_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
PG_CFLAGS   += $(SANITIZE_FLAGS)
SHLIB_LINK  += $(SANITIZE_FLAGS)
# the gateway stops at a broken invariant instead of repairing and counting it
PQ_DEBUG     = -DXIP83_DEBUG
endif

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies here (Debian builds without
# --enable-depend): every object depends on every header, which is cheap at
# this size and never leaves a stale object after a struct changes.
$(OBJS) $(OBJS:.o=.bc): $(PROTO_H) $(call srcfiles,src/*/*.h include/xip83/*.h)

# Objects built against one PostgreSQL major version are never linked into
# another's: when PG_CONFIG names another major than the last build's, the
# module's objects go before anything is made. (A stamp file as a prerequisite
# would not do: PGXS declares every target .SECONDARY.)
PG_STAMP     = $(BUILD)/built-for-pg
ifneq ($(shell cat '$(PG_STAMP)' 2>/dev/null),$(MAJORVERSION))
$(shell rm -f $(OBJS) $(OBJS:.o=.bc) $(shlib); mkdir -p $(BUILD); echo '$(MAJORVERSION)' >'$(PG_STAMP)')
endif

# PGXS's compile rule makes no directories, and a VPATH build starts without
# src/ (a rule for it would not run: VPATH finds the source tree's src/).
ifdef VPATH
$(shell mkdir -p $(sort $(dir $(OBJS))))
endif

$(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/proto
	protoc-c --proto_path=$(S)proto --c_out=$(BUILD)/proto $<

# The directory is a prerequisite too: removing a part changes its mtime.
$(BUILD)/xip83--$(EXTVERSION).sql: $(INSTALL_PARTS) control/install
	@mkdir -p $(BUILD)
	( printf '%s\n' '-- generated from control/install/*.sql; edit those' \
	         '\echo Use "CREATE EXTENSION xip83" to load this file. \quit'; \
	  for f in $(INSTALL_PARTS); do printf '\n-- %s\n' "$$f"; cat "$(S)$$f"; done ) > $@

$(BUILD)/xip83--%--$(EXTVERSION).sql: control/xip83--%--$(EXTVERSION).sql $(INSTALL_PARTS)
	@mkdir -p $(BUILD)
	awk -v top='$(S)' '/^-- include: / { f = top $$3; while ((getline l < f) > 0) print l; close(f); next } { print }' $< > $@

# ---------------------------------------------------------------- client side
# libpq programs: the live feed (client/feed), the session engine (client/session),
# tools, and test programs. A folder's files include each other by name, other
# floors by their API header ("feed/feed.h", with -Iclient).
PQ_CFLAGS    = -O2 -g -Wall -Wextra -Werror -std=gnu11 -I$(shell $(PG_CONFIG) --includedir) \
               -I$(BUILD)/proto -I$(S)include -I$(S)client -I$(S)tests/libpq/lib $(PROTOBUF_CFLAGS) \
               $(SANITIZE_FLAGS) $(PQ_DEBUG)
PQ_LIBS      = -L$(shell $(PG_CONFIG) --libdir) -lpq $(PROTOBUF_LIBS) -lm -lpthread
CLIENT_MAINS = client/bin/xip83_tail.c client/bin/xip83_session.c
# client/gateway is the gateway's core: it needs the gRPC transport (below)
CLIENT_SRC   = $(call srcfiles,client/feed/*.c client/session/*.c)
CLIENT_H     = $(call srcfiles,client/feed/*.h client/session/*.h)
CLIENT_OBJ   = $(patsubst %.c,$(BUILD)/%.o,$(CLIENT_SRC)) $(patsubst %.c,$(BUILD)/client/%.o,$(PROTO_C))
TESTLIB_OBJ  = $(patsubst %.c,$(BUILD)/%.o,$(call srcfiles,tests/libpq/lib/*.c))
LIBPQ_TESTS  = $(patsubst tests/libpq/%.c,$(BUILD)/tests/%,$(call srcfiles,tests/libpq/t_*.c))
# shell tests (t_*.sh) run as they are, in the same fresh database
LIBPQ_SCRIPTS = $(addprefix $(S),$(call srcfiles,tests/libpq/t_*.sh))
# bench_gateway is a gRPC load client: built with the gateway (below)
BENCHES      = $(filter-out $(BUILD)/bench/bench_gateway,\
               $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(call srcfiles,tests/bench/*.c)))
TOOLS        = $(if $(call srcfiles,client/bin/xip83_tail.c),$(BUILD)/xip83-tail) \
               $(if $(call srcfiles,client/bin/xip83_session.c),$(BUILD)/xip83-session)

all: $(TOOLS)

test-programs: $(LIBPQ_TESTS) go-example fuzzers

bench: $(BENCHES)

$(BUILD)/client/%.o: client/%.c $(PROTO_H) $(CLIENT_H) $(call srcfiles,include/xip83/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(PQ_CFLAGS) -c -o $@ $<

$(BUILD)/client/$(BUILD)/proto/%.o: $(BUILD)/proto/%.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(PQ_CFLAGS) -c -o $@ $<

$(BUILD)/tests/libpq/lib/%.o: tests/libpq/lib/%.c $(PROTO_H) $(call srcfiles,tests/libpq/lib/*.h) \
                              $(CLIENT_H)
	@mkdir -p $(dir $@)
	$(CC) $(PQ_CFLAGS) -c -o $@ $<

$(BUILD)/xip83-tail: client/bin/xip83_tail.c $(CLIENT_OBJ)
	$(CC) $(PQ_CFLAGS) -o $@ $^ $(PQ_LIBS)

$(BUILD)/xip83-session: client/bin/xip83_session.c $(CLIENT_OBJ)
	$(CC) $(PQ_CFLAGS) -o $@ $^ $(PQ_LIBS)

$(BUILD)/tests/%: tests/libpq/%.c $(TESTLIB_OBJ) $(CLIENT_OBJ) $(call srcfiles,tests/libpq/lib/*.h) $(CLIENT_H)
	@mkdir -p $(dir $@)
	$(CC) $(PQ_CFLAGS) -o $@ $(filter %.c %.o,$^) $(PQ_LIBS)

$(BUILD)/bench/%: tests/bench/%.c $(TESTLIB_OBJ) $(CLIENT_OBJ) $(call srcfiles,tests/libpq/lib/*.h) $(CLIENT_H)
	@mkdir -p $(dir $@)
	$(CC) $(PQ_CFLAGS) -o $@ $(filter %.c %.o,$^) $(PQ_LIBS)

# ---------------------------------------------------------------- gRPC transport
# The gateway's gRPC transport (client/grpc: HTTP/2 on nghttp2, TLS on OpenSSL),
# no libpq, and its test server build/client/xip83-grpc-echo (tests/grpc, run
# by tests/grpc/t_*.py through installcheck-libpq). Skipped when libnghttp2-dev
# or libssl-dev is absent (those tests then fail); the driver installs both.
GW_PKGS      = libnghttp2 openssl
# browsers' HTTP/1.1 and WebSocket (client/http): Debian's libhttp-parser-dev
# and libwslay-dev, which ship no pkg-config files
GW_HTTP_OK   = $(if $(wildcard /usr/include/http_parser.h),$(if $(wildcard /usr/include/wslay/wslay.h),yes))
GW_OK        = $(if $(GW_HTTP_OK),$(shell pkg-config --exists $(GW_PKGS) && echo yes))
GW_CFLAGS    = -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers \
               -std=gnu11 -I$(S)client/grpc -I$(S)client $(shell pkg-config --cflags $(GW_PKGS) 2>/dev/null) \
               $(SANITIZE_FLAGS)
GW_LIBS      = $(shell pkg-config --libs $(GW_PKGS) 2>/dev/null) -lhttp_parser -lwslay
GW_LIB_OBJ   = $(patsubst %.c,$(BUILD)/%.o,$(call srcfiles,client/grpc/*.c client/http/*.c))
GW_ECHO      = $(if $(GW_OK),$(BUILD)/client/xip83-grpc-echo)
# the transport's own units, no server (tests/grpc/t_*.c)
GW_UNITS     = $(if $(GW_OK),$(patsubst tests/grpc/%.c,$(BUILD)/client/%,$(call srcfiles,tests/grpc/t_*.c)))
GRPC_TESTS   = $(call srcfiles,tests/grpc/t_*.py)
# the gateway from a browser and from Node (tests/browser: npm packages from
# the cache tests/driver.sh fills, Debian's Chromium)
BROWSER_TESTS = $(call srcfiles,tests/browser/t_*.py)
# The gateway: its multiplexed core (client/gateway) joins the transport to
# the session engine (libpq, protobuf-c), and its program client/bin/xip83_gateway.c.
GW_CORE_SRC  = $(call srcfiles,client/gateway/*.c)
GW_CORE_OBJ  = $(patsubst %.c,$(BUILD)/%.o,$(GW_CORE_SRC))
GATEWAY      = $(if $(GW_OK),$(if $(call srcfiles,client/bin/xip83_gateway.c),$(BUILD)/xip83-gateway))
GW_BENCH     = $(if $(GATEWAY),$(if $(call srcfiles,tests/bench/bench_gateway.c),$(BUILD)/bench/bench_gateway))
TOOLS       += $(GATEWAY)
ifneq ($(GW_OK),yes)
$(info xip83-gateway and xip83-grpc-echo are not built: libnghttp2-dev, libssl-dev, libhttp-parser-dev or libwslay-dev is missing)
endif

all: $(GATEWAY)

test-programs: $(GW_ECHO) $(GATEWAY) $(GW_UNITS)

bench: $(GW_BENCH)

$(GW_CORE_OBJ): PQ_CFLAGS += -I$(S)client/grpc -I$(S)client $(shell pkg-config --cflags $(GW_PKGS) 2>/dev/null) \
                             -Wno-unused-parameter -Wno-missing-field-initializers
$(GW_CORE_OBJ): $(call srcfiles,client/grpc/*.h client/gateway/*.h)

$(BUILD)/xip83-gateway: client/bin/xip83_gateway.c $(GW_CORE_OBJ) $(GW_LIB_OBJ) $(CLIENT_OBJ) \
                        $(CLIENT_H) $(call srcfiles,client/gateway/*.h client/grpc/*.h)
	$(CC) $(PQ_CFLAGS) -I$(S)client/grpc -o $@ $(filter %.c %.o,$^) $(GW_LIBS) $(PQ_LIBS)

$(BUILD)/bench/bench_gateway: PQ_LIBS += $(GW_LIBS)
$(BUILD)/bench/bench_gateway: PQ_CFLAGS += -Wno-unused-parameter

$(BUILD)/client/grpc/%.o: client/grpc/%.c $(call srcfiles,client/grpc/*.h client/http/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(GW_CFLAGS) -c -o $@ $<

$(BUILD)/client/http/%.o: client/http/%.c $(call srcfiles,client/http/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(GW_CFLAGS) -c -o $@ $<

$(BUILD)/client/t_%: tests/grpc/t_%.c $(GW_LIB_OBJ) $(call srcfiles,client/grpc/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(GW_CFLAGS) -o $@ $(filter %.c %.o,$^) $(GW_LIBS)

$(BUILD)/client/xip83-grpc-echo: tests/grpc/xip83_grpc_echo.c $(GW_LIB_OBJ) $(call srcfiles,client/grpc/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(GW_CFLAGS) -o $@ $(filter %.c %.o,$^) $(GW_LIBS)

# ---------------------------------------------------------------- Go example
# examples/go (a node's live loop in Go, run by tests/libpq/t_node_feed), built
# offline in GOPATH mode against Debian's packages golang-go and
# golang-github-jackc-pgx-v4-dev: nothing is downloaded. Skipped with a
# message when go is absent (that test then fails).
GO           ?= go
GO_PATH      ?= /usr/share/gocode
GO_FOUND     := $(shell command -v $(GO) 2>/dev/null)

go-example: $(if $(GO_FOUND),$(BUILD)/xip83-go-node $(BUILD)/xip83-go-grpc-client)
	$(if $(GO_FOUND),,@echo "go-example: skipped, $(GO) not found (t_node_feed, t_gateway_headers need it)")

$(BUILD)/xip83-go-node: $(call srcfiles,examples/go/*.go)
	@mkdir -p $(BUILD)
	cd $(S)examples/go && GO111MODULE=off GOFLAGS= GOPATH=$(GO_PATH) \
		GOCACHE=$(abspath $(BUILD))/gocache $(GO) build -o $(abspath $@) .

# a grpc-go client of the gateway (golang-google-grpc-dev; t_gateway_headers runs it)
$(BUILD)/xip83-go-grpc-client: $(call srcfiles,tests/grpc/goclient/*.go)
	@mkdir -p $(BUILD)
	cd $(S)tests/grpc/goclient && GO111MODULE=off GOFLAGS= GOPATH=$(GO_PATH) \
		GOCACHE=$(abspath $(BUILD))/gocache $(GO) build -o $(abspath $@) .

# ---------------------------------------------------------------- fuzzing
# libFuzzer harnesses over the decoders (tests/fuzz), built with clang and
# AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer; run by
# tests/libpq/t_frames_fuzz for a bounded time. Skipped with a message when
# clang is absent (that test then fails).
FUZZ_CC      ?= clang
FUZZ_FOUND   := $(shell command -v $(FUZZ_CC) 2>/dev/null)
FUZZERS      = $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(call srcfiles,tests/fuzz/*.c))

fuzzers: $(if $(FUZZ_FOUND),$(FUZZERS))
	$(if $(FUZZ_FOUND),,@echo "fuzzers: skipped, $(FUZZ_CC) not found (t_frames_fuzz needs them)")

$(BUILD)/fuzz/%: tests/fuzz/%.c src/frames/frames_json.c src/frames/frames_json.h $(PROTO_C) $(PROTO_H)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-I$(BUILD)/proto -I$(S)src/frames $(PROTOBUF_CFLAGS) -o $@ $(filter %.c,$^) $(PROTOBUF_LIBS)

# the gateway's parsers: its own request and frame walks, the session
# engine's request decoding and wire check, and both message readers
FUZZ_GW_SRC  = client/gateway/gw_frames.c client/session/pb_check.c client/session/session_request.c \
               client/session/session_topics.c client/session/session_wire.c client/session/frame_reader.c \
               client/grpc/grpc_frame.c

$(BUILD)/fuzz/fuzz_gateway: tests/fuzz/fuzz_gateway.c $(FUZZ_GW_SRC) $(PROTO_C) $(PROTO_H) \
                            $(CLIENT_H) $(call srcfiles,client/gateway/*.h client/grpc/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-I$(BUILD)/proto -I$(S)include -I$(S)client -I$(S)client/grpc \
		-I$(shell $(PG_CONFIG) --includedir) $(PROTOBUF_CFLAGS) \
		-o $@ $(filter %.c,$^) $(PROTOBUF_LIBS)

# the HTTP/1.1 and WebSocket glue (client/http) and gRPC-Web's helpers
$(BUILD)/fuzz/fuzz_http: tests/fuzz/fuzz_http.c client/http/http.c client/http/http.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-I$(S)client/http -o $@ $(filter %.c,$^) -lhttp_parser -lwslay -lcrypto

# The tools and their man pages (man/NAME.1, section 1) into PostgreSQL's
# bindir and mandir, as the server's own programs are installed.
MAN1         = $(addprefix $(S),$(call srcfiles,man/*.1))

# Neither is on PATH or MANPATH with a distribution's PostgreSQL (Debian's
# bindir is /usr/lib/postgresql/NN/bin), so these lines say where they went
# and how to reach them; the Debian package links them into /usr/bin.
install: install-tools
install-tools: $(TOOLS)
	$(if $(TOOLS),$(MKDIR_P) '$(DESTDIR)$(bindir)')
	$(if $(TOOLS),$(INSTALL_PROGRAM) $(TOOLS) '$(DESTDIR)$(bindir)/')
	$(if $(MAN1),$(MKDIR_P) '$(DESTDIR)$(mandir)/man1')
	$(if $(MAN1),$(INSTALL_DATA) $(MAN1) '$(DESTDIR)$(mandir)/man1/')
	@echo 'xip83: programs $(notdir $(TOOLS)) installed in $(DESTDIR)$(bindir)'
	@echo 'xip83: their man pages in $(DESTDIR)$(mandir)/man1'
	@if [ -z '$(DESTDIR)' ]; then \
		case ":$$PATH:" in *':$(bindir):'*) ;; *) \
			echo 'xip83: $(bindir) is not on PATH: run them by full path, or add it:'; \
			echo '         export PATH="$(bindir):$$PATH"   (or link them into /usr/local/bin)';; esac; \
		echo 'xip83: read a page with: man -M $(mandir) xip83-tail'; \
	fi

uninstall: uninstall-tools
uninstall-tools:
	rm -f $(addprefix '$(DESTDIR)$(bindir)'/,$(notdir $(TOOLS)))
	rm -f $(addprefix '$(DESTDIR)$(mandir)/man1'/,$(notdir $(MAN1)))

# PGXS's installcheck runs the three kinds in one recipe and stops at the first
# that fails; these run one kind each (tests/driver.sh runs all three).
installcheck-regress:
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)
installcheck-isolation:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)
installcheck-tap:
	$(prove_installcheck)

# PGXS offers no `make check` for an extension: this is its equivalent, after
# `make install`, as a user that may run the server (not root).
tempcheck:
	$(MAKE) installcheck EXTRA_REGRESS_OPTS='--temp-instance=$(CURDIR)/tmp_instance $(EXTRA_REGRESS_OPTS)'

# One program, one test: each gets a fresh database with the extension.
installcheck-libpq: test-programs
	PATH="$(bindir):$$PATH" XIP83_GRPC_ECHO=$(abspath $(BUILD)/client/xip83-grpc-echo) \
		XIP83_GATEWAY=$(abspath $(BUILD)/xip83-gateway) \
		XIP83_GO_GRPC_CLIENT=$(abspath $(BUILD)/xip83-go-grpc-client) \
		bash $(S)tests/libpq/run.sh $(LIBPQ_TESTS) $(GW_UNITS) $(LIBPQ_SCRIPTS) $(addprefix $(S),$(GRPC_TESTS) $(BROWSER_TESTS))

test:
	bash tests/driver.sh check

demo:
	bash tests/driver.sh demo

# cppcheck over include/, src/ and client/ with the PostgreSQL include paths
# (tests/cppcheck.sh)
cppcheck:
	bash tests/cppcheck.sh

# The floors of src/ and client/, their include lines and file sizes
# (tests/house/check_layers.py; docs/design.md has the map).
check-layers:
	/usr/bin/python3 $(S)tests/house/check_layers.py $(S).

.PHONY: test demo install-tools uninstall-tools installcheck-regress installcheck-isolation installcheck-tap \
        tempcheck installcheck-libpq cppcheck check-layers test-programs bench go-example fuzzers
