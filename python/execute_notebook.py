"""Execute notebooks top to bottom with nbclient; exit 1 if any cell fails.

    python3 python/execute_notebook.py examples/notebooks/tour.ipynb [-o executed.ipynb]

Each notebook runs in its own directory with the python3 kernel (Debian's
python3-nbclient, python3-ipykernel). The notebook file is never changed: the
executed copy is written only with -o (for one notebook).
"""

import argparse
import pathlib
import sys
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def execute(path, timeout):
    """Executes the notebook at path and returns it with its outputs."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    return nb


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=pathlib.Path)
    parser.add_argument("-o", "--output", type=pathlib.Path,
                        help="write the executed notebook here (one notebook only)")
    parser.add_argument("--timeout", type=int, default=300,
                        help="seconds a cell may run (default 300)")
    args = parser.parse_args()
    if args.output and len(args.notebooks) != 1:
        parser.error("-o takes one notebook")
    failed = 0
    for path in args.notebooks:
        start = time.monotonic()
        try:
            nb = execute(path.resolve(), args.timeout)
        except CellExecutionError as err:
            print(f"{path}: FAILED\n{err}", file=sys.stderr)
            failed += 1
            continue
        print(f"{path}: executed in {time.monotonic() - start:.1f} s")
        if args.output:
            nbformat.write(nb, args.output)
    print(f"notebooks: {len(args.notebooks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
