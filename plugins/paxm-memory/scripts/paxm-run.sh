#!/bin/sh
# The one launcher of the paxm plugin for Claude Code and Codex.
#
#   paxm-run.sh hook <claude|codex> <Event>   a passive-memory hook (hooks/hooks.json, hooks/codex-hooks.json)
#   paxm-run.sh mcp <claude|codex>            the paxm MCP server (.mcp.json, codex-mcp.json)
#
# The plugin ships no Python: it finds the paxm the user installed ($PAXM_BINARY, PATH, then
# where `uv tool install` and `pipx install` put it) and, for a hook, runs that installation's
# stdlib-only hook client (`<venv python> -I -S .../paxm_core/passive/client.py`), the same
# command `paxm setup` writes into settings.json, so no CLI start-up sits on the prompt path.
# A hook always exits 0 and prints only what paxm answered: a missing or broken paxm must never
# block or break a turn (Claude Code reads exit 2 as "block this prompt").  When paxm is not
# installed, SessionStart tells the user how to install it; every other hook does nothing.

mode="${1:-}"
target="${2:-}"
event="${3:-}"

case "$target" in
  claude) owner=claude-plugin ;;
  codex) owner=codex-plugin ;;
  *) [ "$mode" = mcp ] && echo "paxm plugin: unknown agent '$target'" >&2; exit 0 ;;
esac

# The installed `paxm` command: $PAXM_BINARY, PATH, the uv tool and pipx locations.
find_paxm() {
  data="${XDG_DATA_HOME:-$HOME/.local/share}"
  for candidate in \
    "${PAXM_BINARY:-}" \
    "$(command -v paxm 2>/dev/null)" \
    "${XDG_BIN_HOME:-$HOME/.local/bin}/paxm" \
    "${UV_TOOL_BIN_DIR:+$UV_TOOL_BIN_DIR/paxm}" \
    "${UV_TOOL_DIR:-$data/uv/tools}/paxm/bin/paxm" \
    "${PIPX_BIN_DIR:+$PIPX_BIN_DIR/paxm}" \
    "${PIPX_HOME:-$data/pipx}/venvs/paxm/bin/paxm" \
    "$HOME/.local/pipx/venvs/paxm/bin/paxm"; do
    case "$candidate" in /*) ;; *) continue ;; esac
    if [ -f "$candidate" ] && [ -x "$candidate" ]; then
      paxm_bin="$candidate"
      return 0
    fi
  done
  return 1
}

# The interpreter and hook client of the installation $paxm_bin belongs to.
find_client() {
  real=$(readlink -f "$paxm_bin" 2>/dev/null) || real="$paxm_bin"
  [ -n "$real" ] || real="$paxm_bin"
  bin_dir="${real%/*}"
  python="$bin_dir/python"
  if [ ! -x "$python" ]; then
    # a console script outside a virtualenv (pip install --user): its #! line names the Python
    python=""
    IFS= read -r first <"$real" 2>/dev/null || first=""
    case "$first" in
      '#!/'*) python="${first#??}"; python="${python%% *}" ;;
    esac
    [ -n "$python" ] && [ -x "$python" ] || return 1
  fi
  world_writable "$python" && exit 0 # never start an interpreter anyone may rewrite
  # a wheel install (uv tool, pipx, a venv): the client sits in that environment's site-packages
  for client in "${bin_dir%/*}"/lib/python3*/site-packages/paxm_core/passive/client.py; do
    [ -f "$client" ] && return 0
  done
  # an editable or system install: ask the interpreter where paxm_core is (imports nothing of paxm)
  client=$("$python" -I -c 'import importlib.util as u; s = u.find_spec("paxm_core"); print(list(s.submodule_search_locations)[0] + "/passive/client.py")' 2>/dev/null) || return 1
  [ -f "$client" ]
}

# Whether any of the files or directories given can be rewritten by every user (through
# symlinks): such a file is never run, since another user could put code in it.
world_writable() {
  [ -n "$(find -L "$@" -prune -perm -0002 2>/dev/null)" ]
}

# Run "$@"; print its output only when it succeeded; always exit 0.  The trailing x keeps
# trailing newlines that $(...) would strip.
run_fail_open() {
  out=$("$@" 2>/dev/null; rc=$?; printf x; exit $rc) || exit 0
  printf %s "${out%x}"
  exit 0
}

missing_hint() {
  extra="$target"
  [ "$target" = claude ] && extra=claude-code
  printf '%s' "paxm plugin: the paxm command was not found (looked on PATH, in ~/.local/bin and in the uv tool and pipx directories). Install it with: uv tool install 'paxm[$extra]' (or: pipx install 'paxm[$extra]'), then run: paxm setup --yes --agent $target --integration $owner"
}

if [ "$mode" = mcp ]; then
  if find_paxm; then
    if world_writable "$paxm_bin"; then
      echo "paxm plugin: not starting $paxm_bin: it is writable by every user" >&2
      exit 126
    fi
    exec "$paxm_bin" mcp serve --agent "$target"
  fi
  missing_hint >&2
  echo >&2
  exit 127
fi

[ "$mode" = hook ] || exit 0
case "$event" in
  SessionStart | UserPromptSubmit | PostToolUse | PostToolUseFailure | Stop) ;;
  *) exit 0 ;;
esac

if ! find_paxm; then
  if [ "$event" = SessionStart ]; then
    # shown to the user (systemMessage), never added to the model's context, exit 0: nothing blocks
    printf '{"systemMessage": "%s"}\n' "$(missing_hint)"
  fi
  exit 0
fi

PAXM_INTEGRATION_OWNER="$owner"
export PAXM_INTEGRATION_OWNER
json=""
[ "$target" = codex ] && json="--json"

if find_client; then
  world_writable "$client" "${client%/*}" && exit 0
  # shellcheck disable=SC2086  # $json is empty or one word
  run_fail_open "$python" -I -S "$client" --target "$target" --event "$event" $json
fi
world_writable "$paxm_bin" && exit 0
# shellcheck disable=SC2086
run_fail_open "$paxm_bin" __hook --target "$target" --event "$event" $json
