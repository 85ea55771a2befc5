#!/usr/bin/env bash
# First run as a stranger lives it (issue 13's table): a fresh clone, a fresh HOME, no Hugging Face
# Hub; each row runs the commands a new user types and prints its time and PASS/FAIL.
#
#   bench/first_run.sh [ROW ...]        # default: every row, in the order below
#   bench/first_run.sh --list           # the row names
#
# Environment: FIRST_RUN_SRC (repository to clone; default: this checkout's committed HEAD),
# FIRST_RUN_WORK (scratch folder, default a new /tmp/qmd-first-run.XXXX, removed unless
# FIRST_RUN_KEEP=1), FIRST_RUN_SHARED (the shared/ folder the clone sees as ../shared; default
# this checkout's ../shared), FIRST_RUN_REQUESTS (a git repository of psf/requests, bare or not,
# for row requests_question; default the search tool's snapshot in /work/.mirror). "Offline" means the Hub cannot be reached (HF_ENDPOINT points at a
# closed local port; HF_HUB_OFFLINE is not set: huggingface_hub reads it once at import, and the
# tests' fake Hub needs it unset); pip still installs from its index and cache, as on the machines
# this project runs on.
#
# A row is a function `row_NAME` that sets DETAIL and returns 0 (PASS) or not (FAIL); add one
# and list it in ROWS. Rows that need an installed setup call `need_small_install` first.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
SRC=${FIRST_RUN_SRC:-$here}
SHARED=${FIRST_RUN_SHARED:-$(cd "$here/.." && pwd)/shared}
WORK=${FIRST_RUN_WORK:-$(mktemp -d /tmp/qmd-first-run.XXXX)}
CLONE=$WORK/fc/x
LOGS=$WORK/logs
PY=$(command -v python3.11 || command -v python3)

ROWS=(readme_install readme_tests small_install compile_progress yes_no_hub piped_y no_input
      invalid_answer ai_search_outside_repo pending_vectors nonsense_query requests_question
      remove_during_index stop uninstall_settings)

DETAIL=""
RESULTS=()

# -- helpers -------------------------------------------------------------------------------------

log() { echo "$*" >&2; }

kill_tree() {  # TERM a process and everything it started (the watched compile), children first
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill -TERM "$1" 2>/dev/null
}

fresh_home() {  # a new HOME with nothing of ours, no Hub; prints its path
  local home=$WORK/home-$1
  rm -rf "$home" && mkdir -p "$home"
  echo "$home"
}

in_home() {  # HOME=... with the Hub unreachable and no inherited qmd/agent settings, then the command
  local home=$1; shift
  env -u QMD_DAEMON_HOME -u QMD_MODELS_DIR -u XDG_CONFIG_HOME -u XDG_CACHE_HOME -u XDG_DATA_HOME \
    -u XDG_STATE_HOME -u CODEX_HOME -u CLAUDE_CONFIG_DIR -u HF_HOME -u PYTHONPATH \
    -u HF_HUB_OFFLINE HOME="$home" HF_ENDPOINT=http://127.0.0.1:9 PATH="$home/.local/bin:$PATH" "$@"
}

readme_command() {  # the Nth ```sh block of README's "Two commands" section, verbatim
  "$PY" - "$CLONE/README.md" "$1" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
print(re.findall(r"```sh\n(.*?)```", section, re.S)[int(sys.argv[2]) - 1].strip())
EOF
}

SETTINGS_BEFORE='{
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)", "Read"]}
}'

SMALL_HOME=""
need_small_install() {  # rows that use an installed setup share this one (row small_install)
  [ -n "$SMALL_HOME" ] || row_small_install >/dev/null || true
  [ -x "$SMALL_HOME/.local/bin/ai-search" ]
}

# -- rows ----------------------------------------------------------------------------------------

