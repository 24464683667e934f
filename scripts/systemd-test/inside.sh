#!/usr/bin/env bash
# Runs inside the Debian 12 container that scripts/package-test-systemd boots with systemd as
# PID 1 (a oneshot unit after multi-user.target), as an operator would: installs the packages
# with apt, then checks the services under systemd. Writes what it finds to /root/systemd-test.log
# and "N passed, N failed" as its last line; the host reads it after the container powers off.
set -uo pipefail
exec > /root/systemd-test.log 2>&1
passed=0 failed=0
check() {  # description, then a command that must succeed
  local what=$1; shift
  if out=$("$@" 2>&1); then passed=$((passed + 1)); echo "ok: $what"; else
    failed=$((failed + 1)); echo "FAILED: $what"; printf '%s\n' "$out" | head -30 | sed 's/^/  /'
  fi
}
# Polls `command` every 0.2 s for up to `seconds`; when it never succeeds, its last output.
within() {
  local seconds=$1; shift
  local deadline=$((SECONDS + seconds))
  until "$@" > /dev/null 2>&1; do
    if ((SECONDS >= deadline)); then "$@"; return 1; fi
    sleep 0.2
  done
}
main_pid() { systemctl show -p MainPID --value "$1"; }
active() { [[ $(systemctl is-active "$1") == active ]]; }
count() {  # the number of events an EVENTS query counts, as root or as user $2
  local q="EVENTS $1 COUNT"
  if [[ -n ${2:-} ]]; then runuser -u "$2" -- eventctl -o jsonl "$q"; else eventctl -o jsonl "$q"; fi |
    sed -n 's/.*"count": *\([0-9]*\).*/\1/p'
}
# check runs its command in a subshell: the number of markers emitted is kept in a file.
echo 0 > /root/emitted
emitted() { cat /root/emitted; }
emit() {  # n markers of type app.marker (as root: kmes-emit needs no privilege for user events)
  kmes-emit -t app.marker -n "$1" && echo $(($(emitted) + $1)) > /root/emitted
}
markers_exact() {  # every marker emitted is stored, once
  local stored emitted
  emitted=$(emitted)
  stored=$(count app.marker)
  echo "stored $stored of $emitted emitted"
  [[ $stored == "$emitted" ]]
}
finish() {
  fsfreeze -u /var/lib/eventd 2> /dev/null  # a check that failed with the store frozen
  echo "--- journal of our units"
  journalctl -b -u kmes-shim -u eventd --no-pager -o short-precise | tail -80
  echo "$passed passed, $failed failed"
  systemctl poweroff --no-block
  exit 0
}
trap finish EXIT

echo "--- install"
check "apt-get update" apt-get update -qq
check "apt installs eventd and libkmes0 from the .debs" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq /root/debs/eventd_*.deb /root/debs/libkmes0_*.deb
check "kmes-shim is active (Type=notify: it said READY)" within 30 active kmes-shim
check "eventd is active (Type=notify: it said READY)" within 30 active eventd
check "kmes-shim reports a STATUS=" test -n "$(systemctl show -p StatusText --value kmes-shim)"
check "eventd reports a STATUS=" test -n "$(systemctl show -p StatusText --value eventd)"
echo "  kmes-shim: $(systemctl show -p StatusText --value kmes-shim)"
echo "  eventd: $(systemctl show -p StatusText --value eventd)"
# Issue 28: a store without a sealing key is said at every start, as a warning — the one
# expected here; it is checked on its own.
check "eventd warns at its start that the store is not sealed (no sealing key yet)" sh -c \
  "journalctl -b -u eventd -p warning --no-pager -o cat | grep 'is not sealed'"
check "the journal of the start shows no other error or warning from our units" sh -c \
  'out=$(journalctl -b -u kmes-shim -u eventd -p warning --no-pager -o cat | grep -v "is not sealed"); echo "$out"; test -z "$out"'

