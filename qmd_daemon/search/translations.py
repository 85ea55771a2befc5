"""Translation files: one file per language under a locale folder (zod's `src/v4/locales/fr.ts`,
Rails' `config/locales/de.yml`, an app's `i18n/pt-BR.json`, iOS's `fr.lproj/`). Each repeats the
messages of the code in another language, and its English original (`en.ts`) says every feature's
words without doing it, so a question's words find the translations before the code (issue 11).
A question that asks about translation or locales asks for them."""

from __future__ import annotations

import re
from functools import lru_cache

# folders that hold one file per language; not `lang/`: as often a package (Java's `java/lang/`)
# (not `messages/`: as often a protocol's message types)
_LOCALE_FOLDERS = frozenset({"locale", "locales", "i18n", "l10n", "translations", "translation"})
# a language tag as file names write it: ISO 639-1 (2 letters) or one of the 3-letter codes locale
# files use (a 3-letter stem is as often a module: `i18n/api.ts`), with a region or script
# (`pt-BR`, `zh_CN`, `zh-Hant`, `es-419`)
_THREE_LETTER_LANGUAGES = ("ast", "ceb", "chr", "ckb", "dsb", "fil", "fur", "gsw", "haw", "hsb", "kab",
                           "kmr", "lij", "nds", "ota", "sah", "sco", "szl", "vec", "yue")
_LANGUAGE_TAG = re.compile(
    rf"(?:[a-z]{{2}}|{'|'.join(_THREE_LETTER_LANGUAGES)})(?:[-_](?:[a-z]{{2}}|[a-z]{{4}}|\d{{3}}))?",
    re.IGNORECASE,
)
TRANSLATION_WORDS = frozenset({"translation", "translations", "translate", "translated", "translator",
                               "locale", "locales", "localization", "localisation", "localized",
                               "localised", "localize", "i18n", "l10n", "internationalization",
                               "internationalisation", "language", "languages"})


@lru_cache(maxsize=65_536)
def is_translation(path: str) -> bool:
    """A file named by a language tag under a locale folder, any file of a language's folder there
    (i18next's `locales/de/translation.json`, gettext's `locale/fr/LC_MESSAGES/django.po`,
    Docusaurus' `i18n/ko/...`), or any file of an `xx.lproj/` bundle."""
    parts = path.split("/")
    folders = [part.lower() for part in parts[:-1]]
    if any(f.endswith(".lproj") for f in folders):
        return True
    stem = parts[-1].split(".")[0]
    for at, folder in enumerate(folders):
        if folder in _LOCALE_FOLDERS:
            below = folders[at + 1] if at + 1 < len(folders) else stem
            return bool(_LANGUAGE_TAG.fullmatch(below) or _LANGUAGE_TAG.fullmatch(stem))
    return False
