"""The subcommands and their one-line help: light, so `bertlens --help` and a mistyped command need no
heavy import. Each command's module (cli/NAME.py) is imported only when that command runs."""

from __future__ import annotations

COMMANDS = {
    "embed": "embed a .txt/.csv/.tsv/.jsonl file into .npy or .parquet",
    "sweep": "score every token/layer/pooling choice on a task in one pass",
    "probe": "layer-wise linguistic probing (POS, dependencies, SentEval-style sentence tasks)",
    "finetune": "fine-tune with one strategy and save a model directory",
    "compare": "frozen features + linear probe vs fine-tuning strategies, by training size",
    "geometry": "anisotropy diagnostics per layer and pooler",
    "postprocess": "fit whitening / all-but-the-top on a corpus and save a recipe",
    "contrastive": "SimCSE (unsupervised) or supervised contrastive fine-tuning",
    "longdoc": "compare long-text strategies (truncation, windows, chunk classifiers)",
    "pretrain": "continued masked-LM pre-training on in-domain text (DAPT) or a task's texts (TAPT)",
    "distill": "bake any recipe into a smaller plain model (mean pooling of its last layer)",
    "export": "export a recipe to ONNX (pooling inside, int8 behind a fidelity gate) or sentence-transformers",
    "serve": "serve a recipe over HTTP: OpenAI-compatible /v1/embeddings, TEI-style /embed, dynamic batching",
    "recommend": "measure your data and recommend length strategy, adaptation, recipe, fine-tuning, precision",
    "domain": "is your text far from what the model was trained on? tokenizer fit, masked-LM surprise, verdict",
    "index": "embed a corpus with a recipe into a vector store (LanceDB, Chroma), resumable",
    "search": "search an index with its own recipe: top-k documents per query",
    "data": "the catalog tasks: where each is read from (list), and their download (fetch)",
}
