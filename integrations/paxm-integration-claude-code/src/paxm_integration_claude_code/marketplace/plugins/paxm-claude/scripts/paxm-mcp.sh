#!/bin/sh
# Starts `paxm mcp serve --agent claude` for the paxm-claude plugin.
#
# The copy `paxm setup --integration claude-plugin` generates has the absolute paxm command and
# config file filled in; the shipped copy finds `paxm` through $PAXM_BINARY or PATH.
PAXM_EXE=''
PAXM_CONFIG_FILE=''

if [ -n "$PAXM_EXE" ] && [ -x "$PAXM_EXE" ]; then
  if [ -n "$PAXM_CONFIG_FILE" ]; then
    exec "$PAXM_EXE" --config "$PAXM_CONFIG_FILE" mcp serve --agent claude
  fi
  exec "$PAXM_EXE" mcp serve --agent claude
fi
if [ -n "${PAXM_BINARY:-}" ] && [ -x "${PAXM_BINARY}" ]; then
  exec "$PAXM_BINARY" mcp serve --agent claude
fi
if command -v paxm >/dev/null 2>&1; then
  exec paxm mcp serve --agent claude
fi
echo "paxm-claude: the paxm command was not found; install paxm, then run: paxm setup --integration claude-plugin" >&2
exit 127
