"""``experiments`` study table script: its config and its report."""




def test_study_table_script_config_and_report(experiment):
    # the config expands to the 36 published cells; the report joins ours and published
    from pathlib import Path

    import pandas as pd

    from simcollective.sweeps import expand_grid

    root = Path(__file__).resolve().parents[2]
    st = experiment("study_table")
    pts = expand_grid(root / "experiments" / "configs" / "study_table.toml")
    assert len(pts) == 36 and all(p["study"] is True and p["profile"] == "smpi" for p in pts)
    cells = {(p["topology"], p["gpus"], p["elements"]) for p in pts}
    assert cells == set(st.PUBLISHED)
    # a fake result: every cell 10 % above published except one algorithm made fastest
    rows = []
    for (topo, gpus, n), pub in st.PUBLISHED.items():
        for algo, p in zip(st.ALGORITHMS, pub):
            t = 1e-5 if (topo == "dgx2" and algo == "ring") else p * 1.1e-3
            rows.append({"ok": True, "topology": topo, "gpus": gpus, "elements": n, "algorithm": algo,
                         "time_s": t})
    cmp = st.compare(pd.DataFrame(rows))
    assert len(cmp) == 36
    assert cmp[cmp.algorithm == "ring-ring"]["error_pct"].round(6).eq(10.0).all()
    md = st.markdown(cmp)
    assert "same fastest algorithm in 5 of 6 rows" in md
    assert "ring / sparse-ring-ring (DIFFERENT)" in md
