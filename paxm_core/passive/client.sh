# paxm's shell hook client: sourced (never executed) by the installed hook command
#
#   <bash> -c '[ -f "$1" ] || exit 0; . "$1"; exit 0' paxm-hook <this file> \
#       <python> -I -S <client.py> --config C --target T --event E [--<mode>] [--timeout S]
#
# It reaches a warm hook daemon over its loopback port without starting Python: read
# <hooks>/paxm-hook.tcp (port, client token, daemon token), connect with /dev/tcp, check that
# the daemon greets with its token, send one frame (header line + raw payload), print the
# framed reply.  Builtins only on this path (no fork, no exec).  Anything else -- no file, a
# refused connection, a wrong greeting, an old bash, a payload over SHELL_MAX_PAYLOAD bytes,
# a daemon that dies or stalls -- runs the Python client under the same fail-open guard as
# the /bin/sh form; once the payload was sent, with the same --event-id and --no-daemon, so
# the inbox (idempotent by event id) stores the event at most once.  Always exits 0.
# .paxm-ignore is honoured by the daemon for this path (the same opted_out() check).

trap '' PIPE         # a daemon that closes early must not kill us with SIGPIPE
exec 2>/dev/null     # fail open: the harness never sees a shell diagnostic
shift                # drop this file's path: "$@" is now the Python client's argv

_paxm_lc_set=${LC_ALL+x} _paxm_lc=${LC_ALL-}
LC_ALL=C             # lengths and reads in bytes, not characters

# the same guard as FAIL_OPEN_GUARD in client_command.py: print only what a client that
# exited 0 wrote; "$1" is the interpreter, "$4" client.py
_paxm_python() {
    if [ -n "$_paxm_lc_set" ]; then LC_ALL=$_paxm_lc; else unset LC_ALL; fi
    [ -x "$1" ] && [ -f "$4" ] || exit 0
    local out
    out=$("$@" "${_paxm_extra[@]}" 2>/dev/null; rc=$?; printf x; exit $rc) || exit 0
    printf %s "${out%x}"
    exit 0
}

# fallback before anything was read from stdin: the Python client reads it itself
_paxm_fallback() {
    [ -n "$_paxm_fd" ] && exec {_paxm_fd}>&-
    _paxm_python "$@"
}

# fallback after stdin was read: feed what was read (and whatever is still unread)
_paxm_refeed() {
    [ -n "$_paxm_fd" ] && exec {_paxm_fd}>&-
    if [ -n "$_paxm_more" ] && command -v cat >/dev/null; then
        { printf %s "$_paxm_payload"; exec cat; } | _paxm_python "$@"
    else
        printf %s "$_paxm_payload" | _paxm_python "$@"
    fi
    exit 0
}

_paxm_extra=()
_paxm_fd=
_paxm_more=

# bash >= 5.1: $SRANDOM (the event id) and $EPOCHREALTIME
if ((BASH_VERSINFO[0] < 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] < 1))); then
    _paxm_fallback "$@"
fi

