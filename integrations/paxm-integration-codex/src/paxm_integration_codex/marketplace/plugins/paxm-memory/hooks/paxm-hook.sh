#!/bin/sh
# paxm hook launcher for the paxm-memory Codex plugin; usage: paxm-hook.sh <Codex hook event>.
#
# `paxm setup --integration codex-plugin` generates a copy of this plugin with the absolute
# paths below filled in, so every hook runs paxm's hook client directly (absolute interpreter,
# -I -S, no PATH lookup, no CLI start-up).  Left empty, as in the copy shipped inside the Python
# distribution, it falls back to the `paxm` command ($PAXM_BINARY or PATH).  It always exits 0
# and prints only what paxm answered: a memory hook must never block or break a Codex turn.
PAXM_PYTHON=''
PAXM_CLIENT=''
PAXM_CONFIG_FILE=''
PAXM_QUEUE=''

event="${1:-}"
case "$event" in
  SessionStart|UserPromptSubmit|PostToolUse|Stop) ;;
  *) exit 0 ;;
esac
PAXM_INTEGRATION_OWNER=codex-plugin
export PAXM_INTEGRATION_OWNER

if [ -n "$PAXM_PYTHON" ] && [ -x "$PAXM_PYTHON" ] && [ -f "$PAXM_CLIENT" ]; then
  if [ -n "$PAXM_QUEUE" ]; then
    exec "$PAXM_PYTHON" -I -S "$PAXM_CLIENT" --config "$PAXM_CONFIG_FILE" --target codex --event "$event" --json --queue "$PAXM_QUEUE"
  fi
  exec "$PAXM_PYTHON" -I -S "$PAXM_CLIENT" --config "$PAXM_CONFIG_FILE" --target codex --event "$event" --json
fi

if [ -n "${PAXM_BINARY:-}" ] && [ -x "${PAXM_BINARY}" ]; then
  paxm_bin="$PAXM_BINARY"
else
  paxm_bin="$(command -v paxm 2>/dev/null)" || exit 0
fi
out="$("$paxm_bin" __hook --target codex --event "$event" --json 2>/dev/null)" || exit 0
[ -n "$out" ] && printf '%s\n' "$out"
exit 0
