"""Lets `import llmsim` work from the root of a source tree: the package is
python/llmsim (an installed llmsim puts it in site-packages instead)."""
import os as _os

_init = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "python",
                      "llmsim", "__init__.py")
with open(_init, encoding="utf-8") as _f:
    exec(compile(_f.read(), _init, "exec"))  # noqa: S102 - the package itself