row_readme_install() {
  local cmd; cmd=$(readme_command 1)
  (cd "$CLONE" && in_home "$(fresh_home readme)" bash -c "$cmd") >"$LOGS/readme_install.log" 2>&1
  local rc=$?
  DETAIL="README command 1, exit $rc"
  return $rc
}

row_readme_tests() {
  local cmd; cmd=$(readme_command 2)
  (cd "$CLONE" && in_home "$(fresh_home tests)" bash -c "$cmd") >"$LOGS/readme_tests.log" 2>&1
  local rc=$?
  DETAIL="README command 2, exit $rc: $(grep -E '[0-9]+ (passed|failed)' "$LOGS/readme_tests.log" | tail -1)"
  return $rc
}

row_small_install() {
  SMALL_HOME=$(fresh_home small)
  mkdir -p "$SMALL_HOME/.claude" && printf '%s' "$SETTINGS_BEFORE" >"$SMALL_HOME/.claude/settings.json"
  local start=$SECONDS
  (cd "$CLONE" && in_home "$SMALL_HOME" ./install.sh --semantic-retrieval yes --profile small) \
    >"$LOGS/small_install.log" 2>&1
  local rc=$? took=$((SECONDS - start))
  local wheel="compiled llama-cpp-python"
  grep -q "using the prebuilt wheel" "$LOGS/small_install.log" && wheel="prebuilt wheel"
  DETAIL="exit $rc, $wheel, ${took}s (limit 180 s with the wheel)"
  [ $rc -eq 0 ] && [ -x "$SMALL_HOME/.local/bin/ai-search" ] && { [ "$wheel" != "prebuilt wheel" ] || [ $took -lt 180 ]; }
}

