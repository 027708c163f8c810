"""The CoNLL-U reader and word -> character-span alignment."""

from __future__ import annotations

import pytest

from bertlens.errors import BertlensError
from bertlens.tasks.conllu import read_conllu, word_spans

SAMPLE = """# newdoc id = d1
# sent_id = s1
# text = I don't know, e.g. mail me@example.com.
1\tI\tI\tPRON\tPRP\tCase=Nom|Number=Sing\t4\tnsubj\t4:nsubj\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\tMood=Ind|Tense=Pres|VerbForm=Fin\t4\taux\t4:aux\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_
4\tknow\tknow\tVERB\tVB\tVerbForm=Inf\t0\troot\t0:root\tSpaceAfter=No
4.1\tknow\tknow\tVERB\tVB\t_\t_\t_\t4:conj\tCopyOf=4
5\t,\t,\tPUNCT\t,\t_\t4\tpunct\t4:punct\t_
6\te.g.\te.g.\tADV\tFW\t_\t7\tadvmod\t7:advmod\t_
7\tmail\tmail\tVERB\tVB\tVerbForm=Inf\t4\tparataxis\t4:parataxis\t_
8\tme@example.com\tme@example.com\tX\tADD\t_\t7\tobj\t7:obj\tSpaceAfter=No
9\t.\t.\tPUNCT\t.\t_\t4\tpunct\t4:punct\t_

# sent_id = s2
1\tWo\twill\tAUX\tMD\t_\t0\troot\t0:root\t_
"""


def write(tmp_path, text: str):
    path = tmp_path / "sample.conllu"
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_comments_multiwords_and_skips_empty_nodes(tmp_path):
    first, second = list(read_conllu(write(tmp_path, SAMPLE)))
    assert first.sent_id == "s1" and first.text.startswith("I don't know")
    assert [w.form for w in first.words] == ["I", "do", "n't", "know", ",", "e.g.", "mail", "me@example.com", "."]
    assert [w.id for w in first.words] == list(range(1, 10))  # the empty node 4.1 is not a word
    assert len(first.multiwords) == 1 and first.multiwords[0].form == "don't"
    assert first.words[1].feats == {"Mood": "Ind", "Tense": "Pres", "VerbForm": "Fin"}
    assert first.words[3].misc == {"SpaceAfter": "No"}
    assert second.sent_id == "s2" and second.text == "Wo"  # no text comment: rebuilt from the forms


def test_word_spans_split_contractions_and_keep_urls_whole(tmp_path):
    sentence = next(read_conllu(write(tmp_path, SAMPLE)))
    text, spans, rebuilt = word_spans(sentence)
    assert not rebuilt
    assert [text[a:b] for a, b in spans] == [w.form for w in sentence.words]
    assert spans[1] == (2, 4) and spans[2] == (4, 7)  # "do" + "n't" inside "don't"


def test_multiword_whose_words_do_not_spell_it_shares_the_span(tmp_path):
    text = (
        "# text = du vin\n1-2\tdu\t_\t_\t_\t_\t_\t_\t_\t_\n1\tde\tde\tADP\t_\t_\t3\tcase\t_\t_\n"
        "2\tle\tle\tDET\t_\t_\t3\tdet\t_\t_\n3\tvin\tvin\tNOUN\t_\t_\t0\troot\t_\t_\n"
    )
    sentence = next(read_conllu(write(tmp_path, text)))
    assert word_spans(sentence)[1] == [(0, 2), (0, 2), (3, 6)]


def test_text_that_disagrees_with_forms_is_rebuilt(tmp_path):
    text = (
        "# text = something else\n1\tHello\thello\tINTJ\tUH\t_\t0\troot\t_\tSpaceAfter=No\n"
        "2\t!\t!\tPUNCT\t.\t_\t1\tpunct\t_\t_\n"
    )
    result, spans, rebuilt = word_spans(next(read_conllu(write(tmp_path, text))))
    assert rebuilt and result == "Hello!" and spans == [(0, 5), (5, 6)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1\tonly\tthree", "expected 10 tab-separated columns, found 3"),
        ("x\ta\ta\tX\tX\t_\t0\troot\t_\t_", "bad id 'x'"),
        ("1\ta\ta\tX\tX\t_\tnine\troot\t_\t_", "head 'nine'"),
        ("3-2\tab\t_\t_\t_\t_\t_\t_\t_\t_", "must end after it starts"),
    ],
)
def test_malformed_line_is_reported_with_its_number(tmp_path, line, message):
    good = "# text = ok\n1\tok\tok\tINTJ\tUH\t_\t0\troot\t_\t_\n\n"
    path = write(tmp_path, good + "# text = bad\n" + line + "\n")
    with pytest.raises(BertlensError, match=f"sample.conllu:5: .*{message}"):
        list(read_conllu(path))


def test_heads_outside_the_sentence_and_missing_files_are_errors(tmp_path):
    path = write(tmp_path, "1\ta\ta\tX\tX\t_\t7\troot\t_\t_\n")
    with pytest.raises(BertlensError, match="head 7, outside 0..1"):
        list(read_conllu(path))
    with pytest.raises(BertlensError, match="not found"):
        list(read_conllu(tmp_path / "missing.conllu"))