SHELL_MAX_PAYLOAD=8192   # bash reads a pipe one byte per read(2): bigger payloads go to Python
SHELL_SENT_WHOLE=12288   # replies up to this many output bytes are read without a timeout (below)
_paxm_cfg= _paxm_target= _paxm_event= _paxm_mode=text _paxm_timeout=5
_paxm_args=("${@:5}")
for ((_i = 0; _i < ${#_paxm_args[@]}; _i++)); do
    _a=${_paxm_args[_i]}
    case $_a in
        --config|-c) _paxm_cfg=${_paxm_args[++_i]} ;;
        --config=*) _paxm_cfg=${_a#*=} ;;
        --target) _paxm_target=${_paxm_args[++_i]} ;;
        --target=*) _paxm_target=${_a#*=} ;;
        --event) _paxm_event=${_paxm_args[++_i]} ;;
        --event=*) _paxm_event=${_a#*=} ;;
        --mode) _paxm_mode=${_paxm_args[++_i]} ;;
        --mode=*) _paxm_mode=${_a#*=} ;;
        --timeout) _paxm_timeout=${_paxm_args[++_i]} ;;
        --timeout=*) _paxm_timeout=${_a#*=} ;;
        --queue|--queue=*|--event-id|--event-id=*|--no-daemon) _paxm_fallback "$@" ;;
        --*=*) ;;
        --[A-Za-z_]*) _paxm_mode=${_a#--} ;;
    esac
done
_paxm_event=${_paxm_event:-user_input}
_paxm_owner=${PAXM_INTEGRATION_OWNER:--}
# one frame header line: every word must be non-empty and free of whitespace
for _a in "$_paxm_target" "$_paxm_event" "$_paxm_mode" "$_paxm_owner"; do
    [[ -n $_a && $_a != *[[:space:]]* ]] || _paxm_fallback "$@"
done
[[ $_paxm_cfg == /* ]] || _paxm_fallback "$@"

# the budget, in microseconds (Python's parse_args: at least 0.05 s, 5 s if unreadable).
# Digit checks are glob patterns, not =~: bash compiles a regex on every match (~10 us each).
_i=${_paxm_timeout%%.*} _f=
[[ $_paxm_timeout == *.* ]] && _f=${_paxm_timeout#*.}
if [[ -n $_i && ${#_i} -le 6 && $_i != *[!0-9]* && ${#_f} -le 6 && $_f != *[!0-9]* ]]; then
    _f=${_f}000000
    _paxm_budget=$((10#$_i * 1000000 + 10#${_f:0:6}))
    ((_paxm_budget < 50000)) && _paxm_budget=50000
else
    _paxm_budget=5000000
fi
_paxm_start=${EPOCHREALTIME/./}
_paxm_secs() { printf -v "$1" '%d.%06d' $(($2 / 1000000)) $(($2 % 1000000)); }
# microseconds left before the deadline, keeping $1 in reserve (for a fallback's Python start)
_paxm_left() {
    local now=${EPOCHREALTIME/./}
    _paxm_us=$((_paxm_start + _paxm_budget - now - $1))
    ((_paxm_us > 10000)) || _paxm_us=10000
}

IFS=' ' read -r _paxm_port _paxm_ctok _paxm_dtok _ <"${_paxm_cfg%/*}/hooks/paxm-hook.tcp" || _paxm_fallback "$@"
[[ -n $_paxm_port && ${#_paxm_port} -le 5 && $_paxm_port != *[!0-9]* && ${#_paxm_ctok} -eq 32 && ${#_paxm_dtok} -eq 32 &&
    $_paxm_ctok$_paxm_dtok != *[!0-9a-f]* ]] || _paxm_fallback "$@"
exec {_paxm_fd}<>"/dev/tcp/127.0.0.1/$_paxm_port" || { _paxm_fd=; _paxm_fallback "$@"; }

# the daemon speaks first: a stale file's port taken by another process never gets a prompt
_g=$((_paxm_budget / 2)); ((_g > 1000000)) && _g=1000000
_paxm_secs _t $_g
IFS=' ' read -r -t "$_t" _magic _tok _ <&$_paxm_fd
_rc=$?
if ((_rc > 128)); then
    # no greeting in time: the daemon is stopped or swamped; don't wait for it twice
    _paxm_left 0
    _paxm_secs _t $_paxm_us
    _paxm_extra=(--no-daemon --timeout "$_t")
    _paxm_fallback "$@"
fi
# closed at once or a stranger's greeting: nothing was sent; the Python client tries the socket
((_rc == 0)) && [[ $_magic == PAXM-DAEMON && $_tok == "$_paxm_dtok" ]] || _paxm_fallback "$@"

# the payload: bounded in size and time like the Python client (a tty gives none)
_paxm_payload=
if [ ! -t 0 ]; then
    _s=$((_paxm_budget < 2000000 ? _paxm_budget : 2000000))
    _paxm_secs _t $_s
    IFS= read -r -d '' -N $((SHELL_MAX_PAYLOAD + 1)) -t "$_t" _paxm_payload
    if ((${#_paxm_payload} > SHELL_MAX_PAYLOAD)); then
        _paxm_more=1
        _paxm_refeed "$@"
    fi
fi

printf -v _paxm_eid 'evt_%08x%08x%08x%08x' "$SRANDOM" "$SRANDOM" "$SRANDOM" "$SRANDOM"
_paxm_extra=(--event-id "$_paxm_eid" --no-daemon)
printf 'PAXM-SH1 %s %s %d %s %s %s %s %s\n%s' "$_paxm_ctok" "$_paxm_eid" "${#_paxm_payload}" \
    "$EPOCHREALTIME" "$_paxm_target" "$_paxm_event" "$_paxm_mode" "$_paxm_owner" "$_paxm_payload" \
    >&$_paxm_fd || _paxm_refeed "$@"

# the framed reply: PAXM-HOOK <ok> <n>\n<n bytes of output><error lines>
_paxm_left 250000
_paxm_secs _t $_paxm_us
IFS=' ' read -r -t "$_t" _magic _ok _n <&$_paxm_fd || _paxm_refeed "$@"
[[ $_magic == PAXM-HOOK && -n $_n && ${#_n} -le 9 && $_n != *[!0-9]* ]] || _paxm_refeed "$@"
_paxm_out=
if ((_n > SHELL_SENT_WHOLE)); then
    _paxm_left 250000
    _paxm_secs _t $_paxm_us
    IFS= read -r -d '' -N "$_n" -t "$_t" _paxm_out <&$_paxm_fd
elif ((_n > 0)); then
    # The daemon writes header and output with one send of at most SHELL_SENT_WHOLE + 64
    # bytes, less than a fresh loopback socket's send buffer: once the header is here the
    # kernel holds the whole output, and a daemon stopped or killed now cannot hold it back
    # (EOF at worst).  So no -t: with a timeout bash makes two syscalls per byte read.
    IFS= read -r -d '' -N "$_n" _paxm_out <&$_paxm_fd
fi
if ((_n > 0)); then
    ((${#_paxm_out} == _n)) || _paxm_refeed "$@"
    [[ $_paxm_out == *$'\n' ]] || _paxm_out+=$'\n'
    printf %s "$_paxm_out"
fi
exit 0
