# istio-job-sidecar quitEndpoint wrapper: runs the program, then asks the
# Istio agent to quit. $1: quit URL, $2: always|on-success, then the program.
ijs_pid='' ijs_early='' ijs_got='' ijs_rc=''
# Passes signal $1 on. $2, the status before the trap, is above 128 after a
# wait cut short: if the program is still there, its status is yet to come.
ijs_fwd() {
  case $1 in TERM|INT) ijs_got=1; esac
  if [ -z "$ijs_pid" ]; then ijs_early="$ijs_early $1"
  elif kill -"$1" "$ijs_pid" 2>/dev/null && [ "$2" -gt 128 ]; then ijs_int=1
  else ijs_chk=1; fi
}
# shellcheck disable=SC2064
for ijs_s in TERM INT HUP QUIT USR1 USR2; do trap "ijs_fwd $ijs_s \$?" $ijs_s; done
# A background job gets /dev/null as stdin: give it the real one by fd 3.
exec 3<&0
(shift 2; exec "$@") <&3 3<&- &
ijs_pid=$!
exec 3<&-
for ijs_s in $ijs_early; do kill -"$ijs_s" "$ijs_pid" 2>/dev/null; done
# A wait that no trap followed gives the status. After ijs_chk, wait again:
# 127 then means the wait before had collected it.
while :; do
  ijs_int='' ijs_chk=''
  wait "$ijs_pid"; ijs_r=$?
  [ -n "$ijs_int" ] && continue
  [ "$ijs_r" = 127 ] && [ -n "$ijs_rc" ] && break
  ijs_rc=$ijs_r
  [ -z "$ijs_chk" ] && break
done
ijs_post() {
  if command -v curl >/dev/null 2>&1; then
    curl -q -sf -m 2 -o /dev/null -X POST "$1"
  elif command -v wget >/dev/null 2>&1; then
    # Not every wget has a timeout option: a watchdog bounds it.
    wget -q -O /dev/null --post-data= "$1" >/dev/null 2>&1 &
    ijs_w=$!
    (sleep 2; kill "$ijs_w") >/dev/null 2>&1 &
    ijs_k=$!
    wait "$ijs_w"; ijs_r=$?
    kill "$ijs_k" 2>/dev/null
    return "$ijs_r"
  else
    echo "istio-job-sidecar: neither curl nor wget to POST $1" >&2
  fi
}
if [ "$2" != on-success ] || [ "$ijs_rc" = 0 ]; then
  unset http_proxy HTTP_PROXY all_proxy ALL_PROXY
  for ijs_try in 1 2 3 4 5; do
    ijs_post "$1" && break
    if [ -n "$ijs_got" ] || [ "$ijs_try" = 5 ]; then
      echo "istio-job-sidecar: could not POST $1" >&2
      break
    fi
    sleep 1
  done
fi
exit "$ijs_rc"
