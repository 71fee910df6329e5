"""Source-category names as METRICS.md section 1 normalises them."""

import re

SYSTEM_PROMPT = "System Prompt"
SYSTEM_REMINDER = "System Reminder"
USER_QUERY = "User Query"
AGENTS_MD = "Agents.md/Claude.md"
SKILL_MD = "Skill.md"
MEMORY = "Memory"
TOOL_SCHEMA = "Tool Schema"

#: the seven instruction sources, in the order pages show them
SOURCE_CATEGORIES = (SYSTEM_PROMPT, SYSTEM_REMINDER, USER_QUERY, AGENTS_MD, SKILL_MD, MEMORY, TOOL_SCHEMA)

_ALIASES = {
    "sp": SYSTEM_PROMPT,
    "system prompt": SYSTEM_PROMPT,
    "system reminder": SYSTEM_REMINDER,
    "user query": USER_QUERY,
    "uq": USER_QUERY,
    "agents.md": AGENTS_MD,
    "claude.md": AGENTS_MD,
    "md": AGENTS_MD,
    "agents.md/claude.md": AGENTS_MD,
    "skill": SKILL_MD,
    "skill.md": SKILL_MD,
    "memory": MEMORY,
    "memory bank": MEMORY,
    "tool schema": TOOL_SCHEMA,
}
_MEMORY_BANK = re.compile(r"^memory bank\s*\(.*\)$")


def normalise_category(name: str) -> str:
    """The canonical source category for a spelling; an unknown name is returned as it is."""
    key = " ".join(name.strip().split()).lower()
    if key in _ALIASES:
        return _ALIASES[key]
    if _MEMORY_BANK.match(key):
        return MEMORY
    return name.strip()
