"""index.yml: the registered collections and the `models:` block.

The file is the user's: writing keeps every key this version does not know, and a file that
does not parse aborts the command before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from qmd_daemon.atomic_files import replace_file
from qmd_daemon.errors import ConfigError
from qmd_daemon.locks import waiting_for
from qmd_daemon.settings import DEFAULT_MASK, EARLIER_DEFAULT_MASKS

BACKENDS = ("sqlite", "postgres")
_BRACE = re.compile(r"\{([^{}]*)\}")
DEVICES = ("auto", "cpu", "gpu")  # `models: {device: ...}`; absent or null: auto
MODEL_ROLES = ("embed", "rerank", "expand")  # each a model reference, on/off, or null
MODEL_SWITCHES = ("deep", "static")  # keys of `models:` that switch a pass, naming no model
OFF = ("off", "false", "none", "no", "0")  # YAML reads a bare off/no as False: "false" here
ON = ("on", "true", "yes", "1")
PROFILES = ("qwen3", "small")  # `models: {profile: ...}`; absent: qwen3
QUANTIZATIONS = ("float", "int8")  # `models: {quantization: ...}`: how vectors are kept (int8: 1/4 the size)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: ~20x faster


def expand_braces(pattern: str) -> list[str]:
    """`**/*.{md,py}` -> `**/*.md`, `**/*.py` (glob brace syntax, which gitwildmatch lacks)."""
    match = _BRACE.search(pattern)
    if not match:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    out: list[str] = []
    for option in match.group(1).split(","):
        out.extend(expand_braces(head + option + tail))
    return out


def mask_globs(mask: str) -> list[str]:
    """A mask's globs: `;`-separated, braces expanded."""
    return [glob for part in mask.split(";") for glob in expand_braces(part.strip()) if glob]


def _glob_problem(glob: str) -> str | None:
    """What makes one glob match nothing its writer meant: an unclosed `[` (gitignore matching, as
    pathspec does it, takes it for the character; git's own matcher matches nothing with it), a
    brace left unpaired, a trailing backslash."""
    if "{" in glob or "}" in glob:  # what expand_braces left: a brace without its pair
        return "a '{' or '}' without its pair"
    i = 0
    while i < len(glob):
        if glob[i] == "\\":
            if i + 1 == len(glob):
                return "a '\\' at the end escapes nothing"
            i += 2
        elif glob[i] == "[":
            start = i + 1 + (glob[i + 1 : i + 2] in ("!", "^"))
            start += glob[start : start + 1] == "]"  # `[]a]`: a first `]` is one of the set
            close = glob.find("]", start)
            if close < 0:
                return "a '[' that no ']' closes (write '\\[' for the character itself)"
            i = close + 1
        else:
            i += 1
    return None


def mask_problem(mask: str) -> str | None:
    """Why MASK (a collection's `pattern`, `--mask`) selects no file it was meant to, or None."""
    globs = mask_globs(mask)
    if not any(not glob.startswith("!") for glob in globs):
        return "no glob in it selects files"
    return next((problem for problem in map(_glob_problem, globs) if problem), None)


def _models_problem(models: dict[str, Any]) -> str | None:
    """"KEY must be ..., not VALUE" for the first bad value of a `models:` block (None: none)."""
    device = models.get("device")
    if device is not None and (isinstance(device, bool) or str(device).strip().lower() not in DEVICES):
        return f"device must be one of {', '.join(DEVICES)}, not {device!r}"
    for role in MODEL_ROLES:
        value = models.get(role)
        if value is not None and not isinstance(value, str | bool):  # YAML reads off/on as booleans
            return f"{role} must be a model file or hf: reference, or off, not {value!r}"
    for switch in MODEL_SWITCHES:
        # why an error: `deep: maybe` read as "on" would start hours of embedding on a CPU
        if switch in models and str(models[switch]).strip().lower() not in (*OFF, *ON):
            return f"{switch} must be on or off, not {models[switch]!r}"
    profile = models.get("profile")
    if profile and str(profile).strip().lower() not in PROFILES:
        return f"profile must be one of {', '.join(PROFILES)}, not {profile!r}"
    quantization = str(models.get("quantization") or "float")
    if quantization not in QUANTIZATIONS:
        return f"quantization must be one of {', '.join(QUANTIZATIONS)}, not {quantization!r}"
    return None


@dataclass(frozen=True)
class RefusedCollection:
    """An index.yml entry whose mask today's rules refuse (an older version accepted it): left out
    of `collections()` so the others keep working, and named with its fix wherever it is asked for."""

    name: str
    path: Path
    pattern: str
    problem: str
    # the rest of the entry, kept when its fix (`collection add PATH --mask`) brings it back
    ignore: tuple[str, ...] = ()
    include_by_default: bool = False

    @property
    def message(self) -> str:
        return (
            f"collection '{self.name}' is skipped: its mask {self.pattern!r} is no longer accepted "
            f"({self.problem}); give it a valid one: qmd-daemon collection add {self.path} --mask 'GLOBS'"
        )


