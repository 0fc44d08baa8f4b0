"""The command-line shell every `so101-*` command shares: one parser, its help, the exit codes, the error line.

One home for how a command talks: the parse (`parse.py`, with the checks draccus does not make in
`preflight.py`), the help layout (what it does, examples, options by section), "did you mean" for an
unknown option, why a file named on the command line cannot be read, the spellings accepted for one
release, the one table of exit codes and the one error line (`CommandError` is the base of every
layer's errors). Light on purpose, the standard library, draccus and PyYAML only, so that evaluation/
(which imports little else of robot/, tests/support/layering.py) speaks the same language.
"""
