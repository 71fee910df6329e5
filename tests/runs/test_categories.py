"""Source-category spellings as METRICS.md section 1 normalises them."""

import re
from pathlib import Path

import pytest

from runs.categories import SOURCE_CATEGORIES, normalise_category

METRICS_MD = Path(__file__).resolve().parents[3] / "shared" / "design" / "METRICS.md"

#: every alias METRICS.md section 1 lists, with the source it names
ALIASES = {
    "SP": "System Prompt",
    "System prompt": "System Prompt",
    "System reminder": "System Reminder",
    "User query": "User Query",
    "UQ": "User Query",
    "Agents.md": "Agents.md/Claude.md",
    "AGENTS.md": "Agents.md/Claude.md",
    "Claude.md": "Agents.md/Claude.md",
    "CLAUDE.md": "Agents.md/Claude.md",
    "MD": "Agents.md/Claude.md",
    "Skill": "Skill.md",
    "Skill.md": "Skill.md",
    "Memory": "Memory",
    "memory": "Memory",
    "Memory bank": "Memory",
    "Memory bank (project context)": "Memory",
    "Memory bank (...)": "Memory",
    "Tool schema": "Tool Schema",
}


@pytest.mark.parametrize(("alias", "expected"), sorted(ALIASES.items()))
def test_it_normalises_every_alias_in_any_case(alias, expected):
    assert normalise_category(alias) == expected
    assert normalise_category(alias.upper()) == expected
    assert normalise_category(alias.lower()) == expected
    assert normalise_category(f"  {alias}\t") == expected


def test_it_maps_the_seven_sources_to_themselves():
    assert len(SOURCE_CATEGORIES) == 7
    assert [normalise_category(c) for c in SOURCE_CATEGORIES] == list(SOURCE_CATEGORIES)
    assert set(ALIASES.values()) == set(SOURCE_CATEGORIES)


def test_it_collapses_inner_whitespace():
    assert normalise_category("System   \n prompt") == "System Prompt"
    assert normalise_category("memory  bank  ( notes )") == "Memory"


@pytest.mark.parametrize(
    "name", ["testing", "Mystery Source", "用户查询", "Memory banks", "SPX", "Tool", "MD files", "memory bank notes"]
)
def test_it_keeps_an_unknown_name_as_it_is(name):
    assert normalise_category(name) == name


def test_it_covers_every_alias_quoted_in_metrics_md():
    if not METRICS_MD.is_file():
        pytest.skip("../shared/design/METRICS.md is absent")
    text = METRICS_MD.read_text()
    section = text[text.index("Category names arrive in many spellings") : text.index("## 2.")]
    quoted = set(re.findall(r'"([^"]+)"', section))

    assert quoted and quoted <= set(ALIASES)
    for alias in quoted:
        assert normalise_category(alias) == ALIASES[alias]