echo "--- queries, as root and as a user"
check "kmes-emit 100 markers" emit 100
check "eventctl as root counts them" within 10 markers_exact
useradd -m alice
check "an unprivileged user sees nothing of them (default policy: group adm)" \
  test "$(count app.marker alice)" = 0
cp /etc/eventd/eventd.json /root/eventd.json.orig
# The shipped file has no Security key: the policy goes in after its first brace.
sed -i '0,/^{/s//{\n  "Security": {"Events": {"*": [{"allow": ["group:adm"]}], "app": [{"allow": ["user:alice"]}]}},/' \
  /etc/eventd/eventd.json
check "systemctl reload eventd" systemctl reload eventd
check "after the reload the user sees the app events the new policy grants" \
  within 10 sh -c "test \"\$(runuser -u alice -- eventctl -o jsonl 'EVENTS app.marker COUNT' | sed -n 's/.*\"count\": *\([0-9]*\).*/\1/p')\" = $(emitted)"
check "…and still nothing else" test "$(count synthetic.* alice)" = 0

echo "--- sealing (issue 28): set up while eventd runs, taken at a reload"
store=/var/lib/eventd/events
key=$(eventctl seal --setup --store "$store" --epoch-seconds 60 --years 0.01 | tail -1)
echo "  verification key: $key"
check "eventctl seal --setup printed a verification key" sh -c "echo '$key' | grep -qE '^[0-9a-f]{64}\$'"
check "sealing.key belongs to eventd, mode 0600" test "$(stat -c '%U %a' "$store/sealing.key")" = "eventd 600"
check "systemctl reload eventd (takes the key)" systemctl reload eventd
check "eventd seals the store after the reload" \
  within 15 sh -c "journalctl -b -u eventd --no-pager -o cat | grep -q 'sealing the store'"
check "eventctl verify through eventd: everything sealed verifies (exit 0)" eventctl verify --key "$key"
verified_offline() {  # the running store, read directly: intact; rows after the last checkpoint unsealed
  eventctl verify --store "$store" --key "$key"
  local rc=$?
  [[ $rc == 0 || $rc == 3 ]]
}
check "eventctl verify --store on the running store: intact" verified_offline

echo "--- crashes and the watchdog"
pid=$(main_pid eventd)
kill -9 "$pid"
check "kill -9 eventd: systemd starts it again" within 30 sh -c "[ \"\$(systemctl show -p MainPID --value eventd)\" != $pid ] && [ \"\$(systemctl is-active eventd)\" = active ]"
check "kmes-emit 100 more" emit 100
check "eventd resumed exactly: every marker stored once" within 15 markers_exact
check "…on the same KMES boot" test "$(eventctl -o jsonl 'EVENTS app.marker COUNT BY boot_id' | wc -l)" = 1
pid=$(main_pid eventd)
kill -STOP "$pid"
check "SIGSTOP eventd: the watchdog (WatchdogSec=30s) has systemd kill and restart it" \
  within 75 sh -c "[ \"\$(systemctl show -p MainPID --value eventd)\" != $pid ] && [ \"\$(systemctl is-active eventd)\" = active ]"
check "kmes-emit 100 more" emit 100
check "the store is exact after the watchdog restart" within 15 markers_exact
# A disk that stops answering (issue 40 item 4): the store's own file system (a loop device the
# host mounted here) frozen, so eventd's writer blocks in its commit while its drains, query
# server and timers go on. Before the health-gated watchdog eventd kept pinging and stayed
# wedged; now the pings stop, systemd's watchdog kills it, and once the disk answers again the
# restarted eventd stores what came meanwhile.
pid=$(main_pid eventd)
since=$(date '+%Y-%m-%d %H:%M:%S')
check "the store's file system frozen (fsfreeze)" fsfreeze -f /var/lib/eventd
check "kmes-emit 100 more (eventd's writer now has work it cannot commit)" emit 100
check "…eventd says which part made no progress, and stops the watchdog's pings" within 45 sh -c \
  "journalctl -u eventd --since '$since' --no-pager -o cat | grep 'watchdog: shard writer .* has made no progress'"
