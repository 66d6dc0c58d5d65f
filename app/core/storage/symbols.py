"""Which characters make words in the keyword index, beyond letters and numbers.

FTS5's unicode61 tokenizer keeps as words the runs of characters whose Unicode category is
listed in its `categories` option (by default letters, numbers and private use: `L* N*
Co`); everything else separates words. Since m016 the index also keeps *other symbols*
(`So`): emoji and the other pictographs (🎂 ✅ ★ ☂ ♫ ⚠), so each is searchable as itself
(issue 46). A few symbols written against a word or a number stay separators, as they were:
`25°C`, `Mnemo™`, `©2024`, `№5` are still the words `25 c`, `mnemo`, `2024`, `5`; so do the
currency signs (`€5` is `5`) and the five skin tones, so `👍🏽` is the word `👍` (searching
either finds both). The joiner (U+200D), the variation selectors (U+FE0F) and a keycap's
enclosing mark (U+20E3) were separators already: 👨‍👩‍👧 is the phrase `👨 👩 👧`.

A run of symbols, or symbols against letters, is one word: `🎉🎂` or `birthday🎂` is found
by searching it as written (or by meaning), not by `🎂` alone. unicode61 splits only where
a separator is; splitting between letters and symbols needs a tokenizer of our own, which
every connection (and the sqlite3 shell) would have to load before writing a memory.

Python's `\\w` knows letters, numbers and `_`, not symbols: `fts._WORD` adds `WORD_SYMBOLS`,
the characters besides `\\w` that the tokenizer keeps (`RANGES`, measured from FTS5 itself;
`tests/core/test_emoji_search.py` measures them again and says if SQLite's tables moved).
"""

from __future__ import annotations

CATEGORIES = "L* N* Co So"
SEPARATORS = (
    "°℃℉©®™℗℠№"  # written against a number or a word
    + "".join(map(chr, range(0x20BA, 0x20C1)))  # the currency signs FTS5's tables lack
    + "".join(map(chr, range(0x1F3FB, 0x1F400)))  # skin tones: 👍🏽 is 👍
)

# Code points (hex) that are symbols, private use or emoji and that the tokenizer keeps as
# word characters where `\w` does not; a range may span unassigned code points it keeps too.
RANGES = """
A6 482 58D-58E 60E-60F 6DE 6E9 6FD-6FE 7F6 7FE-7FF 888 9FA B70 BF3-BF8 BFA C7F D4F D79
F01-F03 F13 F15-F17 F1A-F1F F34 F36 F38 FBE-FC5 FC7-FCF FD5-FD8 109E-109F 1390-1399 1940
19DE-19FF 1B61-1B6A 1B74-1B7C 2100-2101 2104-2106 2108 2114 211E-211F 2121 2123 2125
2127 2129 212E 213A-213B 214A 214C-214D 214F 218A-218B 2195-2199 219C-219F 21A1-21A2
21A4-21A5 21A7-21AD 21AF-21CD 21D0-21D1 21D3 21D5-21F3 2300-2307 230C-231F 2322-2328
232B-237B 237D-239A 23B4-23DB 23E2-244A 249C-24E9 2500-25B6 25B8-25C0 25C2-25F7
2600-266E 2670-2767 2794-27BF 2800-28FF 2B00-2B2F 2B45-2B46 2B4D-2BFF 2CE5-2CEA
2E50-2FFB 3004 3012-3013 3020 3036-3037 303E-303F 3190-3191 3196-319F 31C0-31E3
3200-321E 322A-3247 3250 3260-327F 328A-32B0 32C0-33FF 4DC0-4DFF A490-A4C6 A828-A82B
A836-A837 A839 AA77-AA79 AB5B AB6A-AB6B E000-F8FF FBC2 FD40-FD4F FDCF FDFD-FDFF FFE4
FFE8 FFED-FFEE FFFC-FFFD 10137-1013F 10179-10189 1018C-101FC 10877-10878 10AC8 1173F
11FD5-11FF1 16B3C-16B3F 16B45 1BC9C-1D164 1D16A-1D16C 1D183-1D184 1D18C-1D1A9
1D1AE-1D241 1D245 1D300-1D356 1D800-1DA86 1E14F 1E2FF 1ECAC 1ECB0 1ED2E 1F000-1F0FF
1F10D-1F3FA 1F400-1FBFF F0000-10FFFD
"""


def _char_class(ranges: str) -> str:
    parts = []
    for item in ranges.split():
        low, _, high = item.partition("-")
        first = chr(int(low, 16))
        parts.append(first if not high else f"{first}-{chr(int(high, 16))}")
    return "".join(parts)


# The inside of a regex character class: `[\w{WORD_SYMBOLS}]` is a word character
WORD_SYMBOLS = _char_class(RANGES)