row_compile_progress() {
  # No wheel anywhere (a clone without ../shared, pip's cache off): the compile must be announced
  # and show a line at least every 10 s. Watched for 75 s (FIRST_RUN_COMPILE_WATCH), not the
  # whole ~8 minute build.
  local bare=$WORK/bare/x home; home=$(fresh_home compile)
  [ -d "$bare" ] || git clone -q "$CLONE" "$bare"
  local out=$LOGS/compile_progress.log
  (cd "$bare" && in_home "$home" env PIP_NO_CACHE_DIR=1 ./install.sh --semantic-retrieval yes \
    --profile small) > >(while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done >"$out") 2>&1 &
  local install=$!
  sleep "${FIRST_RUN_COMPILE_WATCH:-75}"
  local stopped; stopped=$(date +%s.%N)
  kill_tree "$install"
  wait "$install" 2>/dev/null
  sleep 1  # the timestamping reader drains
  local gap  # the longest time without a line, from the announcement to the moment it was stopped
  gap=$(awk -v end="$stopped" '/compiles it from source/ {on = 1}
             on {if (prev) {d = $1 - prev; if (d > m) m = d} prev = $1}
             END {if (prev && end - prev > m) m = end - prev; printf "%.1f", m}' "$out")
  local ticks; ticks=$(grep -c '\.\.\. pip install .* so far; .*last:' "$out")
  DETAIL="announced: $(grep -c 'compiles it from source' "$out"), ticker lines: $ticks, longest silence ${gap}s"
  grep -q 'compiles it from source' "$out" && [ "$ticks" -gt 0 ] && awk -v g="$gap" 'BEGIN {exit !(g <= 10.5)}'
}

row_yes_no_hub() {  # plain ./install.sh answered y (piped: a script has no terminal), no Hub
  local home; home=$(fresh_home yesnohub)
  (cd "$CLONE" && echo y | in_home "$home" ./install.sh) >"$LOGS/yes_no_hub.log" 2>&1
  local rc=$?
  DETAIL="exit $rc; $(grep -o 'continuing with the offline small profile' "$LOGS/yes_no_hub.log" | head -1)"
  [ $rc -eq 0 ] && grep -q '"profile": "small"' "$home/.config/qmd-daemon/install.json" 2>/dev/null \
    && ! grep -q 'qmd-daemon pull`' "$LOGS/yes_no_hub.log"
}

row_piped_y() {  # echo y | ./install.sh asks, reads the answer, says what No would mean
  local home; home=$(fresh_home pipedy)
  (cd "$CLONE" && echo y | in_home "$home" ./install.sh --profile small) >"$LOGS/piped_y.log" 2>&1
  local rc=$?
  DETAIL="exit $rc; $(grep -c 'no skill, no hooks' "$LOGS/piped_y.log") explanation, $(grep -o 'selection yes' "$LOGS/piped_y.log" | head -1)"
  [ $rc -eq 0 ] && grep -q 'selection yes' "$LOGS/piped_y.log" && grep -q 'no skill, no hooks' "$LOGS/piped_y.log"
}

row_no_input() {  # nothing to read: refused with the hint, nothing created
  local home; home=$(fresh_home noinput)
  (cd "$CLONE" && in_home "$home" ./install.sh </dev/null) >"$LOGS/no_input.log" 2>&1
  local rc=$?
  DETAIL="exit $rc; files created: $(find "$home" -mindepth 1 | wc -l)"
  [ $rc -eq 2 ] && grep -q -- '--semantic-retrieval yes|no|auto' "$LOGS/no_input.log" && [ -z "$(ls -A "$home")" ]
}

row_invalid_answer() {  # a wrong answer asks again; the end of input is not a silent No
  local home; home=$(fresh_home invalid)
  (cd "$CLONE" && printf 'sure\n' | in_home "$home" ./install.sh) >"$LOGS/invalid_answer.log" 2>&1
  local rc=$?
  DETAIL="exit $rc; asked $(grep -o 'Enable local QMD search models' "$LOGS/invalid_answer.log" | wc -l) times"
  [ $rc -eq 2 ] && grep -q "is not an answer" "$LOGS/invalid_answer.log"
}

row_ai_search_outside_repo() {  # (another branch) ai-search in a folder that is no repository
  need_small_install || { DETAIL="needs row small_install"; return 1; }
  local folder=$WORK/not-a-repo; mkdir -p "$folder"
  for i in 1 2 3; do printf 'def f%s():\n    return %s\n' "$i" "$i" >"$folder/m$i.py"; done
  (cd "$folder" && in_home "$SMALL_HOME" ai-search "where is f2 defined") >"$LOGS/ai_search.log" 2>&1
  local rc=$?
  in_home "$SMALL_HOME" qmd-daemon collection list --json >"$LOGS/ai_search_collections.json" 2>>"$LOGS/ai_search.log"
  DETAIL="exit $rc; stderr: $(tail -1 "$LOGS/ai_search.log" | cut -c1-80)"
  ! grep -q "$folder" "$LOGS/ai_search_collections.json"
}

answer_threshold() {  # the score that separates an answer from "nothing here" (SKILL.md documents it)
  "$PY" -c 'import re,sys; print(re.search(r"^ANSWER_THRESHOLD = ([0-9.]+)", open(sys.argv[1]).read(), re.M).group(1))' \
    "$CLONE/qmd_daemon/search/calibration.py"
}

search_repo() {  # a small git repository of real code (a copy of qmd-daemon's search package); prints its path
  local repo=$WORK/$1
  if [ ! -d "$repo/.git" ]; then
    mkdir -p "$repo" && cp -r "$CLONE/qmd_daemon/search" "$repo/" && git -C "$repo" init -q && git -C "$repo" add -A
  fi
  echo "$repo"
}

row_pending_vectors() {  # the first search of a new repository says what its results are made of for now
  need_small_install || { DETAIL="needs row small_install"; return 1; }
  local repo; repo=$(search_repo repo-pending)
  (cd "$repo" && in_home "$SMALL_HOME" ai-search --json "reciprocal rank fusion") >"$LOGS/pending.json" 2>"$LOGS/pending.log"
  local rc=$?
  local said='no deep vectors yet\|without deep vectors yet'
  DETAIL="exit $rc; stderr: $(grep -m1 "$said" "$LOGS/pending.log" | cut -c1-110)"
  [ $rc -eq 0 ] && grep -q "$said" "$LOGS/pending.log"
}

row_nonsense_query() {  # no real match scores under the threshold; a real question scores over it
  need_small_install || { DETAIL="needs row small_install"; return 1; }
  local repo threshold; repo=$(search_repo repo); threshold=$(answer_threshold)
  (cd "$repo" && in_home "$SMALL_HOME" ai-search --json "xyzzy plugh frobozz") >"$LOGS/nonsense.json" 2>"$LOGS/nonsense.log"
  local rc=$?
  (cd "$repo" && in_home "$SMALL_HOME" ai-search --json "how are the BM25 and vector lists fused") >"$LOGS/real.json" 2>>"$LOGS/nonsense.log"
  local best
  best=$("$PY" -c 'import json,sys; h=json.load(open(sys.argv[1])); print(max([x["score"] for x in h], default=0))' "$LOGS/nonsense.json")
  local real
  real=$("$PY" -c 'import json,sys; h=json.load(open(sys.argv[1])); print(h[0]["score"] if h else 0)' "$LOGS/real.json")
  DETAIL="exit $rc; nonsense best $best, real question $real, threshold $threshold"
  [ $rc -eq 0 ] && "$PY" -c 'import sys; n, r, t = map(float, sys.argv[1:]); sys.exit(0 if n < t <= r else 1)' "$best" "$real" "$threshold"
}

row_requests_question() {  # a behaviour question reaches the code that does it, not imports
  need_small_install || { DETAIL="needs row small_install"; return 1; }
  local source=${FIRST_RUN_REQUESTS:-/work/.mirror/psf+requests/repo} repo=$WORK/requests
  rm -rf "$repo" && mkdir -p "$repo"
  git --git-dir="$source" archive HEAD 2>/dev/null | tar -x -C "$repo" \
    || git -C "$source" archive HEAD | tar -x -C "$repo" || { DETAIL="no psf/requests at $source"; return 1; }
  git -C "$repo" init -q && git -C "$repo" add -A
  (cd "$repo" && in_home "$SMALL_HOME" ai-search --json "how are cookies persisted across redirects") \
    >"$LOGS/requests.json" 2>"$LOGS/requests.log"
  local rc=$?
  # the windows of SessionRedirectMixin.resolve_redirects and Session.send that move a response's
  # cookies into the jar (the only calls of extract_cookies_to_jar in sessions.py)
  DETAIL=$("$PY" - "$LOGS/requests.json" "$repo/src/requests/sessions.py" <<'EOF2'
import json, sys
hits = json.load(open(sys.argv[1]))[:5]
calls = [n for n, line in enumerate(open(sys.argv[2]), start=1) if "extract_cookies_to_jar(" in line]
rank = next((i for i, h in enumerate(hits, 1) if h["path"].endswith("src/requests/sessions.py")
             and any(h["line"] <= n <= h["end_line"] for n in calls)), None)
top = ", ".join(f'{h["path"].rsplit("/", 1)[-1]}:{h["line"]}' for h in hits)
print(f"cookie-moving window of sessions.py at rank {rank} of the top 5 ({top})" if rank
      else f"no cookie-moving window of sessions.py in the top 5 ({top})")
EOF2
)
  [ $rc -eq 0 ] && [[ $DETAIL == "cookie-moving window"* ]]
}

row_remove_during_index() {  # collection remove while an update writes: waits for it, never "database is locked"
  need_small_install || { DETAIL="needs row small_install"; return 1; }
  local repo=$WORK/bigrepo
  rm -rf "$repo" && mkdir -p "$repo"
  cp -r "$CLONE/qmd_daemon" "$CLONE/tests" "$CLONE/bench" "$repo/" && git -C "$repo" init -q && git -C "$repo" add -A
  in_home "$SMALL_HOME" qmd-daemon collection add "$repo" --name big-during-remove >"$LOGS/remove_add.log" 2>&1 &
  local adder=$!
  sleep 1
  in_home "$SMALL_HOME" qmd-daemon collection remove big-during-remove >"$LOGS/remove.log" 2>&1
  local rc=$?
  wait $adder
  in_home "$SMALL_HOME" qmd-daemon collection list --json >"$LOGS/remove_list.json" 2>>"$LOGS/remove.log"
  local waited="the update had finished first"
  grep -q "waiting for another update" "$LOGS/remove.log" && waited="waited for the update"
  DETAIL="exit $rc, $waited: $(tail -1 "$LOGS/remove.log" | cut -c1-70)"
  [ $rc -eq 0 ] && ! grep -qi "locked" "$LOGS/remove.log" "$LOGS/remove_add.log" && ! grep -q big-during-remove "$LOGS/remove_list.json"
}

row_stop() {  # (another branch) qmd-daemon stop
  need_small_install || { DETAIL="needs row small_install"; return 1; }
  in_home "$SMALL_HOME" qmd-daemon stop >"$LOGS/stop.log" 2>&1
  local rc=$?
  DETAIL="exit $rc: $(tail -1 "$LOGS/stop.log" | cut -c1-80)"
  [ $rc -eq 0 ] && [ ! -e "$SMALL_HOME/.local/state/qmd-daemon/daemon.json" ]
}

row_uninstall_settings() {  # No removes what Yes made; settings.json comes back byte for byte
  need_small_install || { DETAIL="needs row small_install"; return 1; }
  (cd "$CLONE" && in_home "$SMALL_HOME" ./install.sh --semantic-retrieval no) >"$LOGS/uninstall.log" 2>&1
  local rc=$?
  local same=differs
  [ "$(cat "$SMALL_HOME/.claude/settings.json")" == "$SETTINGS_BEFORE" ] \
    && cmp -s <(printf '%s' "$SETTINGS_BEFORE") "$SMALL_HOME/.claude/settings.json" && same=byte-identical
  DETAIL="exit $rc; settings.json $same; skill left: $(ls "$SMALL_HOME/.claude/skills" 2>/dev/null | wc -l)"
  [ $rc -eq 0 ] && [ $same = byte-identical ] && [ ! -e "$SMALL_HOME/.local/bin/ai-search" ]
}

# -- driver --------------------------------------------------------------------------------------

if [ "${1:-}" = "--list" ]; then printf '%s\n' "${ROWS[@]}"; exit 0; fi
selected=("$@"); [ ${#selected[@]} -gt 0 ] || selected=("${ROWS[@]}")
mkdir -p "$LOGS" "$(dirname "$CLONE")"
git clone -q "$SRC" "$CLONE" || { log "cannot clone $SRC"; exit 2; }
[ -d "$SHARED" ] && ln -sfn "$SHARED" "$WORK/fc/shared"
log "first run: clone of $SRC ($(git -C "$CLONE" log -1 --format=%h)) in $CLONE; logs in $LOGS"
failed=0
for name in "${selected[@]}"; do
  declare -F "row_$name" >/dev/null || { log "no row $name (see --list)"; exit 2; }
  DETAIL=""
  start=$(date +%s.%N)
  if "row_$name"; then result=PASS; else result=FAIL; failed=$((failed + 1)); fi
  took=$("$PY" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
  line=$(printf '%-26s %8ss  %s  %s' "$name" "$took" "$result" "$DETAIL")
  echo "$line"
  RESULTS+=("$line")
done
echo "--- ${#selected[@]} rows: $((${#selected[@]} - failed)) passed, $failed failed"
[ "${FIRST_RUN_KEEP:-0}" = 1 ] || { chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"; }
[ $failed -eq 0 ]
