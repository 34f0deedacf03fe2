"""Build hook: copies include/amber.h into the package (cffi reads the
declarations from it at import) and bundles the C library as
amber/lib/libamber.so.0, with the sample plugins written in C in
amber/plugins, so `import amber` needs no environment variable.

The library bundled is, in order: AMBER_BUNDLE_LIBRARY (a built
libamber.so.0; its plugins are then not bundled); else, when this folder sits
in Amber's source tree and `swift` is on PATH, the one scripts/install.sh
builds (self-contained: the Swift runtime linked in, so the wheel runs on
machines without Swift); else none (the package then finds the library
through AMBER_LIBRARY or the system's loader path). AMBER_BUILD_LIBRARY=0
skips the build: a pure-Python install that needs AMBER_LIBRARY.

The wheel is tagged py3-none-<platform>: any Python 3, this platform's
system libraries (it is not a manylinux wheel)."""
import glob
import os
import shutil
import subprocess
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools before 70.1
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_TREE = os.path.normpath(os.path.join(HERE, "..", ".."))
HEADER = os.path.join(SOURCE_TREE, "include", "amber.h")


def built_library(prefix):
    """Builds and installs the C library and sample plugins into `prefix`
    with scripts/install.sh; returns (library, plugin paths), or None when
    there is no source tree or no Swift toolchain to build with."""
    script = os.path.join(SOURCE_TREE, "scripts", "install.sh")
    if os.environ.get("AMBER_BUNDLE_LIBRARY") or os.environ.get("AMBER_BUILD_LIBRARY") == "0":
        return None
    if not os.path.exists(script) or not shutil.which("swift"):
        return None
    subprocess.run(["bash", script, prefix], check=True)
    return (os.path.join(prefix, "lib", "libamber.so.0"),
            sorted(glob.glob(os.path.join(prefix, "lib", "amber", "plugins", "*.so"))))


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        package = os.path.join(self.build_lib, "amber")
        os.makedirs(os.path.join(package, "include"), exist_ok=True)
        shutil.copyfile(HEADER, os.path.join(package, "include", "amber.h"))
        with tempfile.TemporaryDirectory() as prefix:
            built = built_library(prefix)
            library, plugins = built if built else (os.environ.get("AMBER_BUNDLE_LIBRARY"), [])
            if library:
                os.makedirs(os.path.join(package, "lib"), exist_ok=True)
                shutil.copyfile(library, os.path.join(package, "lib", "libamber.so.0"))
            if plugins:
                os.makedirs(os.path.join(package, "plugins"), exist_ok=True)
                for plugin in plugins:
                    shutil.copyfile(plugin, os.path.join(package, "plugins", os.path.basename(plugin)))


class PlatformWheel(bdist_wheel):
    """The wheel holds a compiled library, loaded through cffi's ABI mode:
    tied to this platform, not to a Python version."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return ("py3", "none", super().get_tag()[2])


setup(cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": PlatformWheel})
