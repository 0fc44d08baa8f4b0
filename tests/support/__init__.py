"""Code the tests share: plain helpers (classes, functions, constants), never pytest fixtures.

What lives here:
- running the commands as a user does (`commands`), each command's options class (`command_configs`),
  and the counted, bounded in-test retries (`retries`);
- a clock a test moves by hand (`clocks`), virtual rig files (`rig_files`), made-up observations and
  ticks (`observations`) and how the followers were left (`follower_checks`);
- so101-record's end-to-end runs (`record_runs`) and the session's writer double (`session_doubles`);
- the replay tests' recording and runs (`recordings`, `replays`), ways to read and damage a
  dataset's files (`dataset_files`);
- the tiny policy checkpoints and made-up policy inputs (`checkpoints`, `policy_inputs`), and the
  review tests' judged store, app server and browser pages (`judged_store`, `review_server`,
  `review_pages`).

Fixtures stay in the conftest.py files, which import what they need from here; a test imports a
shared helper from here too, never from a conftest.py or another test module
(tests/test_support_imports.py checks it). Each module holds one concept and imports only product
code, the standard and third-party libraries, and other modules of this package.
"""
