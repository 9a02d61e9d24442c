#!/bin/sh
# paxm hook launcher for the paxm-claude plugin; usage: paxm-hook.sh <Claude hook event>.
#
# `paxm setup --integration claude-plugin` generates a copy of this plugin with the absolute
# paths below filled in, so every hook runs paxm's hook client directly (absolute interpreter,
# -I -S, no PATH lookup, no CLI start-up).  Left empty, as in the copy shipped inside the
# Python distribution, it falls back to the `paxm` command ($PAXM_BINARY or PATH), which works
# but starts the whole CLI for every hook.  It always exits 0: a memory hook must never block
# or break a Claude Code turn.
PAXM_PYTHON=''
PAXM_CLIENT=''
PAXM_CONFIG_FILE=''
PAXM_QUEUE=''

event="${1:-}"
case "$event" in
  SessionStart|UserPromptSubmit|PostToolUse|PostToolUseFailure|Stop) ;;
  *) exit 0 ;;
esac
PAXM_INTEGRATION_OWNER=claude-plugin
export PAXM_INTEGRATION_OWNER

# Run the hook; print its output only when it succeeded, and always exit 0 (a stale venv or
# a removed paxm must never turn into exit 2, which Claude Code reads as "block this prompt").
# The trailing x keeps trailing newlines that $(...) would strip.
run_fail_open() {
  out=$("$@" 2>/dev/null; rc=$?; printf x; exit $rc) || exit 0
  printf %s "${out%x}"
  exit 0
}

if [ -n "$PAXM_PYTHON" ] && [ -x "$PAXM_PYTHON" ] && [ -f "$PAXM_CLIENT" ]; then
  if [ -n "$PAXM_QUEUE" ]; then
    run_fail_open "$PAXM_PYTHON" -I -S "$PAXM_CLIENT" --config "$PAXM_CONFIG_FILE" --target claude --event "$event" --queue "$PAXM_QUEUE"
  fi
  run_fail_open "$PAXM_PYTHON" -I -S "$PAXM_CLIENT" --config "$PAXM_CONFIG_FILE" --target claude --event "$event"
fi
if [ -n "$PAXM_PYTHON" ]; then
  exit 0  # generated for an install that is gone: do not start some other paxm
fi

if [ -n "${PAXM_BINARY:-}" ] && [ -x "${PAXM_BINARY}" ]; then
  paxm_bin="$PAXM_BINARY"
else
  paxm_bin="$(command -v paxm 2>/dev/null)" || exit 0
fi
run_fail_open "$paxm_bin" __hook --target claude --event "$event"
