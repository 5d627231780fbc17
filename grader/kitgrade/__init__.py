"""Grading runner of the CUDA lab kit: runs the lab GoogleTest binaries and writes reports.

Modules: manifest (grader/labs.json), protocol (talking to a lab binary), runner (scoring
rules), model (results), reports (terminal, JUnit, Gradescope, Markdown), build (CMake),
cli (the kit.py command line).
"""
