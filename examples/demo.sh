#!/usr/bin/env bash
# make demo: the example stack (examples/stack/ops.yaml) end to end — the KV server behind two
# rate-limiting gateways that keep their limits in it, all run by `devkit sup` — in headed steps a
# person can follow.
# Every step checks what it shows; the script exits non-zero as soon as one does not behave.
#
# Usage: examples/demo.sh [--redis] [BIN]
#   BIN       the devkit binary `make demo` made (default bin/devkit); the demo's HTTP client,
#             examples/stack/hit, is the hit beside it, built in the same go build (or $HIT)
#   --redis   `make demo-redis`: a supervised redis-server and two gateways sharing it
#             (examples/stack/ops-redis.yaml); needs redis-server on $PATH
# Environment:
#   KEEP=1    keep the demo home (state, logs, data) instead of removing it at the end
#   REDIS_URL without --redis, the gateways keep their limits in this Redis instead of in devkit kv
set -euo pipefail

redis_mode=0
if [[ ${1:-} == --redis ]]; then
	redis_mode=1
	shift
fi
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-bin/devkit}
[[ $bin == /* ]] || bin=$root/$bin
cd "$root"
[[ -x $bin ]] || { echo "demo: $bin is missing; run 'make demo'" >&2; exit 1; }
# hit is a curl that checks the answers (examples/stack/hit). make demo builds it with devkit, in
# one go build with the same flags: the demo itself builds nothing.
hit=${HIT:-$(dirname "$bin")/hit}
[[ $hit == /* ]] || hit=$root/$hit
[[ -x $hit ]] || { echo "demo: $hit (the demo's HTTP client) is missing; run 'make demo'" >&2; exit 1; }
# The commands are shown as the reader would type them from the repository root.
shown() { if [[ $1 == "$root"/* ]]; then printf '%s' "${1#"$root"/}"; else printf '%s' "$1"; fi; }
bin_shown=$(shown "$bin") hit_shown=$(shown "$hit")
if ((redis_mode)) && ! command -v redis-server >/dev/null 2>&1; then
	echo "demo: redis-server is not installed (apt-get install redis-server, brew install redis)" >&2
	exit 1
fi

# The supervisor honours OPS_HOME before DEVKIT_HOME: the demo must only ever see its own home.
unset OPS_HOME DEVKIT_SUP_CONFIG
started=$SECONDS
home=$(mktemp -d "${TMPDIR:-/tmp}/devkit-demo.XXXXXX")
section() { printf "\n== %s\n" "$*"; }
say() { printf '%s\n' "$*"; }
fail() { printf 'demo: FAILED: %s\n' "$*" >&2; exit 1; }
# devkit runs the binary; show prints a command as a reader would type it, then runs it.
devkit() { "$bin" "$@"; }
# quote prints args as a shell would need them typed, the binaries by their path from the repository root.
quote() {
	local out=() a first=1
	for a in "$@"; do
		if ((first)); then
			[[ $a == devkit ]] && a=$bin_shown
			[[ $a == "$hit" ]] && a=$hit_shown
			first=0
		fi
		if [[ $a =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then out+=("$a"); else out+=("'$a'"); fi
	done
	printf '%s' "${out[*]}"
}
show() { printf '$ %s\n' "$(quote "$@")"; "$@"; }
# expect_rc CODE CMD...: run CMD (shown), fail unless it exits CODE.
expect_rc() {
	local want=$1 rc=0
	shift
	show "$@" || rc=$?
	((rc == want)) || fail "'$*' exited $rc, expected $want"
}

# login_blocked GW: one login attempt through GW, shown, refused by the penalty block (problem+json
# "blocked", Retry-After within the hour) rather than by the window's count.
login_blocked() {
	local out ra
	out=$(show "$hit" -i -X POST -d "user=ada&password=guess" -expect 429 "$1/auth/login") || { printf '%s\n' "$out"; fail "login through $1 was not refused"; }
	printf '%s\n' "$out"
	grep -Eq '"blocked": ?true' <<<"$out" || fail "the 429 of $1 is not the login block"
	ra=$(sed -n 's/^ *Retry-After: *\([0-9]*\).*/\1/p' <<<"$out")
	[[ -n $ra ]] && ((ra > 0 && ra <= 3600)) || fail "the Retry-After of $1 ('$ra') is not within the hour's block"
}

cleanup() {
	local rc=$?
	# Whatever happened, leave no process of the demo's home behind (and touch no other home).
	DEVKIT_HOME=$home "$bin" sup stop --all --force >/dev/null 2>&1 || true
	if [[ ${KEEP:-} == 1 ]]; then
		echo "demo: kept $home (state and logs under $home/sup, data under $home/data)"
	else
		rm -rf "$home"
	fi
	((rc == 0)) || echo "demo: exit $rc; the logs were under $home/sup/projects/*/logs (KEEP=1 keeps them)" >&2
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port prints a TCP port on 127.0.0.1 nobody listens on (bash's /dev/tcp, no other tool),
# below the ephemeral range so that no outgoing connection holds it meanwhile.
low=20000 high=32000
if read -r eph _ 2>/dev/null </proc/sys/net/ipv4/ip_local_port_range && ((eph > 11000)); then high=$((eph - 1)); low=$((eph - 10000)); fi
used_ports=" "
free_port() {
	local p
	for _ in $(seq 1 200); do
		p=$((low + RANDOM % (high - low)))
		[[ $used_ports == *" $p "* ]] && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			used_ports+="$p "
			echo "$p"
			return
		fi
	done
	fail "no free port found"
}

section "Setting up"
export DEVKIT=$bin DEVKIT_HOME=$home KV_DATA=$home/data
export KV_PORT=$(free_port) GATEWAY_PORT=$(free_port) GATEWAY_ADMIN_PORT=$(free_port)
export GATEWAY2_PORT=$(free_port) GATEWAY2_ADMIN_PORT=$(free_port)
export RATELIMIT_PREFIX="demo-$$-$RANDOM:" # a fresh budget even in a shared REDIS_URL
export DEVKIT_SUP_CONFIG=$root/examples/stack/ops.yaml
if ((redis_mode)); then
	export DEVKIT_SUP_CONFIG=$root/examples/stack/ops-redis.yaml
	export REDIS_PORT=$(free_port) REDIS_DIR=$home/redis
	mkdir -p "$REDIS_DIR"
	unset REDIS_URL KV_RESP_PORT
else
	export KV_RESP_PORT=$(free_port)
	unset REDIS_PORT
fi
cp examples/policies/saas.yaml "$home/policy.yaml"
export GATEWAY_POLICY=$home/policy.yaml
gw=http://127.0.0.1:$GATEWAY_PORT
gw2=http://127.0.0.1:$GATEWAY2_PORT
admin=http://127.0.0.1:$GATEWAY_ADMIN_PORT
free=(-H "X-Workspace-ID: acme" -H "X-Workspace-Plan: free" -H "X-User-ID: ada")
pro=(-H "X-Workspace-ID: globex" -H "X-Workspace-Plan: pro" -H "X-User-ID: grace")
# The policy keys on the route template (/keys/{key}): a user's PUT budget
# covers every key, so a step that needs a fresh budget uses a user of its own.
as_user() { printf '%s\n' -H "X-Workspace-ID: acme" -H "X-Workspace-Plan: free" -H "X-User-ID: $1"; }
mapfile -t bob < <(as_user bob)
mapfile -t carol < <(as_user carol)
mapfile -t dave < <(as_user dave)
mapfile -t erin < <(as_user erin)
mapfile -t frank < <(as_user frank)
say "devkit:   $("$bin" version | head -1)"
say "config:   $DEVKIT_SUP_CONFIG (policy: examples/policies/saas.yaml, copied to $GATEWAY_POLICY)"
say "home:     $home (DEVKIT_HOME; KV data in $KV_DATA)"
say "gateway:  $gw (admin $admin) → kv http://127.0.0.1:$KV_PORT"
say "gateway2: $gw2 (admin http://127.0.0.1:$GATEWAY2_ADMIN_PORT) → the same kv"
if ((redis_mode)); then
	say "limits:   in redis://127.0.0.1:$REDIS_PORT (a supervised redis-server), shared by both gateways"
elif [[ -n ${REDIS_URL:-} ]]; then
	say "limits:   in Redis at $REDIS_URL, shared by both gateways"
else
	say "limits:   in devkit kv, over its Redis protocol (redis://127.0.0.1:$KV_RESP_PORT), shared by both gateways"
	say "          and durable: kv runs with --sync always (set REDIS_URL, or run make demo-redis, for Redis)"
fi
# The environment ops.yaml reads: with it, every command below reruns as printed (KEEP=1 keeps the home).
rerun_env=(DEVKIT DEVKIT_HOME KV_DATA KV_PORT GATEWAY_PORT GATEWAY_ADMIN_PORT GATEWAY2_PORT GATEWAY2_ADMIN_PORT RATELIMIT_PREFIX DEVKIT_SUP_CONFIG GATEWAY_POLICY)
if ((redis_mode)); then rerun_env+=(REDIS_PORT REDIS_DIR); else rerun_env+=(KV_RESP_PORT); fi
if ((!redis_mode)) && [[ -n ${REDIS_URL:-} ]]; then rerun_env+=(REDIS_URL); fi
rerun_exports() {
	local v out=()
	for v in "${rerun_env[@]}"; do out+=("$v=$(quote "${!v}")"); done
	printf 'cd %s && export %s' "$(quote "$root")" "${out[*]}"
}
say "To rerun a command below yourself (from another shell, or after KEEP=1 make demo):"
say "  $(rerun_exports)"

section "1. Start the stack: kv first, then the two gateways in front of it, each waited for until ready"
expect_rc 0 devkit sup start --all
expect_rc 0 devkit sup status

section "2. Write and read keys through the gateway, as a free and as a pro tenant"
say "Tenants are named by X-Workspace-ID and X-Workspace-Plan (trusted from 127.0.0.1, see the policy's identity)."
show "$hit" -i "${free[@]}" -d "hello from acme" -expect 204 -has "X-RateLimit-Limit: 20" "$gw/keys/acme-greeting"
show "$hit" "${free[@]}" -body "hello from acme" -expect 200 "$gw/keys/acme-greeting"
show "$hit" -i "${pro[@]}" -d "hello from globex" -expect 204 -has "X-RateLimit-Limit: 100" "$gw/keys/globex-greeting"
show "$hit" "${pro[@]}" -body "hello from globex" -expect 200 "$gw/keys/globex-greeting"
say "A free workspace user may PUT 20 times a minute, a pro one 100 times (rule api, plans free and pro),"
say "on /keys/{key} as a whole: the key holds the route template, so other key names do not reset the budget."

section "3. Drive the free tenant past its limit: 25 PUTs by one user, 20 pass, then 429"
show "$hit" -X PUT "${bob[@]}" -d tick -n 25 -expect 204=20,429=5 "$gw/keys/acme-counter"
say "The next one, to another key, with its headers and the problem+json body (the limit blocks for 5 minutes once hit):"
show "$hit" -i -X PUT "${bob[@]}" -d tick -expect 429 -has "Retry-After: 300" -has "X-RateLimit-Remaining: 0" -has 'RateLimit-Policy: "api-free-put";q=20;w=60' "$gw/keys/acme-other-key"
say "The pro tenant is not affected: its budget is its own."
show "$hit" -X PUT "${pro[@]}" -d tick -n 25 -expect 204=25 "$gw/keys/globex-counter"

section "4. A login brute force ends in a block with Retry-After"
say "Rule login: 5 attempts per 15 minutes per client address, then blocked for 1 hour, whatever the plan."
say "The 5 allowed attempts reach the KV server, which has no /auth/login (404); the 6th is refused."
show "$hit" -X POST -d "user=ada&password=guess" -n 5 -expect 404=5 "$gw/auth/login"
show "$hit" -i -X POST -d "user=ada&password=guess" -expect 429 -has "Retry-After: 3600" "$gw/auth/login"
say "The block is the client address's, on every gateway (Retry-After: the rest of the hour):"
login_blocked "$gw2"

section "5. kill -9 the KV server; every acknowledged write survives"
say "Write 20 keys through the gateway; each 204 is an acknowledgement (--sync always: on disk first)."
for i in $(seq 1 20); do "$hit" "${pro[@]}" -d "value-$i" -expect 204 "$gw/keys/order-$i" >/dev/null; done
say "20 × 204"
kvpid=$("$bin" sup status --json kv | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
[[ -n $kvpid ]] || fail "no PID for kv in sup status --json"
show kill -9 "$kvpid"
for _ in $(seq 1 100); do kill -0 "$kvpid" 2>/dev/null || break; sleep 0.05; done
sleep 0.2 # the monitor records the exit
say "status now reports kv as exited by SIGKILL, and exits 3 (something is not running):"
expect_rc 3 devkit sup status
kvstatus=$("$bin" sup status kv || true)
grep -q SIGKILL <<<"$kvstatus" || fail "status does not report kv killed by SIGKILL"
say "Meanwhile the gateway answers 502 (problem+json) for the API:"
show "$hit" "${pro[@]}" -expect 502 "$gw/keys/order-1"
expect_rc 0 devkit sup start kv
say "Read every acknowledged write back after recovery:"
for i in $(seq 1 20); do "$hit" "${pro[@]}" -body "value-$i" -expect 200 "$gw/keys/order-$i" >/dev/null; done
say "20 × 200, each with its value"
show "$hit" "${free[@]}" -body "hello from acme" -expect 200 "$gw/keys/acme-greeting"
if ((!redis_mode)) && [[ -z ${REDIS_URL:-} ]]; then
	say "The limits live in the same kv, and so outlived the kill: the login block of step 4 still holds."
	login_blocked "$gw"
fi

section "6. Change a limit: free tenants get 30 PUTs a minute; reload shows the plan, then applies it"
sed 's/PUT:    \[{limit: 20, window: 1m/PUT:    [{limit: 30, window: 1m/' examples/policies/saas.yaml >"$home/policy-v2.yaml"
grep -q 'PUT:    \[{limit: 30' "$home/policy-v2.yaml" || fail "could not write the new policy"
show devkit ratelimit lint --policy "$home/policy-v2.yaml" >/dev/null
say "The gateway is pointed at the new policy (GATEWAY_POLICY in ops.yaml); reload compares with what runs:"
export GATEWAY_POLICY=$home/policy-v2.yaml
plan=$(devkit sup reload --dry-run)
printf '$ %s sup reload --dry-run\n%s\n' "$bin_shown" "$plan"
grep -Eq '^gateway +restart' <<<"$plan" || fail "reload --dry-run does not plan a gateway restart"
grep -Eq '^kv +none' <<<"$plan" || fail "reload --dry-run plans to touch kv"
expect_rc 0 devkit sup reload
expect_rc 0 devkit sup status
show "$hit" -X PUT "${carol[@]}" -d tick -n 35 -expect 204=30,429=5 "$gw/keys/acme-counter-v2"
show "$hit" "${free[@]}" -body "hello from acme" -expect 200 "$gw/keys/acme-greeting"
say "Edit the policy in place instead (free PUTs 30 → 40): the running gateway re-reads it (it polls every 2s), no restart."
gwpid=$("$bin" sup status --json gateway | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
sed 's/PUT:    \[{limit: 30, window: 1m/PUT:    [{limit: 40, window: 1m/' "$home/policy-v2.yaml" >"$home/policy-v2.yaml.new"
mv "$home/policy-v2.yaml.new" "$home/policy-v2.yaml"
reloaded=0
for i in $(seq 1 60); do
	if "$hit" -X PUT "${dave[@]}" -d tick -has "X-RateLimit-Limit: 40" "$gw/keys/acme-hot-$i" >/dev/null 2>&1; then reloaded=1; break; fi
	sleep 0.1
done
((reloaded)) || fail "the gateway did not pick up the edited policy within 6s"
show "$hit" -i -X PUT "${dave[@]}" -d tick -expect 204 -has "X-RateLimit-Limit: 40" "$gw/keys/acme-hot"
[[ $("$bin" sup status --json gateway | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p') == "$gwpid" ]] || fail "the gateway restarted"
say "Same gateway process (pid $gwpid), new limit."

store="devkit kv"
if ((redis_mode)) || [[ -n ${REDIS_URL:-} ]]; then store=Redis; fi
section "7. One limit across two gateways sharing $store"
# gateway2 polls the same policy file: wait until it too runs the edited
# limit, or the two would count under different limits.
reloaded=0
for i in $(seq 1 60); do
	if "$hit" -X PUT "${erin[@]}" -d tick -has "X-RateLimit-Limit: 40" "$gw2/keys/acme-hot2-$i" >/dev/null 2>&1; then reloaded=1; break; fi
	sleep 0.1
done
((reloaded)) || fail "gateway2 did not pick up the edited policy within 6s"
say "45 PUTs by one user, 15 at a time through gateway, gateway2, gateway: 40 pass in all (the limit), not 45."
show "$hit" -X PUT "${frank[@]}" -d tick -n 15 -expect 204=15 "$gw/keys/acme-shared"
show "$hit" -X PUT "${frank[@]}" -d tick -n 15 -expect 204=15 "$gw2/keys/acme-shared"
show "$hit" -X PUT "${frank[@]}" -d tick -n 15 -expect 204=10,429=5 "$gw/keys/acme-shared"

section "The gateway's /metrics (admin address), top lines"
denied=10 # 5 in step 6 (after the reload restarted the gateway), 5 in step 7
metrics=$("$hit" -grep "ratelimit_allowed_total,ratelimit_denied_total" -expect 200 "$admin/metrics")
printf '$ %s -grep ratelimit_allowed_total,ratelimit_denied_total %s\n%s\n' "$hit_shown" "$admin/metrics" "$metrics"
grep -qx " *ratelimit_denied_total{rule=\"api\"} $denied" <<<"$metrics" || fail "the gateway did not count $denied denials of rule api since its restart"

section "8. A login block outlives a gateway restart and a restart of the whole stack"
say "The gateways hold no count of their own: restart one, and the block of step 4 is still there."
expect_rc 0 devkit sup restart gateway
login_blocked "$gw"
if ((redis_mode)); then
	say "ops-redis.yaml's redis-server keeps nothing on disk (--save \"\" --appendonly no): stopping the"
	say "whole stack would forget the limits. make demo keeps them in devkit kv, which does not."
else
	say "Stop and start everything, kv included: the counts are on kv's disk (--sync always)."
	expect_rc 0 devkit sup stop --all
	expect_rc 0 devkit sup start --all
	login_blocked "$gw"
	login_blocked "$gw2"
fi

section "Stop everything"
pids=$("$bin" sup status --json | sed -n "s/.*\"pid\": *\([0-9]*\).*/\1/p")
[[ -n $pids ]] || fail "no PIDs in sup status --json"
expect_rc 0 devkit sup stop --all
expect_rc 3 devkit sup status
for p in $KV_PORT ${KV_RESP_PORT:-} $GATEWAY_PORT $GATEWAY_ADMIN_PORT $GATEWAY2_PORT $GATEWAY2_ADMIN_PORT ${REDIS_PORT:-}; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then fail "port $p still answers after stop"; fi
done
for p in $pids; do
	if kill -0 "$p" 2>/dev/null; then fail "process $p is still alive after stop"; fi
done
say "No process of the stack is left (PIDs $(echo $pids)), and none of its ports answers."

section "Done in $((SECONDS - started))s"
say "Every step above checked what it printed; the demo exits non-zero if one did not."
if [[ ${KEEP:-} == 1 ]]; then
	say "The home is kept: to start the stack again and rerun any command above, in a shell:"
	say "  $(rerun_exports) && $bin_shown sup start --all"
	say "Then watch it live (q quits top; dash prints its address):"
	say "  $bin_shown top     # or: $bin_shown dash"
else
	say "To rerun the commands yourself, or to watch the stack live with devkit top or devkit dash:"
	say "KEEP=1 make demo keeps the home and prints how."
fi
