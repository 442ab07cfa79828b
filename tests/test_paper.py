"""The paper's numbers, as published (the reviews in seeds/ quote them), and the helpers that print them."""

from __future__ import annotations

import pytest

from wmrl.experiments import paper


def test_the_paper_module_holds_tables_1_2_and_3_as_published():
    t1 = paper.TABLE1.set_index(["arm", "model"])
    assert t1.loc[("wmrl", "4B"), "mle_dojo_avg"] == 16.4 and t1.loc[("grpo", "9B"), "gpu_hours"] == 1174
    assert paper.TABLE3.arm.tolist() == list(paper.ABLATION_ARMS)
    assert paper.TABLE3.set_index("arm").loc["od", "4B_mle"] == 15.7
    assert paper.TABLE2.set_index("arm").overall.to_dict() == {"sft": 37.4, "grpo": 38.3, "wm": 39.2, "wmrl": 41.2}
    c7 = paper.CATEGORY_REGRESSIONS
    assert (c7.wmrl - c7.grpo).round(1).tolist() == [-0.5, -1.2]  # Table 1's two red arrows
    with pytest.raises(ValueError, match="4B and 9B"):
        paper.gpu_hours("70B")


def test_the_helpers_print_the_papers_comparisons():
    assert paper.speedup("4B") == pytest.approx(883 / 286) and paper.speedup("9B", "wm") == pytest.approx(1174 / 330)
    assert paper.versus("wmrl", "grpo") == "16.4 vs 15.2 (4B), 21.6 vs 18.8 (9B) MLE-Dojo"
    assert paper.ablation_versus("wmrl", "od").endswith("+0.7 / +0.7 / +2.2 / +1.1 (4B MLE / DS, 9B MLE / DS)")
    assert paper.table3_with_grpo().set_index("arm").loc["grpo", "4B_ds"] == 25.7
