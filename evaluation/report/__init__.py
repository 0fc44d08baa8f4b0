"""so101-report: policy comparison statistics, plots and pages."""
