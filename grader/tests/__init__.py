"""Unit tests of the grading runner (kitgrade).

Run from the repository root:

    python3 -m unittest discover -s grader/tests -t grader
"""
