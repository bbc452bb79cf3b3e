# istio-job-sidecar quitEndpoint wrapper: runs the program, then asks the
# Istio agent to quit. $1: quit URL, $2: always|on-success, then the program.
ijs_fwd() {
  ijs_got=$1 ijs_int=1
  if [ -n "$ijs_pid" ]; then kill -"$1" "$ijs_pid" 2>/dev/null; else ijs_early=$1; fi
}
trap 'ijs_fwd TERM' TERM
trap 'ijs_fwd INT' INT
# A background job gets /dev/null as stdin: give it the real one by fd 3.
exec 3<&0
(shift 2; exec "$@") <&3 3<&- &
ijs_pid=$!
exec 3<&-
[ -z "$ijs_early" ] || kill -"$ijs_early" "$ijs_pid" 2>/dev/null
# A trapped signal ends wait early: wait again. 127 then means its status
# had already been collected by the wait before.
while :; do
  ijs_int=
  wait "$ijs_pid"; ijs_r=$?
  [ "$ijs_r" = 127 ] && [ -n "$ijs_rc" ] && break
  ijs_rc=$ijs_r
  [ -z "$ijs_int" ] && break
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