@dataclass
class CollectionConfig:
    name: str
    path: Path
    pattern: str = DEFAULT_MASK
    ignore: list[str] = field(default_factory=list)
    include_by_default: bool = False
    # the common git folder of the repository this folder is a linked worktree of (`worktreeOf`):
    # once git no longer lists the worktree and the folder is gone, the collection is forgotten
    worktree_of: Path | None = None
    # the root commits of the repository checked out here (`rootCommits`, ingest/root_commits.py):
    # a separate clone of a repository included by default is not searched beside it
    root_commits: tuple[str, ...] = ()
    # HEAD as its files said when git told no root commits (`noRootCommitsAt`: no commit yet, or
    # git refused the folder): git is asked again only once HEAD is elsewhere
    no_roots_at: str | None = None

    def to_yaml(self) -> dict[str, Any]:
        """The entry as index.yml keeps it: no `pattern` when it is the default, so the collection
        follows the default mask when a release widens it."""
        entry: dict[str, Any] = {"path": str(self.path)}
        if self.pattern != DEFAULT_MASK:
            entry["pattern"] = self.pattern
        if self.worktree_of is not None:
            entry["worktreeOf"] = str(self.worktree_of)
        if self.root_commits:
            entry["rootCommits"] = list(self.root_commits)
        elif self.no_roots_at is not None:
            entry["noRootCommitsAt"] = self.no_roots_at
        return {**entry, "ignore": list(self.ignore), "includeByDefault": self.include_by_default}


class Removal(NamedTuple):
    """A pending `collection remove` (index.yml `removing:`): the index's id of the collection,
    and whether every home's rows go (`--purge`) or only this home's listing (a shared index)."""

    collection_id: int
    purge: bool


