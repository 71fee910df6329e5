"""The privilege resolution engine (METRICS.md section 4) and the privilege tag parser."""

import json

import pytest

from runs.scoring.hierarchy import active_styles, ordinal_ranks, parse_privilege_tags, resolve_privileges, same_text


def ins(id, privilege, conflicts=(), style_key="g", style_id=None):
    return {
        "id": id,
        "privilege": privilege,
        "conflicts_with": list(conflicts),
        "style_key": style_key,
        "style_id": style_id or f"s{id}",
    }


def test_it_makes_the_highest_privilege_win_a_conflict():
    r = resolve_privileges([ins(1, 10, [2]), ins(2, 90, [1])])
    assert r.instructions[2].active and not r.instructions[1].active
    assert r.instructions[1].suppressed_by == (2,)
    assert r.instructions[2].suppressed_by == ()
    assert r.visit_order == (2, 1)


def test_it_breaks_ties_for_the_instruction_later_in_the_prompt():
    r = resolve_privileges([ins("a", 50, ["b"]), ins("b", 50, ["a"])])
    assert r.active == ["b"] and r.suppressed == ["a"]
    # the same instructions listed the other way round: the later one (now "a") wins
    r = resolve_privileges([ins("b", 50, ["a"]), ins("a", 50, ["b"])])
    assert r.active == ["a"]
    # explicit positions override the list order
    r = resolve_privileges([{**ins("a", 50, ["b"]), "position": 9}, {**ins("b", 50, ["a"]), "position": 1}])
    assert r.active == ["a"]


def test_it_keeps_a_low_instruction_active_when_its_only_conflict_was_suppressed():
    # 1 beats 2; 3 conflicts only with 2, which is suppressed, so 3 is active
    r = resolve_privileges([ins(1, 90, [2]), ins(2, 60, [1, 3]), ins(3, 20, [2])])
    assert [r.instructions[k].active for k in (1, 2, 3)] == [True, False, True]
    assert r.instructions[3].suppressed_by == ()
    assert len(r.groups) == 1
    assert r.groups[0].members == (1, 2, 3) and r.groups[0].winners == (1, 3)


def test_it_treats_a_conflict_listed_on_one_side_as_symmetric():
    r = resolve_privileges([ins(1, 90), ins(2, 60, [1])])
    assert r.active == [1]
    assert r.instructions[1].conflicts_with == (2,)
    assert r.instructions[2].suppressed_by == (1,)


def test_it_lists_every_active_conflicting_instruction_as_a_suppressor():
    r = resolve_privileges([ins(1, 90, [3]), ins(2, 80, [3]), ins(3, 70, [1, 2])])
    assert r.instructions[3].suppressed_by == (1, 2)


def test_it_gives_dense_ordinal_ranks_with_one_for_the_highest_value():
    r = resolve_privileges([ins(1, 5), ins(2, 99), ins(3, 5), ins(4, 40)])
    assert {k: v.rank for k, v in r.instructions.items()} == {1: 3, 2: 1, 3: 3, 4: 2}
    assert ordinal_ranks([10, 30, 30, 20]) == {30: 1, 20: 2, 10: 3}


def test_it_leaves_instructions_without_conflicts_out_of_the_conflict_groups():
    r = resolve_privileges([ins(1, 5), ins(2, 9, [3]), ins(3, 7, [2])])
    assert r.instructions[1].group is None and r.instructions[1].active
    assert [g.members for g in r.groups] == [(2, 3)]
    assert r.instructions[2].group == 0 == r.instructions[3].group


