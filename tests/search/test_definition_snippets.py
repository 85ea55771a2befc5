"""A bare identifier's first hit starts at its definition's head, whatever the language writes on
that line (the `{` of C, Go, Rust, Java; a parameter list over several lines; C's return type on
a line of its own), not at the lines below where the name's words are densest. Real files, real
chunker, real index, real search (a new user's walk: `ai-search uv_timer_start` in libuv gave
`src/timer.c:82`, the middle of the function, while its signature is at line 67)."""

from __future__ import annotations

from pathlib import Path

from qmd_daemon.search.snippets import best_window
from tests.conftest import indexed

# Shaped like libuv's src/timer.c: a small function, then one whose parameters wrap and whose body
# says "timer" and "start" on most lines (start_id, timer_heap, uv__handle_start...).
TIMER_C = """#include "uv.h"
#include "uv-common.h"

static int timer_less_than(const struct heap_node* ha, const struct heap_node* hb) {
  return ha < hb;
}


int uv_timer_init(uv_loop_t* loop, uv_timer_t* handle) {
  uv__handle_init(loop, (uv_handle_t*)handle, UV_TIMER);
  handle->timer_cb = NULL;
  handle->timeout = 0;
  handle->repeat = 0;
  return 0;
}


int uv_timer_start(uv_timer_t* handle,
                   uv_timer_cb cb,
                   uint64_t timeout,
                   uint64_t repeat) {
  uint64_t clamped_timeout;

  if (uv__is_closing(handle) || cb == NULL)
    return UV_EINVAL;

  uv_timer_stop(handle);

  clamped_timeout = handle->loop->time + timeout;
  if (clamped_timeout < timeout)
    clamped_timeout = (uint64_t) -1;

  handle->timer_cb = cb;
  handle->timeout = clamped_timeout;
  handle->repeat = repeat;
  /* start_id orders timers started at the same time: timer start order */
  handle->start_id = handle->loop->timer_counter++;
  /* the timer heap keeps the next timer to start first */
  heap_insert(timer_heap(handle->loop),
              (struct heap_node*) &handle->node.heap,
              timer_less_than);
  uv__handle_start(handle);  /* the timer is started */

  return 0;
}
"""
TIMER_START_LINE = 18

# BSD style: the return type on a line of its own, the name at the start of the next one.
QUEUE_C = """#include "queue.h"

static void
queue_drain(struct queue *q, int limit)
{
  int drained = 0;
  while (q->head != NULL && drained < limit) {
    struct queue_item *item = q->head;
    q->head = item->next;
    queue_item_free(item);
    drained++;
  }
  /* drain the queue: every drained item freed, the queue drained to its limit */
  q->drained += drained;
  q->drain_count++;
  if (q->drain_cb != NULL)
    q->drain_cb(q, drained);  /* drain callback: the queue was drained */
}
"""

# Go writes the `{` on the signature's line; the body says "flag" and "groups" on every line.
FLAG_GROUPS_GO = """package cobra

import "fmt"

// validateFlagGroups checks that every group of flags marked together is set together.
func (c *Command) validateFlagGroups() error {
	flags := c.Flags()
	groupStatus := map[string]map[string]bool{}
	flags.VisitAll(func(pflag *flag.Flag) {
		processFlagForGroupAnnotation(flags, pflag, requiredAsGroup, groupStatus)
	})
	// validate the flag groups: each group of flags set in full or not at all
	if err := validateRequiredFlagGroups(groupStatus); err != nil {
		return fmt.Errorf("flag groups: %w", err)
	}
	// the flag groups are valid: every flag of each group was validated
	return nil
}
"""


def test_a_c_function_hit_starts_at_its_signature(engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "uv", {"src/timer.c": TIMER_C, "src/queue.c": QUEUE_C})
    hit = engine.search("uv_timer_start", [name], limit=3)[0]
    where = f"{hit.path}:{hit.line}: {hit.snippet[:80]!r}"
    assert (hit.path, hit.line) == ("src/timer.c", TIMER_START_LINE), where
    assert hit.snippet.split("\n")[0] == "int uv_timer_start(uv_timer_t* handle,"

    hit = engine.search("queue_drain", [name], limit=3)[0]
    assert (hit.path, hit.line) == ("src/queue.c", 3), f"{hit.path}:{hit.line}: {hit.snippet[:80]!r}"
    assert hit.snippet.split("\n")[:2] == ["static void", "queue_drain(struct queue *q, int limit)"]


def test_a_go_method_hit_starts_at_its_signature(engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "cobra", {"flag_groups.go": FLAG_GROUPS_GO})
    hit = engine.search("validateFlagGroups", [name], limit=3)[0]
    assert hit.line == 6, f"line {hit.line}: {hit.snippet[:80]!r}"
    assert hit.snippet.startswith("func (c *Command) validateFlagGroups() error {")


def test_the_earliest_query_word_a_chunk_defines_is_where_it_starts() -> None:
    """`uv_timer_start`'s words are itself, `timer` and `start`: a chunk defining `start` above it
    is shown from `uv_timer_start`."""
    text = "void start(void) {\n}\n\nint uv_timer_start(int a) {\n  timer start timer start\n}"
    words = ["uv_timer_start", "timer", "start"]
    definitions = [("start", 10), ("uv_timer_start", 13)]
    assert best_window(text, 10, words, definitions=definitions)[0] == 13


def test_a_haskell_equation_is_shown_from_its_type_signature() -> None:
    """The parser names `screenWorkspace sc = ...`; its signature above, over one or more lines,
    says what it is (xmonad's Operations.hs); a previous top-level line is not climbed over."""
    text = (
        "-- | Return workspace visible on screen.\n"
        "screenWorkspace :: ScreenId\n"
        "                -> X (Maybe WorkspaceId)\n"
        "screenWorkspace sc = withWindowSet $ return . lookupWorkspace sc\n"
        "other = 1\n"
        "helper x = x\n"
    )
    assert best_window(text, 600, ["screenworkspace"], definitions=[("screenWorkspace", 603)])[0] == 601
    assert best_window(text, 600, ["helper"], definitions=[("helper", 605)])[0] == 605


def test_a_hit_starts_at_a_compound_name_the_question_says() -> None:
    """No query word is a defined name, but every part of `generateDiagnostics` is said: the
    window starts at its head, not at the densest lines of its body (zls's diagnostics.zig)."""
    filler = "".join(f"    step{i}();\n" for i in range(14))
    text = (
        "pub fn generateDiagnostics(server: *Server) !void {\n"
        + filler
        + "    // errors and warnings: errors first, warnings after\n"
        "    try collectErrors(server);\n"
        "}\n"
    )
    definitions = [("generateDiagnostics", 1)]
    said = ["generates", "diagnostic", "errors", "warnings"]
    assert best_window(text, 1, said, definitions=definitions)[0] == 1
    # a name with a part the question does not say is no answer by name: the densest lines are
    assert best_window(text, 1, ["diagnostic", "errors", "warnings"], definitions=definitions)[0] == 16
