"""Every command in the README runs as written, as a pip user runs it: the bash blocks are read, and each
`bertlens ...` line runs in order in a fresh temporary directory (no `../shared` beside it, no $BERTLENS_DATA, an
empty user cache) holding small stand-ins for the files the README names (reviews.csv, texts.txt, a BEIR directory
*with* an empty document, as Cranfield has); catalog tasks (`--task stsb`) are downloaded from a local stand-in for
their public sources. A line whose comment says it runs until stopped (`serve`) is parsed, not run: its flags must
exist. CI runs it once, in its user-stack leg (`.ci/user_stack`, the `all` stack: the wheel in a user's venv);
`make test-extended` leaves it to that leg, `pytest -m extended` runs it on the checkout."""

from __future__ import annotations

import csv
import json
import os
import shlex
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from bertlens.cli.main import main, parse_command_line
from tests.conftest import DATA, REPO

pytestmark = [pytest.mark.extended, pytest.mark.userstack]

README = (REPO / "README.md").read_text(encoding="utf-8")
NOT_RUN = "runs until stopped"


def readme_commands() -> list[tuple[list[str], bool]]:
    """(words, run it) for each `bertlens` line of the README's bash blocks, in order."""
    commands = []
    for fence in MarkdownIt().parse(README):
        if fence.type != "fence" or fence.info != "bash":
            continue
        for line in fence.content.splitlines():
            if line.strip().startswith("bertlens "):
                commands.append((shlex.split(line, comments=True), NOT_RUN not in line))
    return commands


def stand_ins(root) -> None:
    """The files the README's commands read, small: 160 SST-2 reviews, 120 STS-B sentences, a BEIR directory."""
    lines = (DATA / "sst2" / "train.txt").read_text().splitlines()
    rows = [ln for ln in lines if ln.startswith("0")][:80] + [ln for ln in lines if ln.startswith("1")][:80]
    with open(root / "reviews.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows([line.split(" ", 1)[1], line.split(" ", 1)[0]] for line in rows)
    with open(DATA / "stsb" / "test.csv", newline="", encoding="utf-8") as handle:
        sentences = [row[0] for row in list(csv.reader(handle))[:120]]
    (root / "texts.txt").write_text("\n".join(sentences) + "\n")
    beir = root / "my_beir_dir"
    (beir / "qrels").mkdir(parents=True)
    topics = ["wings and lift", "engines and thrust", "rain and weather", "bread and baking", "stalls and airflow"]
    docs = [{"_id": f"d{i}", "title": "", "text": f"a note on {topics[i % 5]}, part {i}"} for i in range(25)]
    docs.append({"_id": "d-empty", "title": "", "text": " "})
    (beir / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [{"_id": f"q{i}", "text": f"what about {topics[i]}?"} for i in range(5)]
    (beir / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    qrels = [f"q{i}\td{i + 5 * j}\t1" for i in range(5) for j in range(5)]
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(qrels) + "\n")
    kinds_stand_ins(root)
    files_stand_ins(root)
    sheets_and_models_stand_ins(root)


def sheets_and_models_stand_ins(root) -> None:
    """EmoBank valence as a workbook's 'Ratings' sheet (Text, Score), and a small BERT under the name of the 3-layer
    model the README compares with the default one (the real one is in ../shared/models, not beside a pip user)."""
    from bertlens.models import default_model_dir
    from tests.conftest import make_tiny_bert

    rows = list(csv.reader((root / "emobank.csv").open(newline="", encoding="utf-8")))
    header = rows[0]
    book = [(r[header.index("text")], float(r[header.index("V")])) for r in rows[1:]]
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Ratings"
    sheet.append(["Text", "Score"])
    for row in book:
        sheet.append(list(row))
    workbook.save(root / "ratings.xlsx")
    (root / "paraphrase-minilm-l3-v2").mkdir()
    make_tiny_bert(root / "paraphrase-minilm-l3-v2", default_model_dir())


def files_stand_ins(root) -> None:
    """The first 300 TREC questions (six classes, the rarest with 6 rows) as a comma CSV; 160 SST-2 reviews with
    Windows punctuation as a semicolon CSV in cp1252, as a European Excel saves them."""
    lines = (DATA / "trec" / "train.txt").read_text(encoding="latin-1").splitlines()[:300]
    with open(root / "questions.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(
            [("text", "label"), *((t, label) for label, _, t in (s.partition(" ") for s in lines))]
        )
    reviews = list(csv.reader((root / "reviews.csv").open(newline="", encoding="utf-8")))
    with open(root / "export.csv", "w", newline="", encoding="cp1252") as handle:
        rows = [reviews[0]] + [
            [text.replace(" 's", "\u2019s") + " \u2013 \u201cso\u201d", label] for text, label in reviews[1:]
        ]
        csv.writer(handle, delimiter=";").writerows(rows)


def kinds_stand_ins(root) -> None:
    """EmoBank's first rows of each split (a number per text); GoEmotions comments with anger, joy or sadness, as a
    separated label column and as one 0/1 column per label."""
    lines = (DATA / "emobank" / "emobank.csv").read_text(encoding="utf-8").splitlines()
    take = {"train": 150, "dev": 50, "test": 50}
    kept = [lines[0]]
    for line in lines[1:]:
        split = line.split(",")[1]
        if take.get(split, 0) > 0:
            kept.append(line)
            take[split] -= 1
    (root / "emobank.csv").write_text("\n".join(kept) + "\n", encoding="utf-8")
    names = {"2": "anger", "17": "joy", "25": "sadness"}
    picked, count = [], dict.fromkeys(names, 0)
    for line in (DATA / "goemotions" / "train.tsv").read_text(encoding="utf-8").splitlines():
        text, ids, _ = line.split("\t")
        mine = [i for i in ids.split(",") if i in names]
        if mine and count[mine[0]] < 60:
            count[mine[0]] += 1
            picked.append((text, ids.split(","), mine))
    (root / "comments.tsv").write_text(
        "text\tlabels\n" + "".join(f"{t}\t{','.join(ids)}\n" for t, ids, _ in picked), encoding="utf-8"
    )
    with open(root / "comments.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", *names.values()])
        writer.writerows([t, *(int(i in mine) for i in names)] for t, _, mine in picked)


def test_the_readme_has_commands_to_run():
    commands = readme_commands()
    assert len(commands) >= 8 and any(not run for _, run in commands)


def test_every_readme_command_runs_as_written(tmp_path, monkeypatch, capsys):
    import bertlens
    from tests.tasks.test_catalog_fetch import stand_in_hub

    if os.environ.get("BERTLENS_EXPECT_INSTALLED"):  # the user-stack leg: the wheel, not the checkout's src/
        assert REPO / "src" not in Path(bertlens.__file__).parents
    work = tmp_path / "home" / "work"
    work.mkdir(parents=True)
    stand_ins(work)
    monkeypatch.chdir(work)
    monkeypatch.delenv("BERTLENS_DATA", raising=False)
    monkeypatch.setenv("BERTLENS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BERTLENS_CATALOG_SOURCE", str(stand_in_hub(tmp_path / "sources")))
    for words, run in readme_commands():
        if not run:
            parse_command_line(words[1:])  # the flags exist and parse
            continue
        code = main(words[1:])
        err = capsys.readouterr().err
        assert code == 0, f"`{shlex.join(words)}` failed: {err.strip().splitlines()[-3:]}"