check "…systemd's watchdog fires on it (WatchdogSec=30s)" within 60 sh -c \
  "journalctl -u eventd --since '$since' --no-pager -o cat | grep 'Watchdog timeout'"
check "the file system thawed" fsfreeze -u /var/lib/eventd
check "…and systemd has started eventd again" within 60 sh -c \
  "[ \"\$(systemctl show -p MainPID --value eventd)\" != $pid ] && [ \"\$(systemctl is-active eventd)\" = active ]"
check "the store is exact after the frozen disk: every marker stored once" within 30 markers_exact
shim=$(main_pid kmes-shim)
kill -9 "$shim"
check "kill -9 kmes-shimd: systemd starts it again" within 30 sh -c "[ \"\$(systemctl show -p MainPID --value kmes-shim)\" != $shim ] && [ \"\$(systemctl is-active kmes-shim)\" = active ]"
check "…and eventd is active on the new shim" within 60 active eventd
check "kmes-emit 100 more" within 30 emit 100
check "every marker stored once across the shim's restart" within 30 markers_exact
check "the journal has eventd's critical line at its priority (sd-daemon prefixes: journalctl -p works)" \
  sh -c "journalctl -b -u eventd -p warning --no-pager -o cat | grep 'lost the KMES ring'"
check "…and a new KMES boot recorded" test "$(eventctl -o jsonl 'EVENTS app.marker COUNT BY boot_id' | wc -l)" = 2

echo "--- stop, upgrade, remove, purge"
sleep 1  # the journal's --since counts in seconds: nothing of the faults above in the check below
since=$(date '+%Y-%m-%d %H:%M:%S')
start=$(date +%s%N)
check "systemctl stop eventd" systemctl stop eventd
took=$((($(date +%s%N) - start) / 1000000))
check "…finished within 2 s (took ${took} ms)" test "$took" -lt 2000
check "systemctl start eventd" systemctl start eventd
check "eventd active again" within 30 active eventd
# The next version: the same package with a higher version number (what an upgrade runs).
version=$(dpkg-query -W -f='${Version}' eventd)
work=$(mktemp -d)
dpkg-deb -R /root/debs/eventd_*.deb "$work/eventd"
sed -i "s/^Version: .*/Version: ${version}+next1/" "$work/eventd/DEBIAN/control"
dpkg-deb -b "$work/eventd" "$work/eventd_next.deb" > /dev/null
check "upgrade to ${version}+next1 with apt" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq -o Dpkg::Options::=--force-confold "$work/eventd_next.deb"
check "the upgrade kept the changed configuration" grep -q '"user:alice"' /etc/eventd/eventd.json
check "eventd active after the upgrade" within 30 active eventd
check "the upgrade kept the store: every marker still there" within 15 markers_exact
check "the store verifies after the crashes, the watchdog, the shim's restart and the upgrade" \
  eventctl verify --key "$key"
check "no error or warning from our units through stop, start and upgrade" sh -c \
  "out=\$(journalctl -u kmes-shim -u eventd -p warning --since '$since' --no-pager -o cat); echo \"\$out\"; test -z \"\$out\""
check "apt remove eventd" env DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq eventd
check "removed: the configuration stays" test -e /etc/eventd/eventd.json
purge_out=$(env DEBIAN_FRONTEND=noninteractive apt-get purge -y eventd 2>&1)
echo "$purge_out" | sed 's/^/  /' | tail -8
check "purged: the configuration is gone" sh -c '! test -e /etc/eventd/eventd.json'
check "purged: the event store is kept" sh -c 'ls /var/lib/eventd/events/shard-*.db'
check "purged: apt's output says where the store is" sh -c "printf '%s' \"\$1\" | grep -q /var/lib/eventd" _ "$purge_out"
