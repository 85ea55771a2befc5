#!/bin/sh
# Replays a user's upgrade end to end and prints what it checked (not run in CI; ~3-6 min).
#
#   bench/upgrade_walk.sh OLD_COMMIT [install|pip]
#
# On a throwaway HOME: install OLD_COMMIT with its own install.sh (small profile), index three
# small repositories from ~/.cache/qmd-eval/git-corpora the way an agent does (session-start hook,
# ai-search, a background embed left running), customise index.yml, then upgrade to this
# checkout's HEAD with the README's `git pull && ./install.sh` (mode install) or a bare
# `pip install -U` followed at once by a terminal's `qmd-daemon update` and three sessions'
# hooks racing the first ai-search (mode pip). Checks: the old daemon is gone, the index is
# migrated (vectors kept), index.yml kept, hooks and skill rewritten (install mode), no traceback
# or "database is locked" in any log; then the old code is run against the upgraded index: it
# must refuse in one line without changing it when HEAD's schema is newer, and keep working when
# both share one schema.
# Env: QMD_MODELS_DIR (default: .test-cache/models of this checkout), WHEELS (a folder with the
# llama-cpp-python wheel, default ../shared/wheels), CORPORA, REPOS ("sinatra plug zig-clap").
set -u
old=${1:?usage: upgrade_walk.sh OLD_COMMIT [install|pip]}
mode=${2:-install}
here=$(cd "$(dirname "$0")/.." && pwd)
corpora=${CORPORA:-$HOME/.cache/qmd-eval/git-corpora}
repos=${REPOS:-sinatra plug zig-clap}
wheels=${WHEELS:-$here/../shared/wheels}
models_src=${QMD_MODELS_DIR:-$here/.test-cache/models}
work=$(mktemp -d /tmp/upgrade-walk.XXXXXX)
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$HOME/.cache/pip}
export HOME=$work/home QMD_MODELS_DIR=$work/models PATH=$work/home/.local/bin:$PATH
mkdir -p "$HOME" && cp -al "$models_src" "$QMD_MODELS_DIR" 2>/dev/null || cp -r "$models_src" "$QMD_MODELS_DIR"
db=$HOME/.cache/qmd-daemon/index.sqlite
state=$HOME/.local/state/qmd-daemon
yml=$HOME/.config/qmd-daemon/index.yml
failures=0
check() {  # check WHAT COMMAND...: prints ok/FAIL
  what=$1; shift
  if "$@" >/dev/null 2>&1; then echo "ok    $what"; else echo "FAIL  $what"; failures=$((failures + 1)); fi
}
q() { sqlite3 -readonly "$db" "$1"; }
daemon_pid() { sed -n 's/.*"pid": \([0-9]*\).*/\1/p' "$state/daemon.json" 2>/dev/null; }
hook() { (cd "$1" && sh "$HOME/.local/share/qmd-daemon/hooks/qmd-session-start.sh"); }
# a daemon lets go of its lock (a new one may start) a moment before its process ends; an old one
# without the embed job's yield to shutdown (before 0d0d4dd) finishes its batch first
gone_soon() { for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$1" 2>/dev/null || return 0; sleep 1; done; return 1; }

echo "== old $old ($(git -C "$here" log -1 --format='%h %ad' --date=short "$old")) -> HEAD $(git -C "$here" log -1 --format=%h), mode $mode, in $work"
git -C "$here" worktree add -q --detach "$work/old" "$old" || exit 2
(cd "$work/old" && ./install.sh --semantic-retrieval yes --profile small --pip-arg="--find-links=$wheels" \
  >"$work/install-old.log" 2>&1 </dev/null) || { echo "old install failed: $work/install-old.log"; exit 2; }
venv=$HOME/.local/share/qmd-daemon/venv
# a commit that imported nltk without declaring it (before 0d0d4dd) needs it to run at all
(cd / && "$venv/bin/python" -c 'import qmd_daemon.cli' 2>/dev/null) || "$venv/bin/pip" install -q nltk
python3 -m venv "$work/oldvenv" && "$work/oldvenv/bin/pip" install -q --find-links "$wheels" "$work/old[small]" nltk \
  >"$work/oldvenv.log" 2>&1 &
for r in $repos; do
  cp -r "$corpora/$r" "$work/$r" && rm -rf "$work/$r/.git"
  (cd "$work/$r" && git init -q && git add -A && git -c user.name=u -c user.email=u@example.com commit -qm init)
  hook "$work/$r"
done
sleep 5
for r in $repos; do (cd "$work/$r" && timeout 120 ai-search "parse the arguments" >/dev/null 2>&1); done
python3 - "$yml" <<'EOF'
import sys, yaml
path = sys.argv[1]
config = yaml.safe_load(open(path))
first, second = list(config["collections"])[:2]
config["collections"][first]["ignore"] = ["docs/**"]
config["collections"][second]["includeByDefault"] = True
config["collections"][second]["ignore"] = ["*.txt"]
yaml.safe_dump(config, open(path, "w"), sort_keys=False)
EOF
qmd-daemon update >/dev/null 2>&1
(qmd-daemon embed >/dev/null 2>&1 &)  # the user's embed, still running at the upgrade
sleep 20
cp "$yml" "$work/index.yml.before"
old_pid=$(daemon_pid)
vectors_before=$(q 'SELECT count(*) FROM chunk_vectors_rowids')
q 'SELECT rowid FROM chunk_vectors_rowids ORDER BY 1' | sort >"$work/vectors.before"
echo "before: schema $(q "SELECT value FROM meta WHERE key='schema_version'"), $(q 'SELECT count(*) FROM chunks') chunks, $vectors_before vectors, daemon pid $old_pid"
for r in $repos; do echo "  $r: $(git -C "$work/$r" ls-files | wc -l) files, $(du -sh --exclude=.git "$work/$r" | cut -f1)"; done

# what the old code logged stays apart: the checks below read what came after the upgrade
mkdir -p "$work/old-logs" && mv "$state"/logs/*.log "$work/old-logs/"
git clone -q "$here" "$work/new"
grep -v ^QMD_WARM_DEFAULT= "$work/new/hooks/qmd-session-start.sh" >"$work/hook.new"
if [ "$mode" = install ]; then
  (cd "$work/new" && echo | ./install.sh --pip-arg="--find-links=$wheels" >"$work/install-new.log" 2>&1)
  check "install.sh of HEAD succeeds" test $? -eq 0
  kill -0 "$old_pid" 2>/dev/null && echo "note  install.sh returned while the old daemon (pid $old_pid) still ran"
  first_repo=$(echo $repos | cut -d' ' -f1)
else
  "$venv/bin/pip" install -q -U --find-links "$wheels" "$work/new[small]" >"$work/install-new.log" 2>&1
  check "pip install -U succeeds" test $? -eq 0
  (qmd-daemon update >"$work/update.log" 2>&1; echo "rc=$?" >>"$work/update.log") &
  for r in $repos; do hook "$work/$r"; done
  first_repo=$(echo $repos | cut -d' ' -f1)
fi
start=$(date +%s.%N)
(cd "$work/$first_repo" && ai-search "where is the request routed" >"$work/first.json" 2>"$work/first.err")
rc=$?
echo "first search after the upgrade: $(printf %.2f "$(echo "$(date +%s.%N) - $start" | bc)") s (rc $rc); its stderr:"
sed 's/^/    /' "$work/first.err"
wait
check "first search answers" test "$rc" -eq 0
[ "$mode" = pip ] && { sed 's/^/    update: /' "$work/update.log"; check "the terminal's update succeeded" grep -q 'rc=0' "$work/update.log"; }
check "the old daemon is gone (within 10 s)" gone_soon "$old_pid"
new_pid=$(daemon_pid)
new_schema=$(cd "$work/new" && "$venv/bin/python" -c 'from qmd_daemon.store.schema import SCHEMA_VERSION as v; print(v)')
check "a new daemon (pid $new_pid) runs the new schema" grep -q "\"schema\": $new_schema" "$state/daemon.json"
vectors_after=$(q 'SELECT count(*) FROM chunk_vectors_rowids')
echo "after: schema $(q "SELECT value FROM meta WHERE key='schema_version'"), $(q 'SELECT count(*) FROM chunks') chunks, $vectors_after vectors"
q 'SELECT rowid FROM chunk_vectors_rowids ORDER BY 1' | sort >"$work/vectors.after"
# every vector the old index held is still there (the index was migrated, not rebuilt)
check "vectors kept ($vectors_before -> $vectors_after, none of the old ones lost)" \
  test "$(comm -23 "$work/vectors.before" "$work/vectors.after" | wc -l)" -eq 0
check "index.yml's collections, ignore lists and includeByDefault kept" python3 - "$work/index.yml.before" "$yml" <<'EOF'
import sys, yaml
before, after = (yaml.safe_load(open(p)) for p in sys.argv[1:])
assert before["collections"] == after["collections"], (before, after)
EOF
for r in $repos; do check "ai-search in $r" sh -c "cd '$work/$r' && ai-search 'configuration' >/dev/null"; done
check "qmd-warm" sh -c "cd '$work/$first_repo' && qmd-warm --repo ."
qmd-daemon status >"$work/status.txt" 2>&1
check "qmd-daemon status" grep -q 'deep vectors' "$work/status.txt"
sed -n '/vectors/p' "$work/status.txt" | sed 's/^/    /'
check "qmd-daemon update" qmd-daemon update
check "qmd-daemon search" sh -c "cd '$work/$first_repo' && qmd-daemon search 'routes'"
check "qmd-daemon collection list" qmd-daemon collection list
if [ "$mode" = install ]; then
  check "the skill is HEAD's" cmp -s "$HOME/.claude/skills/semantic-search/SKILL.md" "$work/new/skills/semantic-search/SKILL.md"
  check "the hook is the new one" sh -c "grep -v ^QMD_WARM_DEFAULT= '$HOME/.local/share/qmd-daemon/hooks/qmd-session-start.sh' |
    cmp -s - '$work/hook.new'"
fi
last=$(echo $repos | awk '{print $NF}')
check "qmd-daemon collection remove repo-$last" qmd-daemon collection remove "repo-$last"
check "no traceback, no 'database is locked' in the logs" sh -c "! grep -q -s -i -e Traceback -e 'database is locked' '$state'/logs/*.log '$work'/*.err '$work/update.log' 2>/dev/null"

old_schema=$(cd "$work/old" && "$work/oldvenv/bin/python" -c 'from qmd_daemon.store.schema import SCHEMA_VERSION as v; print(v)')
qmd-daemon stop >/dev/null 2>&1
wait
if [ "$old_schema" = "$new_schema" ]; then
  # one schema on both sides: the old code must keep working on the index (a user going back)
  echo "== downgrade: the old code against the upgraded index (both on schema $new_schema)"
  for cmd in status update "search routes" "collection list"; do
    # shellcheck disable=SC2086
    out=$(cd "$work/$first_repo" && timeout 120 "$work/oldvenv/bin/qmd-daemon" $cmd 2>&1)
    rc=$?
    check "old qmd-daemon $cmd works: $(echo "$out" | tail -n 1 | cut -c1-90)" \
      sh -c "test $rc -eq 0 && ! printf '%s' \"\$1\" | grep -q Traceback" - "$out"
  done
else
  echo "== downgrade: the old code (schema $old_schema) against the upgraded index (schema $new_schema)"
  sum=$(md5sum <"$db")
  for cmd in status update "search routes" "collection list"; do
    # shellcheck disable=SC2086
    out=$(cd "$work/$first_repo" && timeout 120 "$work/oldvenv/bin/qmd-daemon" $cmd 2>&1)
    check "old qmd-daemon $cmd refuses in one line: $(echo "$out" | tail -n 1 | cut -c1-90)" \
      sh -c "test \$(printf '%s\n' \"\$1\" | wc -l) -eq 1 && printf '%s' \"\$1\" | grep -q 'newer than this qmd-daemon'" - "$out"
  done
  check "the index is unchanged by the old code" test "$sum" = "$(md5sum <"$db")"
fi
echo "$failures failed; logs in $work"
git -C "$here" worktree remove --force "$work/old"
exit $((failures > 0))
