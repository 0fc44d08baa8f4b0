"""Code the tests share: plain helpers (classes, functions, constants), never pytest fixtures.

What lives here: a clock a test moves by hand (`clocks`), virtual rig files (`rig_files`), the replay
tests' recording (`recordings`) and ways to read and damage a dataset's files (`dataset_files`),
the tiny policy checkpoints and made-up policy inputs (`checkpoints`, `policy_inputs`), and the review
tests' judged store, app server and browser pages (`judged_store`, `review_server`, `review_pages`).

Fixtures stay in the conftest.py files, which import what they need from here; a test imports a
shared helper from here too, not from a conftest.py. Each module holds one concept and imports only
product code and the standard and third-party libraries, never a test module.
"""
