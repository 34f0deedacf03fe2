#!/usr/bin/env bash
# Installs the C library and headers under PREFIX (default /usr/local):
#   PREFIX/lib/libamber.so.0.1.0 (SONAME libamber.so.0, exporting only the
#   amber_ functions: scripts/libamber.map) and the links
#   libamber.so.0 and libamber.so; PREFIX/include/amber*.h;
#   PREFIX/lib/pkgconfig/amber.pc, so `cc app.c $(pkg-config --cflags --libs amber)`
#   works once PKG_CONFIG_PATH includes PREFIX/lib/pkgconfig.
#   The sample plugins written in C go to PREFIX/lib/amber/plugins.
#   The library's debug information goes apart, as distributions ship it, to
#   PREFIX/lib/.debug/libamber.so.VERSION.debug (found through the library's
#   debug link by gdb and valgrind), in DWARF 4, which the valgrind of
#   Debian 12 reads; PREFIX/share/amber/valgrind.supp suppresses the Swift
#   runtime's one-time allocations for `valgrind --leak-check=full`.
# The library carries the Swift runtime and Foundation it needs (linked with
# -static-stdlib), so it runs on machines without a Swift toolchain: it
# depends only on system libraries. Do not load it into a process that also
# runs Swift code (two runtimes); Swift programs use `import Amber`.
# Builds in .build-install, apart from the everyday build.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-/usr/local}
version=$(sed -nE 's/^public let version = "([0-9.]+)"/\1/p' Sources/AmberValues/Version.swift)
export AMBER_SONAME=1
export AMBER_DWARF4=1
flags=(-c release --scratch-path .build-install -Xswiftc -static-stdlib)
swift build "${flags[@]}" --product AmberC >&2
bin=$(swift build "${flags[@]}" --show-bin-path)
lib="$bin/libAmberC.so"
readelf -d "$lib" | grep -q 'SONAME.*libamber\.so\.0' || { echo "install: $lib has no SONAME libamber.so.0" >&2; exit 1; }
# The folder of the toolchain's Swift runtime (libswiftCore.so): nothing may load from it.
runtime=$(swift -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["paths"]["runtimeLibraryPaths"][0])')
if ldd "$lib" | grep -F -e "$runtime" -e "not found" >&2; then
    echo "install: $lib loads libraries from the Swift runtime's folder ($runtime), or misses some (above)" >&2
    exit 1
fi

mkdir -p "$prefix/lib/pkgconfig" "$prefix/include" "$prefix/lib/amber/plugins" "$prefix/lib/.debug" "$prefix/share/amber"
debug="$prefix/lib/.debug/libamber.so.$version.debug"
objcopy --only-keep-debug "$lib" "$debug"
chmod 0644 "$debug"
objcopy --strip-unneeded --add-gnu-debuglink="$debug" "$lib" "$prefix/lib/libamber.so.$version"
chmod 0755 "$prefix/lib/libamber.so.$version"
install -m 0644 scripts/valgrind.supp "$prefix/share/amber/valgrind.supp"
ln -sf "libamber.so.$version" "$prefix/lib/libamber.so.0"
ln -sf libamber.so.0 "$prefix/lib/libamber.so"
for header in include/amber*.h; do install -m 0644 "$header" "$prefix/include/"; done
# The C plugins are built by the C compiler alone: SwiftPM would link the Swift runtime into them.
plugins=(Color:color: Rect:rect: Deflate:deflate:-lz AESGCM:aesgcm:-lcrypto)
for plugin in "${plugins[@]}"; do
    IFS=: read -r name file library <<< "$plugin"
    cc -O2 -fPIC -shared -Iinclude "Sources/Plugins/$name/$file.c" $library \
        -o "$prefix/lib/amber/plugins/libAmber${name}Plugin.so"
done
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
