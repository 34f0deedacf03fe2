#!/usr/bin/env bash
# Installs the C library and headers under PREFIX (default /usr/local):
#   PREFIX/lib/libamber.so.0.1.0 (SONAME libamber.so.0, exporting only the
#   amber_ functions: scripts/libamber.map) and the links
#   libamber.so.0 and libamber.so; PREFIX/include/amber*.h;
#   PREFIX/lib/pkgconfig/amber.pc, so `cc app.c $(pkg-config --cflags --libs amber)`
#   works once PKG_CONFIG_PATH includes PREFIX/lib/pkgconfig.
# The library finds the Swift runtime through its RUNPATH (the toolchain it
# was built with). Builds in .build-install, apart from the everyday build.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-/usr/local}
version=$(sed -nE 's/^public let version = "([0-9.]+)"/\1/p' Sources/AmberValues/Version.swift)
export AMBER_SONAME=1
swift build -c release --product AmberC --scratch-path .build-install >&2
lib="$(swift build -c release --scratch-path .build-install --show-bin-path)/libAmberC.so"
readelf -d "$lib" | grep -q 'SONAME.*libamber\.so\.0' || { echo "install: $lib has no SONAME libamber.so.0" >&2; exit 1; }

mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
install -m 0755 "$lib" "$prefix/lib/libamber.so.$version"
ln -sf "libamber.so.$version" "$prefix/lib/libamber.so.0"
ln -sf libamber.so.0 "$prefix/lib/libamber.so"
for header in include/amber*.h; do install -m 0644 "$header" "$prefix/include/"; done
cat > "$prefix/lib/pkgconfig/amber.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: amber
Description: Amber, an object store with typed, checked value transformers over SQLite (C API)
Version: $version
Libs: -L\${libdir} -lamber -Wl,-rpath,\${libdir}
Cflags: -I\${includedir}
PC
echo "installed Amber $version in $prefix" >&2
