#!/usr/bin/env bash
# redis-suite.sh runs units of Redis's own TCL test suite, in external-server
# mode, against a `devkit kv serve` it starts (or, with SERVER=redis, against
# the installed redis-server, to compare), and prints per unit the tests that
# passed and failed. Nothing of Redis is vendored or fetched: REDIS_SRC names
# a Redis source tree of the installed redis-server's version (see
# docs/kvstore-server.md, "Redis's own test suite").
#
#   REDIS_SRC=/path/to/redis-7.0.15 tools/redis-suite.sh [unit/type/string ...]
#
# Environment: REDIS_SRC (required), SERVER (devkit|redis, default devkit),
# DEVKIT (the binary, default bin/devkit), OUT (logs, default bin/redis-suite).
# Exit status: 0 when every test of every unit passed.
set -uo pipefail

: "${REDIS_SRC:?set REDIS_SRC to a Redis source tree (with runtest and tests/), see docs/kvstore-server.md}"
SERVER=${SERVER:-devkit}
DEVKIT=${DEVKIT:-bin/devkit}
OUT=${OUT:-bin/redis-suite}/$SERVER
UNITS=("$@")
if [ ${#UNITS[@]} -eq 0 ]; then
	UNITS=(unit/type/string unit/type/incr unit/expire unit/multi unit/keyspace unit/scan unit/protocol
		unit/info-command unit/other unit/type/hash unit/type/list unit/type/set unit/type/zset unit/pubsub unit/sort
		unit/tracking)
fi
# Tests that need what no external server gives a test (DEBUG, replicas,
# restarts, maxmemory) are left out for both servers alike. The RESP3
# variants (HELLO 3) and the RESET tests (needs:reset) run.
TAGS=(-needs:debug -needs:repl -needs:pfdebug -needs:config-maxmemory -needs:latency -needs:local-process)

[ -x "$REDIS_SRC/runtest" ] && [ -d "$REDIS_SRC/tests/unit" ] || {
	echo "redis-suite: $REDIS_SRC is not a Redis source tree (no runtest or tests/unit)" >&2
	exit 2
}
command -v tclsh >/dev/null || { echo "redis-suite: tclsh not found: apt-get install tcl" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
data=$(mktemp -d)
pid=
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$data"; }
trap stop EXIT

case $SERVER in
devkit)
	# Port 0: the kernel picks a free port, which the server logs once bound.
	"$DEVKIT" kv serve --data "$data/kv" --http "" --tcp "" --resp 127.0.0.1:0 --sync none --allow-flush \
		2>"$OUT/server.log" &
	pid=$!
	port=
	for _ in $(seq 100); do
		port=$(sed -n 's/.*transport=resp addr=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$OUT/server.log" | head -1)
		[ -n "$port" ] && break
		sleep 0.1
	done
	;;
redis)
	for _ in $(seq 50); do # a free port: nothing answers on it
		port=$((20000 + RANDOM % 30000))
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
	done
	redis-server --port "$port" --bind 127.0.0.1 --dir "$data" --save "" --appendonly no \
		>"$OUT/server.log" 2>&1 &
	pid=$!
	;;
*) echo "redis-suite: SERVER is devkit or redis, not $SERVER" >&2; exit 2 ;;
esac
for _ in $(seq 100); do
	[ -n "$port" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
	sleep 0.1
done
[ -n "$port" ] || { echo "redis-suite: the server did not start; see $OUT/server.log" >&2; exit 1; }

status=0
printf '%-20s %6s %6s\n' unit passed failed
for unit in "${UNITS[@]}"; do
	log="$OUT/${unit//\//_}.log"
	# --durable: an error outside an assertion (an unknown command) fails
	# that test only, instead of ending the unit.
	# --baseport: the test server's own port is found below it; a random one
	# keeps runs on one machine (other checkouts) from taking the same port.
	(cd "$REDIS_SRC" && ./runtest --host 127.0.0.1 --port "$port" --singledb --durable --tags "${TAGS[*]}" \
		--baseport $((21111 + 64 * (RANDOM % 300))) --single "$unit" 2>&1) | sed 's/\x1b\[[0-9;]*m//g' >"$log"
	ok=$(grep -c '^\[ok\]:' "$log")
	err=$(grep -c '^\[err\]:\|^\[exception\]:' "$log")
	printf '%-20s %6d %6d\n' "$unit" "$ok" "$err"
	{ [ "$err" -eq 0 ] && grep -q 'All tests passed' "$log"; } || status=1
done
echo "logs: $OUT (the failed tests: grep '^\[err\]' $OUT/*.log)"
exit $status
