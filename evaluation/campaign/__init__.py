"""Blind, balanced evaluation campaigns: several checkpoints on one rig, in a seeded ABBA-like order.

so101-campaign runs so101-deploy once per block as a child process (as a person would), reads the
operator's live scores after each block and applies an optional stopping rule; the label -> checkpoint
mapping stays in campaign.json until so101-report reveals it. Like the rest of evaluation/, it imports
nothing of robot/, teleop/ or policies/ beyond the shared modules (tests/support/layering.py).
"""
