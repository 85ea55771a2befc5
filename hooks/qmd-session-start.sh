#!/bin/sh
# qmd-daemon SessionStart hook (Claude Code and Codex).
# Inside a git repository, start `qmd-warm` detached (it starts the daemon when absent and
# refreshes + embeds the repository) and exit 0 at once. Outside one, do nothing. Errors go to
# the hook log; a hook never blocks or fails a session.
QMD_WARM_DEFAULT=""  # filled in by the installer with its qmd-warm wrapper

umask 077  # the log folder and hooks.log are the user's alone, like every state file
dir=${CLAUDE_PROJECT_DIR:-$PWD}
# A leading ~ that no shell expanded (a variable set in an agent's settings file) means the home
# folder, as the clients read it: else the log would land in a folder named ~ under the project.
home_path() {
  case $1 in
    "~") printf '%s' "$HOME" ;;
    "~/"*) printf '%s/%s' "$HOME" "${1#"~/"}" ;;
    *) printf '%s' "$1" ;;
  esac
}
if [ -n "$QMD_DAEMON_HOME" ]; then
  log_dir="$(home_path "$QMD_DAEMON_HOME")/state/logs"
else
  log_dir="$(home_path "${XDG_STATE_HOME:-$HOME/.local/state}")/qmd-daemon/logs"
fi
root=$(git -C "$dir" rev-parse --show-toplevel 2>/dev/null) || exit 0
[ -n "$root" ] || exit 0
warm=${QMD_WARM:-$QMD_WARM_DEFAULT}
if [ -z "$warm" ] || [ ! -x "$warm" ]; then
  warm=$(command -v qmd-warm 2>/dev/null)
fi
mkdir -p "$log_dir" 2>/dev/null
if [ -z "$warm" ]; then
  printf '%s session-start: qmd-warm not found (run install.sh)\n' "$(date '+%Y-%m-%d %H:%M:%S')" \
    >>"$log_dir/hooks.log" 2>/dev/null
  exit 0
fi
# Double fork: the hook's shell does not wait, and no pipe of the agent stays open.
( "$warm" --repo "$root" </dev/null >>"$log_dir/hooks.log" 2>&1 & ) >/dev/null 2>&1 </dev/null
exit 0
