"""so101-report: policy comparison statistics, plots and pages.

Flow (one file per step):

    config.PolicySpec --load--> scores.PolicyScores --summary/comparison--> model.Report
        --plots--> PNG bytes --html_page / markdown / output--> report.html, report.md, report.json, plots/

`stats` (t, BCa, Wilson, Welch), `permutation` (exact or Monte Carlo test, Holm) and `agreement`
(weighted kappa, MAE, bias) work on plain numbers; `tables` formats every figure once for all outputs.
"""
