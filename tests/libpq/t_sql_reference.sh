#!/usr/bin/env bash
# docs/sql-reference.md is generated from the catalog (tests/docs/sql_reference.sh):
# fails, printing the diff, when the committed page is not what the script
# writes for this database (fresh, CREATE EXTENSION xip83 only), when a
# function, table, view or setting has no comment, or when the code raises a
# condition the page's SQLSTATE list lacks, or when a program has no
# manual page (the page lists the programs by theirs). Run by tests/libpq/run.sh.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
gen=$top/tests/docs/sql_reference.sh
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0

bash "$gen" >"$out" || { echo "sql_reference.sh failed"; exit 1; }
if ! diff -u "$top/docs/sql-reference.md" "$out"; then
	echo "docs/sql-reference.md is stale: run PGDATABASE=<fresh db> bash tests/docs/sql_reference.sh > docs/sql-reference.md"
	fail=1
fi
if grep -n '(no comment)' "$out"; then
	echo "every function, table, view and access method needs a COMMENT (control/install/, and the upgrade script)"
	fail=1
fi
if grep -nE '^\| `xip83\.[a-z_]+` \|.*\|  *\|$' "$out"; then
	echo "a setting has no description"
	fail=1
fi

# Conditions the code raises: ERRCODE_* in src/, USING ERRCODE in control/install/.
listed=$(sed -n 's/^#state | `[0-9A-Z]*` | \([a-z0-9_]*\) |.*/\1/p' "$gen" | sort -u)
raised=$( { grep -ohE 'errcode\(ERRCODE_[A-Z0-9_]+\)' "$top"/src/*/*.c \
		| sed -E 's/errcode\(ERRCODE_(E_R_I_E_)?([A-Z0-9_]+)\)/\2/' | tr 'A-Z' 'a-z'
	grep -ohE "ERRCODE = '[a-z_]+'" "$top"/control/install/*.sql | sed -E "s/ERRCODE = '([a-z_]+)'/\1/"
	} | sort -u)
missing=$(comm -13 <(echo "$listed") <(echo "$raised"))
if [ -n "$missing" ]; then
	echo "raised but not in the SQLSTATE list of tests/docs/sql_reference.sh: $missing"
	fail=1
fi

# Every program a user runs (a main under client/bin/xip83_*.c) has a manual page.
for c in "$top"/client/bin/xip83_*.c; do
	prog=$(basename "$c" .c | tr _ -)
	[ -f "$top/man/$prog.1" ] || { echo "program $prog has no manual page man/$prog.1"; fail=1; }
done
exit $fail
