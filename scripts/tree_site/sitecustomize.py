"""Run by Python at start-up when this folder is on PYTHONPATH (tree_env in
scripts/tree_import.py): the tree BOTSVC_BENCH_TREE names is imported from
its own folder in this process and in what it execs (``botsvc serve``
becomes gunicorn), whichever name its code uses."""
import os
import sys

if os.environ.get("BOTSVC_BENCH_TREE"):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        import tree_import
    finally:
        del sys.path[0]
    tree_import.install(os.environ["BOTSVC_BENCH_TREE"])
