"""Prints where under the prefix (argv[1]) to install the dtrun module so that this Python finds
it without PYTHONPATH: the first site-packages or dist-packages folder of its default sys.path
under the prefix (for ~/.local, the user site), else lib/python3.X/site-packages."""
import os
import site
import sys

prefix = os.path.realpath(sys.argv[1])
paths = list(sys.path)
if prefix == os.path.realpath(site.getuserbase()):
    paths.insert(0, site.getusersitepackages())
found = [p for p in paths if os.path.basename(p) in ("site-packages", "dist-packages")
         and os.path.relpath(os.path.realpath(p), prefix).split(os.sep)[0] == "lib"]
print(os.path.relpath(os.path.realpath(found[0]), prefix) if found else "lib/python%d.%d/site-packages" % sys.version_info[:2])
