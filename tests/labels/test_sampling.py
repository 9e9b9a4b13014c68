"""The draw: stratified by target and metric, seeded, disagreements first, capped at the cell."""

from __future__ import annotations

from collections import Counter

from label_data import TARGETS, conversation, score

from pressurebench.labels.sampling import draw, panel_disagrees


def rows(targets=TARGETS, metrics=("m01", "m02"), n=10, n_disagree=3, errors=2):
    out = []
    for t in targets:
        for m in metrics:
            for i in range(n + errors):
                conv = conversation(t, m, i)
                out.append(score(conv, i % 2 == 0, i < n_disagree, "error" if i >= n else "ok"))
    return out


def keys(drawn):
    return [(d.score.conv_id, d.score.metric_id) for d in drawn]


def test_each_cell_gets_its_share_of_ok_rows():
    drawn = draw(rows(), per_cell=4, disagreement_share=0.0, seed=1)
    cells = Counter((d.score.target, d.score.metric_id) for d in drawn)
    assert cells == {(t, m): 4 for t in TARGETS for m in ("m01", "m02")}
    assert all(d.score.status == "ok" for d in drawn)
    assert len(set(keys(drawn))) == len(drawn)


def test_a_cell_smaller_than_per_cell_is_drawn_whole():
    drawn = draw(rows(n=3, n_disagree=1), per_cell=50, disagreement_share=0.5, seed=1)
    assert Counter((d.score.target, d.score.metric_id) for d in drawn) == {
        (t, m): 3 for t in TARGETS for m in ("m01", "m02")}


def test_the_draw_is_seeded():
    data = rows()
    first = keys(draw(data, per_cell=4, disagreement_share=0.5, seed=7))
    assert keys(draw(list(reversed(data)), per_cell=4, disagreement_share=0.5, seed=7)) == first
    others = {tuple(keys(draw(data, per_cell=4, disagreement_share=0.5, seed=s))) for s in range(8)}
    assert len(others) > 1


def test_a_cell_keeps_its_draw_when_other_cells_change():
    before = [k for k in keys(draw(rows(), per_cell=4, disagreement_share=0.5, seed=3))
              if "target-a" in k[0] and k[1] == "m01"]
    fewer = [s for s in rows() if s.target == "target-a" and s.metric_id == "m01"]
    after = keys(draw(fewer, per_cell=4, disagreement_share=0.5, seed=3))
    assert after == before


def test_disagreements_are_drawn_up_to_their_share():
    data = rows(n=10, n_disagree=3)
    assert sum(panel_disagrees(s) for s in data if s.status == "ok") == 3 * 4
    drawn = draw(data, per_cell=4, disagreement_share=0.5, seed=1)
    for cell in {(d.score.target, d.score.metric_id) for d in drawn}:
        strata = Counter(d.stratum for d in drawn if (d.score.target, d.score.metric_id) == cell)
        assert strata == {"disagreement": 2, "agreement": 2}
    assert all(panel_disagrees(d.score) == (d.stratum == "disagreement") for d in drawn)
    assert {d.stratum_rows for d in drawn if d.stratum == "disagreement"} == {3}
    assert {d.stratum_rows for d in drawn if d.stratum == "agreement"} == {7}

    # Far more disagreements asked for than there are: all of them, the rest agreements.
    drawn = draw(data, per_cell=6, disagreement_share=1.0, seed=1)
    assert Counter(d.stratum for d in drawn) == {"disagreement": 3 * 4, "agreement": 3 * 4}
    # Without disagreements asked for, they come only as often as a uniform draw brings them.
    drawn = draw(data, per_cell=10, disagreement_share=0.0, seed=1)
    assert Counter(d.stratum for d in drawn) == {"disagreement": 3 * 4, "agreement": 7 * 4}


def test_too_few_agreements_are_made_up_with_disagreements():
    data = rows(n=5, n_disagree=4)
    drawn = draw(data, per_cell=4, disagreement_share=0.25, seed=1)
    assert Counter(d.stratum for d in drawn) == {"disagreement": 3 * 4, "agreement": 1 * 4}
