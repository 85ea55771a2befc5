"""A search's query embedding goes ahead of the daemon's background embedding: real MiniLM, two
threads. The background batch held the model for all its texts, so a search waited for the whole
batch (2.5-8.4 s in the daemon while it embedded an index on this CPU)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from qmd_daemon.models.embedder import Embedder


def test_a_query_is_embedded_between_the_steps_of_a_background_batch(small_models: dict[str, Path]) -> None:
    embedder = Embedder(small_models["embed"], threads=1)
    try:
        embedder.embed_query("load the model first")
        texts = [f"def scale_{i}(values):\n    return [v * {i} for v in values]\n" * 3 for i in range(40)]
        decodes = 0
        before_the_query: list[int] = []  # the decodes done when the query's own decode began
        first = threading.Event()
        decode = embedder._decode

        def counted(llm: Any, token_lists: list[list[int]]) -> list[list[float]]:
            nonlocal decodes
            if threading.current_thread() is threading.main_thread():
                before_the_query.append(decodes)  # counted here, not once the query returned: a
                # loaded box may run the batch on while this thread waits for a core
            vectors = decode(llm, token_lists)
            decodes += 1
            first.set()
            return vectors

        embedder._decode = counted  # type: ignore[method-assign]  # counts; the decode is real
        background = threading.Thread(target=embedder.embed_documents, args=(texts,))
        background.start()
        assert first.wait(60)
        vector = embedder.embed_query("which function scales values")
        background.join()
        assert len(vector) == embedder.dim and decodes == len(texts) + 1
        assert len(before_the_query) == 1 and before_the_query[0] < 10, "the query waited for the batch"
    finally:
        embedder.unload()
