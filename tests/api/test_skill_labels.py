"""Skills carry their category, tags and author (seed 004: skill.json's own fields; a SKILL.md
skill's frontmatter `metadata`), and GET /v1/skills filters by them."""

from __future__ import annotations


def ids(client, query: str = "") -> list[str]:
    resp = client.get(f"/v1/skills{query}")
    assert resp.status_code == 200, resp.json
    return [s["id"] for s in resp.json]


def test_each_skill_shows_its_category_tags_and_author(client):
    listed = {s["id"]: s for s in client.get("/v1/skills").json}
    assert (listed["word_stats"]["category"], listed["word_stats"]["tags"]) == (
        "text",
        ["text", "example"],
    )
    echo = listed["demo-echo"]
    assert (echo["category"], echo["tags"], echo["author"]) == (
        "demo",
        ["echo", "example"],
        "Skill Runner",
    )
    plain = listed["demo-prime-number"]  # no metadata: empty, never missing
    assert (plain["category"], plain["tags"], plain["author"]) == (None, [], None)


def test_the_list_filters_by_category_tag_and_words(client):
    text = ids(client, "?category=TEXT")
    assert "word_stats" in text and "demo-echo" not in text
    assert all(s in text for s in ("keyword_lines", "headline"))
    assert ids(client, "?tag=echo") == ["demo-echo"]
    assert set(ids(client, "?tag=example")) >= {"demo-echo", "word_stats"}
    assert ids(client, "?q=skill%20runner%20echo") == ["demo-echo"]  # every word, any field
    assert ids(client, "?category=demo&tag=text") == []
