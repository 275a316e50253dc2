"""Tertius Media Resource Files ("TDPMedia"): container, resources, converter and summary.

The spec leaves some questions open; the project's answers are numbered
decisions (see the README), cited in the code where each is applied.
"""
