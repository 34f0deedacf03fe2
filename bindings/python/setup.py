"""Build hook: copies include/amber.h into the package (cffi reads the
declarations from it at import), and, when AMBER_BUNDLE_LIBRARY names a
built library, bundles it as amber/lib/libamber.so.0."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join(HERE, "..", "..", "include", "amber.h")


class BuildWithHeader(build_py):
    def run(self):
        super().run()
        package = os.path.join(self.build_lib, "amber")
        os.makedirs(os.path.join(package, "include"), exist_ok=True)
        shutil.copyfile(HEADER, os.path.join(package, "include", "amber.h"))
        library = os.environ.get("AMBER_BUNDLE_LIBRARY")
        if library:
            os.makedirs(os.path.join(package, "lib"), exist_ok=True)
            shutil.copyfile(library, os.path.join(package, "lib", "libamber.so.0"))


setup(cmdclass={"build_py": BuildWithHeader})