class IndexConfig:
    """A parsed index.yml; `raw` keeps the whole document so unknown keys survive a save."""

    def __init__(self, path: Path, raw: dict[str, Any]):
        self.path = path
        self.raw = raw

    @classmethod
    def load(cls, path: Path) -> IndexConfig:
        if not path.exists():
            return cls(path, {})
        try:
            raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ConfigError(f"cannot parse {path}: {first}; fix or remove it (left untouched)") from None
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise ConfigError(f"{path} must hold a mapping at the top level (left untouched)")
        for key in ("collections", "models"):
            if raw.get(key) is not None and not isinstance(raw[key], dict):
                raise ConfigError(f"{path}: '{key}' must be a mapping (left untouched)")
        return cls(path, raw)

    # -- collections -------------------------------------------------------------------------

    def collections(self) -> dict[str, CollectionConfig]:
        """The usable collections; one whose mask is refused is left out (`refused`)."""
        return self._read_collections()[0]

    def refused(self) -> dict[str, RefusedCollection]:
        """Entries an upgrade made unusable: a mask an older version accepted that `mask_problem`
        now refuses. Every command used to fail on them; now only what touches them does."""
        return self._read_collections()[1]

    def listed(self) -> list[str]:
        """Every collection this index.yml lists, usable or set aside (one read of the entries):
        a set-aside one is still the user's (its name taken, its rows kept for other homes)."""
        usable, refused = self._read_collections()
        return [*usable, *refused]

    def _read_collections(self) -> tuple[dict[str, CollectionConfig], dict[str, RefusedCollection]]:
        out: dict[str, CollectionConfig] = {}
        refused: dict[str, RefusedCollection] = {}
        for name, entry in (self.raw.get("collections") or {}).items():
            if not isinstance(entry, dict) or "path" not in entry:
                raise ConfigError(f"{self.path}: collection '{name}' needs a 'path'")
            ignore = entry.get("ignore") or []
            if isinstance(ignore, str):
                ignore = [ignore]
            if not isinstance(ignore, list):  # `ignore: 5` was a TypeError traceback
                raise ConfigError(
                    f"{self.path}: collection '{name}': 'ignore' must be a pattern or a list of "
                    f"patterns (left untouched)"
                )
            pattern = str(entry.get("pattern") or DEFAULT_MASK)
            pattern = DEFAULT_MASK if pattern in EARLIER_DEFAULT_MASKS else pattern
            problem = None if pattern == DEFAULT_MASK else mask_problem(pattern)  # the default: 0.3 ms
            path, patterns = Path(str(entry["path"])), [str(i) for i in ignore]
            include_by_default = bool(entry.get("includeByDefault", False))
            if problem:
                refused[str(name)] = RefusedCollection(
                    str(name), path, pattern, problem, tuple(patterns), include_by_default
                )
                continue
            worktree_of, roots = entry.get("worktreeOf"), entry.get("rootCommits")
            no_roots_at = entry.get("noRootCommitsAt")
            out[str(name)] = CollectionConfig(
                str(name), path, pattern, ignore=patterns, include_by_default=include_by_default,
                worktree_of=Path(str(worktree_of)) if worktree_of else None,
                # anything but a list of names (a hand edit) is as if none were recorded yet
                root_commits=tuple(sorted(str(r) for r in roots)) if isinstance(roots, list) else (),
                no_roots_at=str(no_roots_at) if isinstance(no_roots_at, str) else None,
            )
        return out, refused

    def set_collection(self, collection: CollectionConfig) -> None:
        entries = self.raw.setdefault("collections", {}) or {}
        self.raw["collections"] = entries
        existing = entries.get(collection.name)
        merged = dict(existing) if isinstance(existing, dict) else {}
        merged.pop("pattern", None)  # back to the default unless to_yaml names one
        merged.pop("worktreeOf", None)  # likewise: a folder no longer a worktree loses it
        merged.pop("rootCommits", None)  # and another folder the roots of this one
        merged.pop("noRootCommitsAt", None)
        merged.update(collection.to_yaml())
        entries[collection.name] = merged

    def remove_collection(self, name: str) -> bool:
        entries = self.raw.get("collections") or {}
        return entries.pop(name, None) is not None

    def removing(self) -> dict[str, Removal]:
        """`removing:` collections no longer listed whose rows the index may still hold (name ->
        the index's id of them, and whether `--purge` asked for the rows of every home): a
        `collection remove` unlists first, then deletes, and the next update or remove finishes
        one that was cut short. Entries that are no such pair are skipped."""
        entries = self.raw.get("removing")
        if not isinstance(entries, dict):
            return {}
        out = {}
        for name, entry in entries.items():
            # an id alone (what versions before --purge wrote), or {id: N, purge: true}
            value, purge = (entry, False)
            if isinstance(entry, dict):
                value, purge = entry.get("id"), entry.get("purge") is True
            if isinstance(value, int) and not isinstance(value, bool):
                out[str(name)] = Removal(value, purge)
        return out

    def set_removing(self, name: str, collection_id: int | None, purge: bool = False) -> None:
        """Record (an id) or clear (None) the pending removal of `name`. Always as a mapping: a
        version before shared-index listings reads only a bare id, and would finish the removal
        by deleting rows other homes still list; it skips a mapping."""
        entries: dict[str, Any] = {
            n: {"id": r.collection_id, "purge": r.purge} for n, r in self.removing().items()
        }
        if collection_id is None:
            entries.pop(name, None)
        else:
            entries[name] = {"id": collection_id, "purge": purge}
        if entries:
            self.raw["removing"] = entries
        else:
            self.raw.pop("removing", None)

    # -- storage -------------------------------------------------------------------------------

    def backend(self) -> str:
        """`backend:` the engine that holds the index: sqlite (one file, the default) or postgres.
        Without the key a `database_url:` means postgres: a URL written alone was ignored and the
        index stayed in the local file, silently (`backend: sqlite` keeps it local explicitly)."""
        value = self.raw.get("backend") or ("postgres" if self.raw.get("database_url") else "sqlite")
        if value not in BACKENDS:
            raise ConfigError(f"{self.path}: 'backend' must be one of {', '.join(BACKENDS)} (left untouched)")
        return str(value)

    def database_url(self) -> str | None:
        """`database_url:` the PostgreSQL server of `backend: postgres`."""
        value = self.raw.get("database_url")
        return str(value) if value else None

    # -- models --------------------------------------------------------------------------------

    def models(self) -> dict[str, Any]:
        """The `models:` block, every value this version reads checked here, the one place: the
        CLI, the daemon and the clients' in-process search all read it through this, so a bad
        value is the same line from each (`device: quantum` was read as auto, `embed: 5` as the
        default model, `profile: tiny` left search without vectors, all silently)."""
        models = dict(self.raw.get("models") or {})
        problem = _models_problem(models)
        if problem is not None:
            raise ConfigError(f"{self.path}: models.{problem} (left untouched)")
        return models

    def set_models(self, values: dict[str, Any]) -> None:
        block = dict(self.raw.get("models") or {})
        block.update(values)
        self.raw["models"] = block

    @classmethod
    @contextmanager
    def editing(cls, path: Path) -> Iterator[IndexConfig]:
        """Load, change, save under an exclusive lock, so the CLI and the daemon registering a
        repository at the same moment cannot lose each other's change. Nothing is written when
        the block raises."""
        # The lock is a file beside index.yml, not index.yml itself (replaced on save: a lock on
        # the old inode would protect nothing), removed when the edit is done.
        lock = path.with_name(f".{path.name}.lock")
        with waiting_for(lock, f"waiting for another edit of {path}", remove=True):
            config = cls.load(path)
            yield config
            config.save()

    def save(self) -> None:
        """Write atomically (temp file + rename) so a crash never leaves half a file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(self.path, yaml.safe_dump(self.raw, sort_keys=False, allow_unicode=True))
