"""Long documents are split into passages that fit the model, whole paragraphs where they can."""

from __future__ import annotations

import pytest

from parley.settings import Settings
from projections.search import embedder_for, passage_input, plain_text, split_passages


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    return embedder_for(Settings(data_dir=tmp_path_factory.mktemp("model")))


def test_every_passage_fits_the_model_with_its_title(embedder):
    title = "Configuring single sign-on with SAML"
    paragraphs = [f"Paragraph {i}: " + " ".join(f"word{i}x{j}" for j in range(20 + i % 50)) + "." for i in range(60)]
    passages = split_passages(embedder, title, "\n\n".join(paragraphs))
    assert len(passages) > 5
    assert all(embedder.count_tokens(passage_input(title, p)) <= embedder.max_tokens for p in passages)
    assert " ".join(passages).split() == " ".join(paragraphs).split()  # nothing lost, nothing repeated


def test_a_long_paragraph_is_split_by_sentence(embedder):
    paragraph = " ".join(f"Sentence number {i} explains one more step of the setup." for i in range(80))
    passages = split_passages(embedder, "Setup", paragraph)
    assert len(passages) > 1
    assert all(p.endswith(".") for p in passages)
    assert all(embedder.count_tokens(passage_input("Setup", p)) <= embedder.max_tokens for p in passages)


def test_short_and_empty_documents_are_one_passage(embedder):
    assert split_passages(embedder, "Hours", "We open at *nine*.") == ["We open at nine."]
    assert split_passages(embedder, "Title only", "") == [""]
    assert passage_input("Title only", "") == "Title only"


def test_markdown_is_reduced_to_text():
    assert plain_text("## Steps\n\n1. Open [Settings](https://x.example/s)\n- Click **Save** `now`") == (
        "Steps\n\nOpen Settings\nClick Save now")
