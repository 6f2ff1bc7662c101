"""Loaded at interpreter start when ``tests/mutation/hook`` is on ``PYTHONPATH`` (``tests/mutation/mutate.py``
puts it there for each mutant's test run): the module named in ``$TOKENBOX_MUTANT`` is imported from the
mutated source in that file instead of from disk. Child processes inherit the variable, so a test that
runs ``tokenbox`` as a process sees the mutant too. Nothing is written to the source tree.
"""

from __future__ import annotations

import importlib.abc
import json
import os
import sys


def _install(spec_path: str) -> None:
    with open(spec_path, encoding="utf-8") as handle:
        mutant = json.load(handle)
    name, source = mutant["module"], mutant["source"]

    class _Loader(importlib.abc.Loader):
        def __init__(self, origin: str) -> None:
            self.origin = origin

        def create_module(self, spec):  # the default module object
            return None

        def exec_module(self, module) -> None:
            exec(compile(source, self.origin, "exec"), module.__dict__)

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname != name:
                return None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    spec.loader = _Loader(spec.origin)
                    spec.cached = None  # never read or write a .pyc for the mutant
                    return spec
            return None

    sys.meta_path.insert(0, _Finder())


if os.environ.get("TOKENBOX_MUTANT"):
    _install(os.environ["TOKENBOX_MUTANT"])