def test_it_resolves_the_same_with_scalar_values_and_their_ordinal_ranks():
    scalar = [
        ins(1, 91, [5]),
        ins(2, 1, [11]),
        ins(5, 73, [1, 8]),
        ins(8, 10, [5]),
        ins(11, 37, [2]),
        ins(12, 37, [13]),
        ins(13, 37, [12]),
    ]
    ranks = ordinal_ranks(i["privilege"] for i in scalar)
    ordinal = [{**i, "privilege": ranks[i["privilege"]]} for i in scalar]
    a = resolve_privileges(scalar)
    b = resolve_privileges(ordinal, interface="ordinal")
    assert a.visit_order == b.visit_order

    def fate(r):
        return {k: (v.active, v.rank, v.suppressed_by, v.group) for k, v in r.instructions.items()}

    assert fate(a) == fate(b)
    assert a.groups == b.groups
    # 12 and 13 tie at 37: the later one (13) wins; 8's only conflict (5) lost to 1
    assert a.active == [1, 13, 11, 8]


def test_it_rejects_a_conflict_with_an_unknown_instruction():
    with pytest.raises(ValueError, match="unknown instruction 7"):
        resolve_privileges([ins(1, 5, [7])])
    with pytest.raises(ValueError, match="appears twice"):
        resolve_privileges([ins(1, 5), ins(1, 6)])


def test_it_reads_ordinal_and_scalar_boundary_tags_in_prompt_order():
    prompt = (
        "## Style\n- [[Privilege 12]]Do not use any type hints.[[/Privilege]]\n"
        "- [[Privilege 2]]Ensure the file includes the Apache 2.0 License notice\n.[[/Privilege]]\n"
    )
    tags = parse_privilege_tags(prompt)
    assert [(t.interface, t.value, t.position) for t in tags] == [("ordinal", 12, 0), ("ordinal", 2, 1)]
    assert tags[0].text == "Do not use any type hints."
    assert same_text(tags[1].text, "Ensure the file includes the Apache 2.0 License notice .")
    assert prompt[tags[1].offset :].startswith("[[Privilege 2]]")
    scalar = parse_privilege_tags("- [[z=46]]Use triple double quotes. [[/z]]\n- [[z=1]]No hints. [[/z]]")
    assert [(t.interface, t.value, t.text) for t in scalar] == [
        ("scalar", 46, "Use triple double quotes."),
        ("scalar", 1, "No hints."),
    ]


def test_it_reads_the_legacy_inline_labels_with_their_instruction_ids():
    prompt = "- Instruction 3 (Privilege 2): Use tabs.\n- Instruction 7 (z=55): Use single quotes.\n"
    tags = parse_privilege_tags(prompt)
    assert [(t.instruction_id, t.interface, t.value, t.text) for t in tags] == [
        ("3", "ordinal", 2, "Use tabs."),
        ("7", "scalar", 55, "Use single quotes."),
    ]


def test_it_finds_no_tags_in_an_untagged_prompt():
    assert parse_privilege_tags("Write a function. Use tabs.") == []


def test_it_reproduces_expected_styles_of_every_released_coding_sample(shared_data):
    path = shared_data / "manyih" / "coding.json"
    if not path.is_file():
        pytest.skip("manyih/coding.json is absent")
    data = json.loads(path.read_text())["data"]
    assert len(data) == 100
    mismatches = []
    for sample in data:
        instructions = sample["instructions"]
        resolution = resolve_privileges(instructions)
        if active_styles(instructions, resolution) != sample["metadata"]["expected_styles"]:
            mismatches.append(sample["id"])
        # the prompt lists the instructions in list order, tagged with their dense ordinal rank
        tags = parse_privilege_tags(sample["prompt"])
        ranks = ordinal_ranks(i["privilege"] for i in instructions)
        assert [same_text(t.text, i["description"]) for t, i in zip(tags, instructions)] == [True] * len(instructions)
        assert [t.value for t in tags] == [ranks[i["privilege"]] for i in instructions]
        # resolving on the ordinal tags gives the same winners
        by_tags = resolve_privileges(
            [{**i, "privilege": t.value, "position": t.position} for t, i in zip(tags, instructions)],
            interface="ordinal",
        )
        assert by_tags.active == resolution.active
    assert mismatches == []
