# istio-job-sidecar quitEndpoint wrapper: see the policy's README, quitEndpoint
ijs_pid='' ijs_early='' ijs_got='' ijs_rc=''
ijs_fwd() {
case $1 in TERM|INT) ijs_got=1;esac
if [ -z "$ijs_pid" ];then ijs_early="$ijs_early $1"
elif kill -"$1" "$ijs_pid" 2>/dev/null&&[ "$2" -gt 128 ];then i=1
else k=1;fi
}
for ijs_s in TERM INT HUP QUIT USR1 USR2;do trap 'ijs_fwd '$ijs_s' $?' $ijs_s;done
exec 3<&0
(shift 2;exec "$@")<&3 3<&- &
ijs_pid=$!
exec 3<&-
for s in $ijs_early;do kill -"$s" "$ijs_pid" 2>/dev/null;done
while :;do
i='' k=''
wait "$ijs_pid";r=$?
[ "$i" ]&&continue
[ "$r" = 127 ]&&[ "$ijs_rc" ]&&break
ijs_rc=$r
[ -z "$k" ]&&break
done
case $2 in on-success)[ "$ijs_rc" = 0 ]||exit "$ijs_rc";;
unless:*)case ,${2#*:}, in *,"$ijs_rc",*)exit "$ijs_rc";esac;;
only:*)case ,${2#*:}, in *,"$ijs_rc",*);;*)exit "$ijs_rc";esac;esac
unset http_proxy HTTP_PROXY all_proxy ALL_PROXY
u=${1#*//}
a=${u%%/*}
h=${a%:*}
h=${h#[}
set -- "$1" "${h%]}" "${a##*:}" "/${u#*/}" "$a"
for c in curl wget busybox "${BASH:-bash}" perl python3 python '';do command -v "$c" >/dev/null&&break;done
[ "$c" ]||{ echo "istio-job-sidecar: no curl, wget, busybox, bash, perl or python to POST $1; use another mode" >&2;exit "$ijs_rc";}
for t in 1 2 3 4 5;do
case $c in
curl)curl -q -sf -m 2 -d '' "$1";;
wget|busybox)${c%wget} wget -qO- --post-data= "$1"&
w=$!
{ sleep 2||busybox sleep 2&&kill "$w";}&
d=$!
wait "$w";r=$?
kill "$d"
[ "$r" = 0 ];;
perl)perl -MIO::Socket -e'$s=IO::Socket::INET->new($ARGV[4])||exit 1;alarm 2;print$s "POST $ARGV[3] HTTP/1.0\r\nContent-Length: 0\r\n\r\n";<$s>=~/^\S+ 2/||exit 1' "$@";;
python*)"$c" -c'import socket,sys;a=sys.argv;s=socket.create_connection(a[2:4],2);s.sendall(b"POST "+a[4].encode()+b" HTTP/1.0\r\nContent-Length: 0\r\n\r\n");sys.exit(s.recv(12)[8:10]!=b" 2")' "$@";;
*)"$c" -c 'exec 3<>"/dev/tcp/$1/$2";printf "POST %s HTTP/1.0\r\nContent-Length: 0\r\n\r\n" "$3">&3;read -t 2 l<&3;[[ $l = HTTP/?.?\ 2* ]]' "$@"
esac>/dev/null 2>&1&&break
if [ "$ijs_got" ]||[ "$t" = 5 ];then echo "istio-job-sidecar: could not POST $1" >&2;break;fi
{ sleep 1||busybox sleep 1;} 2>/dev/null
done
exit "$ijs_rc"
