"""A deterministic, realistically skewed memory corpus for plan checks and benchmarks."""

from __future__ import annotations

import itertools
import random

from paxm_core import MemoryItem

__all__ = ["corpus"]

_COMMON = "the team decided to use config for deploy service build test release with and on a in".split()
_SYLLABLES = ["ka", "lo", "mi", "ra", "ten", "vo", "zu", "pel", "dor", "qui", "sha", "nim", "bex", "tor", "ul"]
_CJK = "数据库连接超时配置部署服务测试发布缓存"


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def corpus(count: int, seed: int = 7) -> list[MemoryItem]:
    """``count`` memories: Zipf-ish words, identifiers, versions, some CJK, a few long ones."""
    rng = random.Random(seed)
    vocab = _vocabulary(rng, 5000)
    # cumulative once: passing ``weights`` makes every ``choices`` call re-add all 5,000 of them
    # (most of the time of a 30k corpus); the draws are the same numbers either way
    cum_weights = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(vocab))))
    items = []
    for i in range(count):
        words = rng.choices(vocab, cum_weights=cum_weights, k=rng.randint(6, 30))
        words += rng.choices(_COMMON, k=rng.randint(2, 8))
        rng.shuffle(words)
        if i % 7 == 0:
            words.append(f"{rng.choice(vocab)}_{rng.choice(vocab)}_timeout")
        if i % 11 == 0:
            words.append(f"v{rng.randint(0, 3)}.{rng.randint(0, 20)}.{rng.randint(0, 40)}")
        if i % 13 == 0:
            words.append("".join(rng.choices(_CJK, k=6)))
        text = " ".join(words)
        if i % 997 == 0:
            text = (text + "\n") * 80
        items.append(MemoryItem(id=f"c{i:07d}", text=text, tier="ltm" if i % 3 else "stm"))
    return items
