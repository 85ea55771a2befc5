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
# Java's ResourceBundle: `Messages_fr.properties`, `messages_pt_BR.properties`, wherever they lie
# (not `application_dev.properties`: a 3-letter tag only from the list above)
_BUNDLE_TAG = re.compile(
    rf"_(?:[a-z]{{2}}|{'|'.join(_THREE_LETTER_LANGUAGES)})(?:_[A-Z][a-z]{{3}})?(?:_(?:[A-Z]{{2}}|\d{{3}}))?$"
)
# A class per language, named by the language's English name, in a folder of them (FluentValidation's
# `Resources/Languages/FrenchLanguage.cs`); the name list keeps a folder of programming languages out
# (highlight.js' `src/languages/python.js`)
_LANGUAGE_CLASS_FOLDERS = _LOCALE_FOLDERS | {"languages", "localization", "localisation", "lang", "langs"}
_LANGUAGE_NAMES = frozenset("""
    afrikaans albanian amharic arabic armenian azerbaijani azerbaijanese basque belarusian bengali bosnian
    bulgarian burmese catalan chinese croatian czech danish dutch english estonian filipino finnish french
    galician georgian german greek gujarati hebrew hindi hungarian icelandic indonesian irish italian
    japanese kannada kazakh khmer korean kurdish kyrgyz lao latvian lithuanian macedonian malay malayalam
    maltese marathi mongolian nepali norwegian persian polish portuguese punjabi romanian romansh russian
    serbian sinhala slovak slovenian somali spanish swahili swedish tajik tamil telugu thai turkish
    turkmen ukrainian urdu uzbek vietnamese welsh""".split())
_FIRST_WORD = re.compile(r"[A-Z]?[a-z]+")
TRANSLATION_WORDS = frozenset({"translation", "translations", "translate", "translated", "translator",
                               "locale", "locales", "localization", "localisation", "localized",
                               "localised", "localize", "i18n", "l10n", "internationalization",
                               "internationalisation", "language", "languages"})


@lru_cache(maxsize=65_536)
def is_translation(path: str) -> bool:
    """A file named by a language tag under a locale folder, any file of a language's folder there
    (i18next's `locales/de/translation.json`, gettext's `locale/fr/LC_MESSAGES/django.po`,
    Docusaurus' `i18n/ko/...`), any file of an `xx.lproj/` bundle, a Java bundle's
    `Messages_fr.properties`, or a class named by a language's English name in a folder of them."""
    parts = path.split("/")
    folders = [part.lower() for part in parts[:-1]]
    if any(f.endswith(".lproj") for f in folders):
        return True
    stem = parts[-1].split(".")[0]
    if parts[-1].endswith(".properties") and _BUNDLE_TAG.search(stem):
        return True
    first = _FIRST_WORD.match(stem)
    if first and first.group().lower() in _LANGUAGE_NAMES and _LANGUAGE_CLASS_FOLDERS.intersection(folders):
        return True
    for at, folder in enumerate(folders):
        if folder in _LOCALE_FOLDERS:
            below = folders[at + 1] if at + 1 < len(folders) else stem
            return bool(_LANGUAGE_TAG.fullmatch(below) or _LANGUAGE_TAG.fullmatch(stem))
    return False
