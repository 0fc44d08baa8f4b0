"""The judge pipeline behind `so101-judge`: frames and events, the prompt, the Claude client, verdicts, aggregation.

It reads episodes through the shared core at the `evaluation/` top level (episode source, rubric,
vocabulary, store) and writes its results to the store; the review page and the report read them
from there, so no module outside this package but `evaluation/commands/judge.py` imports it.
"""
