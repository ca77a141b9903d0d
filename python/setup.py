"""setup.py - bundles libmgc.so and the stdlib into the package at build time.

libmgc.so comes from $MGC_BUILD_DIR, else the repository's build/ (built with
cmake there when it is missing); the stdlib from the repository ($MGC_SOURCE_DIR,
else the parent of this directory). See docs/python.md.
"""
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _source_dir():
    return Path(os.environ.get("MGC_SOURCE_DIR") or HERE.parent)


def _library():
    build = os.environ.get("MGC_BUILD_DIR")
    src = _source_dir()
    build = Path(build) if build else src / "build"
    lib = build / "libmgc.so"
    if not lib.exists():
        if not (src / "CMakeLists.txt").exists():
            raise SystemExit(f"mgc: no {lib} and no mgc source tree at {src}: set MGC_BUILD_DIR or MGC_SOURCE_DIR")
        subprocess.check_call(["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"])
        subprocess.check_call(["cmake", "--build", str(build), "--target", "mgc_shared", "-j", str(os.cpu_count() or 1)])
    return lib.resolve()


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "mgc"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_library(), target / "libmgc.so")
        stdlib = target / "stdlib"
        stdlib.mkdir(exist_ok=True)
        for f in (_source_dir() / "stdlib").glob("*.mg"):
            shutil.copyfile(f, stdlib / f.name)


class BinaryDistribution(Distribution):
    """The wheel holds libmgc.so: a platform wheel, not a pure-Python one."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
