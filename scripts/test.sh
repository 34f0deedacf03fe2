#!/usr/bin/env bash
# Runs every test suite: Swift (swift test); C (programs built against
# include/amber.h and linked to the shared library, also under valgrind);
# the check that the release library exports exactly the functions the
# header declares; the install and the README's C example; the CLI; Python
# (pytest, against the pip-installed bindings). The PostgreSQL tests run
# against a throwaway server it starts (scripts/postgres.sh) and stops when
# it ends, also on failure. Installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# DWARF 4 for the C target in libamber, as Swift writes: valgrind (the C tests
# below) cannot read a library that mixes it with clang's default DWARF 5.
export AMBER_DWARF4=1

step "System packages"
bash scripts/install-deps.sh

# What the run leaves behind goes when it ends, on failure too: a throwaway
# PostgreSQL cluster (the PostgreSQL tests' server), temporary folders.
cleanups=()
cleanup() { for command in "${cleanups[@]}"; do eval "$command" || true; done; }
trap cleanup EXIT

step "A throwaway PostgreSQL server for the PostgreSQL tests"
postgres_dir=$(mktemp -d /tmp/amber-postgres.XXXXXX)
cleanups+=("bash scripts/postgres.sh stop '$postgres_dir'")
AMBER_TEST_POSTGRES=$(bash scripts/postgres.sh start "$postgres_dir")
export AMBER_TEST_POSTGRES
echo "server: $AMBER_TEST_POSTGRES"

step "Swift build and tests"
swift build
swift test 2>&1 | tee .build/swift-test.log
swift_passed=$(sed -nE 's/.*Test run with ([0-9]+) tests? in .* passed.*/\1/p' .build/swift-test.log | tail -1)
[ -n "$swift_passed" ] || { echo "swift test did not report a passing run"; exit 1; }
grep -q "Suite PostgreSQLTests passed" .build/swift-test.log || { echo "the PostgreSQL tests did not run against the server"; exit 1; }
echo "-- the server crashing during a save, alone (it cuts every connection to the server)"
AMBER_TEST_POSTGRES_DIR="$postgres_dir" swift test --skip-build --filter PostgreSQLCrashTests 2>&1 | tee .build/swift-crash.log
grep -q "Suite PostgreSQLCrashTests passed" .build/swift-crash.log || { echo "the crash test did not pass"; exit 1; }

step "Generated classes: each real model's Swift, Python and C compile, and generating twice gives the same text"
bin=$(swift build --show-bin-path)
generated=$(mktemp -d)
# Outside SwiftPM, `import Amber` needs the C modules' maps that SwiftPM passes itself.
modulemaps=(-I "$bin/Modules" -Xcc -ISources/AmberPluginABI/include -Xcc "-fmodule-map-file=$bin/AmberPluginABI.build/module.modulemap")
for system in CFFI CSQLite CLibPQ CZlib; do modulemaps+=(-Xcc "-fmodule-map-file=Sources/$system/module.modulemap"); done
for model in ../shared/models/*.xml ../shared/coredata/*/*.xcdatamodeld Tests/AmberTypedTests/*.amber.json; do
    name=$(basename "$model"); name=${name%%.*}
    "$bin/amber-generate" swift "$model" -o "$generated/$name.swift"
    "$bin/amber-generate" swift "$model" > "$generated/again.swift"
    cmp -s "$generated/$name.swift" "$generated/again.swift" || { echo "$model: generating twice gave different text"; exit 1; }
    swiftc -typecheck "${modulemaps[@]}" "$generated/$name.swift" || { echo "$model: the generated Swift does not compile"; exit 1; }
    "$bin/amber-generate" python "$model" -o "$generated/$name.py"
    python3 -m py_compile "$generated/$name.py" || { echo "$model: the generated Python does not compile"; exit 1; }
    if "$bin/amber-generate" c "$model" -o "$generated/model.h" --prefix model 2> "$generated/c.err"; then
        printf '#include <model.h>\nint main(void) { return 0; }\n' > "$generated/header.c"
        cc -std=c11 -Wall -Wextra -Werror -pedantic -Iinclude -I"$generated" -c "$generated/header.c" -o "$generated/header.o" \
            || { echo "$model: the generated C header does not compile"; exit 1; }
    else
        # Only a model whose names give one C name twice is refused, naming the element.
        grep -q "is also" "$generated/c.err" || { cat "$generated/c.err"; exit 1; }
    fi
    echo "$name: $(grep -c '^open class' "$generated/$name.swift") classes compile (Swift, Python$([ -s "$generated/c.err" ] && echo "; C refused: $(cat "$generated/c.err")" || echo ", C"))"
done
rm -rf "$generated"

step "The AmberGenerate plugin in a package of its own (Tests/PluginPackage): its classes work, and editing a model regenerates them"
# A copy beside a link named `amber` (a path dependency is known by its folder's name, as `package: "Amber"` expects).
plugin_work=$(mktemp -d)
cleanups+=("rm -rf '$plugin_work'")
ln -s "$PWD" "$plugin_work/amber"
cp -R Tests/PluginPackage "$plugin_work/shelf"
mkdir "$plugin_work/stores"
# Its own build of Amber and its dependencies (a second debug build, about a minute and a half).
(cd "$plugin_work/shelf" && swift build 2>&1 | tee build.log && ! grep -q "unhandled" build.log)
(cd "$plugin_work/shelf" && swift run --skip-build Shelf "$plugin_work/stores") > "$plugin_work/output.txt" \
    || { cat "$plugin_work/output.txt"; echo "the package's program failed"; exit 1; }
diff Tests/PluginPackage/expected-output.txt "$plugin_work/output.txt" || { echo "the package's output differs from what it should be"; exit 1; }
# A new attribute in each model file, and code that uses it: the next build must regenerate both classes to compile.
sed -i 's|{"name": "label", "type": "string", "optional": false}|&, {"name": "room", "type": "string"}|' "$plugin_work/shelf/Sources/Shelf/Shelf.amber.json"
sed -i 's|<attribute name="name" attributeType="String"/>|&<attribute name="serves" optional="YES" attributeType="Integer 16" usesScalarValueType="YES"/>|' \
    "$plugin_work/shelf/Sources/Shelf/Recipes.xcdatamodeld/Recipes.xcdatamodel/contents"
printf 'import Amber\nfunc place(_ shelf: Shelf, _ recipe: Recipe) throws { try shelf.set(room: "Kitchen"); try recipe.set(serves: 4) }\n' \
    > "$plugin_work/shelf/Sources/Shelf/Edited.swift"
(cd "$plugin_work/shelf" && swift build > rebuild.log 2>&1) || { cat "$plugin_work/shelf/rebuild.log"; echo "an edited model did not regenerate its classes"; exit 1; }

step "Swift API documentation: DocC builds the reference of every module Amber exports, and the articles"
docs=$(mktemp -d)
bash scripts/docs.sh "$docs" > .build/docc.log 2>&1 || { tail -30 .build/docc.log; exit 1; }
if grep "warning:" .build/docc.log; then echo "building the documentation warned (above): a link that does not resolve?"; exit 1; fi
for page in amber/models amber/contexts amber/transformers amber/plugins amber/context amberstore/store amberstore/storeurl \
    ambermodel/model ambervalues/value ambertransformers/registry; do [ -d "$docs/documentation/$page" ]; done
echo "DocC: $(find "$docs/documentation" -name index.html | wc -l) pages"
rm -rf "$docs"

step "Swift tests under AddressSanitizer"
ASAN_OPTIONS=detect_leaks=0 swift test --sanitize=address --scratch-path .build-asan 2>&1 | tee .build/swift-asan.log \
    | grep -E "Test run with|ERROR: AddressSanitizer" || true
grep -q "Test run with .* passed" .build/swift-asan.log

step "C API tests"
bin=$(swift build --show-bin-path)
lib=AmberC
work=$(mktemp -d)
cleanups+=("rm -rf '$work'")
# The header alone must compile as strict C11 and as C++.
printf '#include <amber.h>\nint main(void) { return 0; }\n' > "$work/header.c"
cc -std=c11 -Wall -Wextra -Werror -pedantic -Iinclude -c "$work/header.c" -o "$work/header.o"
c++ -x c++ -std=c++17 -Wall -Wextra -Werror -pedantic -Iinclude -c "$work/header.c" -o "$work/header-cxx.o"
c_passed=0
run_c() {  # name, command...: runs one C test program and adds up its checks
    local name=$1; shift
    "$@" "$work/$name.amber" | tee "$work/$name.log"
    c_passed=$((c_passed + $(sed -nE 's/^([0-9]+) passed, 0 failed$/\1/p' "$work/$name.log")))
}
export AMBER_PLUGIN_DIR="$bin"  # the sample plugins `swift build` made
# typed_test.c includes the accessors `amber generate c` writes.
"$bin/amber-generate" c Tests/AmberTypedTests/Library.amber.json -o "$work/generated/library.h"
for test in Tests/CAPITests/*.c; do
    name=$(basename "$test" .c)
    cc -std=c11 -Wall -Wextra -Werror -pedantic -pthread -Iinclude -I"$work/generated" "$test" -o "$work/$name" \
        -L"$bin" -l"$lib" -lsqlite3 -Wl,-rpath,"$bin"
    echo "-- $name"
    run_c "$name" "$work/$name"
    echo "-- $name under valgrind (any invalid read or write, or memory definitely lost, fails the suite)"
    # --fair-sched: valgrind runs one thread at a time, and without it a spinning thread can keep the
    # other waiting for minutes (misuse_test's hammer took 4 to 17 minutes).
    run_c "$name-valgrind" valgrind -q --fair-sched=yes --suppressions=scripts/valgrind.supp --error-exitcode=99 \
        --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite "$work/$name"
done

# The store-behaviour programs again on the other kind of store (AMBER_TEST_STORE names it by URL).
rm -f "$work/batch-suite.amber" "$work/kinds-suite.amber"
echo "-- batch_test on a file store, and on the PostgreSQL server (a schema of its own)"
AMBER_TEST_STORE="file://$work/batch-suite.amber" run_c batch_test-file "$work/batch_test"
AMBER_TEST_STORE="$AMBER_TEST_POSTGRES?schema=c_batch" run_c batch_test-postgresql "$work/batch_test"
echo "-- store_kinds_test on a file store, and on the PostgreSQL server (a schema of its own)"
AMBER_TEST_STORE="file://$work/kinds-suite.amber" run_c store_kinds_test-file "$work/store_kinds_test"
AMBER_TEST_STORE="$AMBER_TEST_POSTGRES?schema=c_kinds" run_c store_kinds_test-postgresql "$work/store_kinds_test"

step "Exported symbols match include/amber.h"
bash scripts/check-exports.sh

step "Install, then build the README's C example with pkg-config"
bash scripts/install.sh "$work/prefix"
sed -n '/<!-- c-example -->/,/<!-- end c-example -->/p' README.md | sed '1,2d;$d' | sed '$d' > "$work/app.c"
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" cc -std=c11 -Wall -Wextra -Werror -o "$work/app" "$work/app.c" \
    $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs amber)
"$work/app" | tee "$work/app.log"
grep -q "L'Étranger" "$work/app.log"
readelf -d "$work/app" | grep -q 'NEEDED.*libamber\.so\.0'
# Self-contained: nothing the library or the program loads comes from the Swift toolchain,
# no RUNPATH points into it, and the example runs with an empty environment.
# The folder of the toolchain's Swift runtime (libswiftCore.so and Foundation).
runtime=$(swift -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["paths"]["runtimeLibraryPaths"][0])')
# Fails unless every file exists and loads nothing from the runtime's folder and misses nothing.
self_contained() {
    local file
    for file in "$@"; do
        [ -f "$file" ] || { echo "$file is missing"; return 1; }
        if ldd "$file" | grep -F -e "$runtime" -e "not found"; then echo "$file needs the toolchain (above)"; return 1; fi
        if readelf -d "$file" | grep -E 'R(UN)?PATH' | grep -F "$runtime"; then echo "$file's RUNPATH points into the toolchain"; return 1; fi
    done
}
self_contained "$work/prefix/lib/libamber.so.0" "$work/app" "$work"/prefix/lib/amber/plugins/libAmber{Color,Rect,Deflate,AESGCM}Plugin.so
# Runs a command with the runtime's folder hidden (an empty tmpfs mounted over it) where
# mount namespaces are allowed; elsewhere as is, and the ldd checks above stand alone.
without_toolchain() {
    if unshare -m true 2>/dev/null; then
        unshare -m sh -c 'mount -t tmpfs none "$0" && exec "$@"' "$runtime" "$@"
    else
        echo "(mount namespaces are not allowed here: running with the toolchain in place)" >&2
        "$@"
    fi
}
without_toolchain env -i "$work/app" | grep -q "L'Étranger"
echo "libamber.so.0 needs: $(ldd "$work/prefix/lib/libamber.so.0" | awk '{print $1}' | tr '\n' ' ')"
# The valgrind a C user has (Debian 12's) reads the installed library's debug information (apart, in DWARF 4), and
# with the installed suppressions (the Swift runtime's one-time caches) the example is clean under --leak-check=full.
if ! valgrind -q --suppressions="$work/prefix/share/amber/valgrind.supp" --leak-check=full --error-exitcode=99 "$work/app" \
        > "$work/app-valgrind.log" 2>&1 || grep -q -e "unhandled dwarf2" -e "Serious error when reading debug info" "$work/app-valgrind.log"; then
    cat "$work/app-valgrind.log"; echo "valgrind: the README's C example is not clean, or the installed debug information unreadable"; exit 1
fi
echo "libamber.so.0: $(du -mL "$work/prefix/lib/libamber.so.0" | cut -f1) MB, its debug information $(du -m "$work"/prefix/lib/.debug/*.debug | cut -f1) MB apart"
# docs/c-guide.md's transformer example, built against the installed library, prints what the guide says.
sed -n '/<!-- c-guide-example -->/,/<!-- end c-guide-example -->/p' docs/c-guide.md | sed '1,2d;$d' | sed '$d' > "$work/guide.c"
awk '/<!-- c-guide-output -->/ { f = 1; next } f == 1 && /^```/ { f = 2; next } f == 2 && /^```/ { exit } f == 2' \
    docs/c-guide.md > "$work/guide.expected"
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" cc -std=c11 -Wall -Wextra -Werror -pedantic -o "$work/guide" "$work/guide.c" \
    $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs amber)
without_toolchain env -i "$work/guide" > "$work/guide.out"
diff "$work/guide.expected" "$work/guide.out"
c_passed=$((c_passed + 1))

step "CLI"
cli_checks=0
cli() { "$bin/amber" "$@"; }
expect() {  # description, then a command whose output must contain the description's last word
    local want=$1; shift
    local output
    output=$("$@" 2>&1) || true
    if ! grep -qF -- "$want" <<< "$output"; then echo "CLI: expected \"$want\" from: $*"; echo "$output"; exit 1; fi
    cli_checks=$((cli_checks + 1))
}
expect "Inserted 12 sample books" cli demo --store "$work/books.amber"
expect "notes (stored compressed, then sealed with AES-256-GCM)" cli demo --store "$work/books.amber"
# The two-context part toggles an import each run: a third run adds a book, a fourth removes it again.
expect "a fetch finds Ficciones" cli demo --store "$work/books.amber"
expect "price: read 10.50, stored 9.90, here 10.50; rating: read 4.5, stored 4.5, here 4.2" cli demo --store "$work/books.amber"
# The reader's live query by publish month follows the import through its merge.
expect "Ficciones joined June 1944, row 1" cli demo --store "$work/books.amber"
expect "section June 1944 removed" cli demo --store "$work/books.amber"
# The title search runs on a derived attribute the store computes at save; the demo fetches through the
# model's template too (two runs: the import toggles back).
expect "searched in canonicalTitle, derived as canonical:(title)): 1" cli demo --store "$work/books.amber"
expect "— published May 1942 (publishMonth, computed from published)" cli demo --store "$work/books.amber"
# Books are extensible: the sample shelves each book under an extended key the model does not name
# (two runs, one with the import's book and one without: neither changes the shelf).
shelf_line="Books on shelf M (shelf is an extended attribute: a key the model does not name, set at run time and searched like any other): 2"
expect "$shelf_line" cli demo --store "$work/books.amber"
expect "$shelf_line" cli demo --store "$work/books.amber"
expect "entity Book (extensible)" cli schema "$work/books.amber"
# STORE is named as in every language: a path or a file: URL; memory: and unknown schemes are refused, naming the part.
expect "(2 objects)" cli query "file://$work/books.amber" Book --where "shelf == 'M'"
expect "scheme memory: an in-memory store starts empty" cli query memory: Book
expect "scheme mysql: no store for it in this build" cli check "mysql://localhost/books"
expect "the schema nothing_here holds no tables" cli check "$AMBER_TEST_POSTGRES?schema=nothing_here"
expect "  extended keys: shelf (12)" cli schema "$work/books.amber"
expect "(2 objects)" cli query "$work/books.amber" Book --where "shelf == 'M'"
expect "shelf=W" cli query "$work/books.amber" Book --where "shelf BEGINSWITH 'W' AND pages > 300"
expect '"shelf" : "C"' cli query "$work/books.amber" Book --where "title == \"L'Étranger\"" --json
expect "Book.Title: expected an extended attribute name that no modelled attribute or relationship uses" \
    cli query "$work/books.amber" Book --where "Title == 'x'"
expect "Author.nickname: no such attribute" cli query "$work/books.amber" Author --where "nickname == 'x'"
expect "canonicalTitle: string, optional, derived canonical:(title), indexed" cli schema "$work/books.amber"
expect "publishMonth: string, optional, transient, computed by publishMonth from published" cli schema "$work/books.amber"
expect "(1 object)" cli query "$work/books.amber" Book --where "canonicalTitle ==[cd] \"L'ÉTRANGER\""
# A fetch request template kept in the model, run by the demo and by amber query with its variable.
expect "template booksByAuthor: Book where author.name == \$AUTHOR, sorted by published" cli schema "$work/books.amber"
expect "(1 object)" cli query "$work/books.amber" --template booksByAuthor --var "AUTHOR=Albert Camus"
expect "(0 objects)" cli query "$work/books.amber" Book --template booksByAuthor --var "AUTHOR='42'"
expect "template booksByAuthor: not a variable of \"author.name == \$AUTHOR\" (it has \$AUTHOR); did you mean \$AUTHOR?" \
    cli query "$work/books.amber" --template booksByAuthor --var "AUTOR=x"
expect "template booksByAuthor: no value given for the variable at position 16" cli query "$work/books.amber" --template booksByAuthor
expect "coverColor: transformable, optional, class Color, via ColorToData" cli schema "$work/books.amber"
expect "author: to-one Author, inverse books, required, delete rule nullify" cli schema "$work/books.amber"
expect "books: to-many Book, inverse author, delete rule cascade" cli schema "$work/books.amber"
# Xcode models (../shared/models beside the repository): import, check, schema of a model file, errors.
models="$(cd .. && pwd)/shared/models"
demo_model="$models/ralfebert__SynchronizingALocalStoreToTheCloud__CoreDataCloudKitDemo.xml"
expect "wrote $work/demo.json: 4 entities, 0 templates, 3 notes" cli model import "$demo_model" -o "$work/demo.json"
expect "note: Tag.color: no value transformer named: values are stored through Amber's archive" cli model import "$demo_model" -o "$work/demo.json"
expect '"derived": "posts.@count"' cli model import "$demo_model"
expect "ok: 4 entities, 0 templates" cli model check "$work/demo.json"
expect "ok: 9 entities, 5 templates" cli model check "$models/rentzsch__mogenerator__test.xml"
expect "template byParentName: Child where parent.parentName == \$parentName" cli schema "$models/rentzsch__mogenerator__test.xml"
expect "children: to-many BookmarkItemManagedObject, inverse parent, ordered, required, delete rule cascade" \
    cli schema "$models/duckduckgo__iOS__BookmarksAndFolders.xml"
expect "postCount: integer64, optional, derived posts.@count" cli schema "$work/demo.json"
printf '<model>\n  <entity name="Tag">\n    <attribute name="tint" attributeType="Transformable"' > "$work/truncated.xml"
expect "truncated.xml:3: <attribute name=\"tint\">: malformed XML" cli model import "$work/truncated.xml"
printf '<model><entity name="Tag"><attribute name="tint" optional="YES" attributeType="Transformable" valueTransformerName="ColorToDta"/></entity></model>' \
    > "$work/misspelled.xml"
expect "problem: Tag.tint: ColorToDta: no such transformer; did you mean ColorToData?" cli model check "$work/misspelled.xml"
if cli model check "$work/misspelled.xml" > /dev/null 2>&1; then echo "CLI: amber model check should fail on a model that does not bind"; exit 1; fi
printf '%s' '<model><entity name="Author"><attribute name="name" optional="YES" attributeType="String"/><relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="author" inverseEntity="Book"/><fetchedProperty name="longBooks" optional="YES"><fetchRequest name="fetchedPropertyFetchRequest" entity="Book" predicateString="author == $FETCH_SOURCE AND pages &gt; 300"/></fetchedProperty></entity><entity name="Book"><attribute name="pages" optional="YES" attributeType="Integer 32"/><relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author" inverseName="books" inverseEntity="Author"/></entity></model>' \
    > "$work/fetched.xml"
expect "  longBooks: fetched Book where author == \$FETCH_SOURCE AND pages > 300" cli schema "$work/fetched.xml"
# A store on a read-only disk (a read-only bind mount: root only) is read and checked there, and nothing is
# made beside it.
mkdir -p "$work/ro-source" "$work/ro"
cp "$work/books.amber" "$work/ro-source/"
if [ "$(id -u)" = 0 ] && mount --bind "$work/ro-source" "$work/ro" 2>/dev/null; then
    cleanups+=("umount '$work/ro' 2>/dev/null")  # on failure only: the block unmounts it itself
    mount -o remount,ro,bind "$work/ro"
    expect "$work/ro/books.amber: ok" cli check "$work/ro/books.amber"
    expect "Cien años de soledad" cli query "$work/ro/books.amber" Book
    expect "cannot write the folder" cli demo --store "$work/ro/new.amber"
    if [ "$(ls "$work/ro/")" != "books.amber" ]; then echo "CLI: reading a read-only store left files beside it: $(ls "$work/ro/")"; exit 1; fi
    umount "$work/ro"
else
    echo "-- not root: no read-only disk to mount; the read-only store checks are skipped"
fi
# Sibling entities declaring one name: both kept, the later one in a column of its own.
printf '%s' '<model><entity name="Attachment" isAbstract="YES"/><entity name="Image" parentEntity="Attachment"><attribute name="width" optional="YES" attributeType="Integer 32"/></entity><entity name="Video" parentEntity="Attachment"><attribute name="width" optional="YES" attributeType="Double"/></entity></model>' \
    > "$work/siblings.xml"
expect "ok: 3 entities, 0 templates" cli model check "$work/siblings.xml"
expect "  width: double, optional, column Video.width" cli schema "$work/siblings.xml"
# Stores Core Data wrote (../shared/coredata beside the repository), copied first: read with the model they were made with.
coredata="$(cd .. && pwd)/shared/coredata"
for file in "$coredata"/CoreDataPlus/SampleModel3_V1.sqlite* "$coredata"/wibosco/CoreDataMigration_Example_1.sqlite; do
    install -m 644 "$file" "$work/"
done
users=("$work/SampleModel3_V1.sqlite" User --model "$coredata/CoreDataPlus/SampleModel3.xcdatamodeld")
expect "(4 objects)" cli query "${users[@]}" --where "petName BEGINSWITH 'Dog_1'"
expect "User_1  Dog_1_3" cli query "${users[@]}" --where "petName BEGINSWITH 'Dog_1'" --sort petName:desc
expect "User.pet: table ZUSER has no column ZPET" cli query "${users[@]}" --model-version SampleModel3_v3
expect "entity User: column ZUSER.ZPETNAME is not in the model" cli query "${users[@]}" --model-version SampleModel3_v3
# A read command never makes a store, with --model too.
expect "nope.sqlite: not an Amber store: no such file" cli query "$work/nope.sqlite" User --model "$coredata/CoreDataPlus/SampleModel3.xcdatamodeld"
if [ -e "$work/nope.sqlite" ]; then echo "CLI: query --model made a store at a mistyped path"; exit 1; fi
cli_checks=$((cli_checks + 1))
# Without --model, a store Core Data wrote is read with the model it keeps of itself (Z_MODELCACHE).
expect "(4 objects)" cli query "$work/SampleModel3_V1.sqlite" User --where "petName BEGINSWITH 'Dog_1'"
install -m 644 "$coredata"/CoreDataPlus/SampleModel2_V1.sqlite* "$work/"
stand_ins=(--transformer CoverTransformer=binary --transformer ContentTransformer=binary)
expect "entity Writer (abstract)" cli schema "$work/SampleModel2_V1.sqlite" "${stand_ins[@]}"
expect "pagesCount: integer64, optional, derived pages.@count" cli schema "$work/SampleModel2_V1.sqlite" "${stand_ins[@]}"
expect "note: a fetched property in a compiled model is not read, at 2 places: Author.favFeedbacks, Author.feedbacks" \
    cli schema "$work/SampleModel2_V1.sqlite" "${stand_ins[@]}"
expect "(4970 objects)" cli query "$work/SampleModel2_V1.sqlite" Page "${stand_ins[@]}"
expect "Book.cover: CoverTransformer: no such transformer" cli query "$work/SampleModel2_V1.sqlite" Page
# Moving over: a Core Data store copied into a new Amber store, which then reads without the stand-ins' store.
expect "copied 5468 objects into $work/imported.amber: Author 2, Book 51, Feedback 444, GraphicNovel 1, Page 4970" \
    cli import-coredata "$work/SampleModel2_V1.sqlite" --to "$work/imported.amber" "${stand_ins[@]}"
expect "$work/imported.amber: ok" cli check "$work/imported.amber"
expect "(99 objects)" cli query "$work/imported.amber" Page --where "book.title == 'title 2 - author 2'" "${stand_ins[@]}"
expect "imported.amber: a file is already there; nothing was written" cli import-coredata "$work/SampleModel2_V1.sqlite" --to "$work/imported.amber" "${stand_ins[@]}"
expect "postID: string, optional" cli schema "$work/CoreDataMigration_Example_1.sqlite" \
    --model "$coredata/wibosco/CoreDataMigration_Example.xcdatamodeld" --model-version CoreDataMigration_Example
expect '"postID" : "5903489F-8A2E-4C74-817B-FA395E2F002D"' cli query "$work/CoreDataMigration_Example_1.sqlite" Post --json \
    --model "$coredata/wibosco/CoreDataMigration_Example.xcdatamodeld" --model-version CoreDataMigration_Example --sort date --limit 1
expect "The Lincoln Highway" cli query "$work/books.amber" Book --where "author.name BEGINSWITH 'A'" --include author
expect "(3 objects)" cli query "$work/books.amber" Book --where "author.name BEGINSWITH 'A'"
expect "(12 objects)" cli query "$work/books.amber" Author --where "books.@count >= 1"
expect '"name" : "Albert Camus"' cli query "$work/books.amber" Book --where "title == \"L'Étranger\"" --json --include author
expect "Author.books is a to-many relationship" cli query "$work/books.amber" Author --where "books.title == 'x'"
# Progress on standard error: lines where it is not a terminal, a bar where it is; never in the data.
expect "  read objects: " cli query "$work/books.amber" Author --json --progress always
cli query "$work/books.amber" Book --json --progress always > "$work/with-progress.json" 2> /dev/null
cli query "$work/books.amber" Book --json > "$work/without-progress.json"
if ! cmp -s "$work/with-progress.json" "$work/without-progress.json" || [ ! -s "$work/with-progress.json" ]; then
    echo "CLI: query --json printed other data with --progress always"; exit 1
fi
cli_checks=$((cli_checks + 1))
if [ -n "$(cli query "$work/books.amber" Book 2>&1 > /dev/null)" ]; then echo "CLI: a quick query printed progress"; exit 1; fi
cli_checks=$((cli_checks + 1))
if script -qec true /dev/null < /dev/null > /dev/null 2>&1; then  # where a pseudo-terminal can be had
    expect "read objects [##############################] 100%" \
        script -qec "$(printf '%q ' "$bin/amber" query "$work/books.amber" Author --progress always) > /dev/null" /dev/null < /dev/null
fi
# Maintenance: check, an online backup (never over a file), vacuum; a damaged copy fails the check with status 2.
expect "$work/books.amber: ok" cli check "$work/books.amber"
expect "backed up $work/books.amber to $work/books-backup.amber" cli backup "$work/books.amber" "$work/books-backup.amber"
expect "books-backup.amber: a file is already there; nothing was written" cli backup "$work/books.amber" "$work/books-backup.amber"
expect '"problems" : [' cli check --json "$work/books-backup.amber"
expect "Albert Camus" cli query "$work/books-backup.amber" Author --where "name BEGINSWITH 'Al'"
expect "vacuumed $work/books-backup.amber" cli vacuum "$work/books-backup.amber"
cp "$work/books-backup.amber" "$work/damaged.amber"
printf 'garbage' | dd of="$work/damaged.amber" bs=1 seek=0 conv=notrunc status=none
expect "1 problem" cli check "$work/damaged.amber"
status=0; cli check "$work/damaged.amber" > /dev/null || status=$?
if [ "$status" != 2 ]; then echo "CLI: amber check on a damaged store should exit 2, not $status"; exit 1; fi
# Migration: a copy of the demo store gains an attribute and a renamed one, dry run first.
cp "$work/books.amber" "$work/migrate.amber"
cli schema --json "$work/books.amber" | python3 -c '
import json, sys
model = json.load(sys.stdin)
book = next(e for e in model["entities"] if e["name"] == "Book")
book["attributes"].append({"name": "edition", "type": "integer32", "default": 1})
for attribute in book["attributes"]:
    if attribute["name"] == "language":
        attribute.update(name="lang", renamingIdentifier="language")
json.dump(model, open(sys.argv[1], "w"))' "$work/migrate.json"
expect "  rename Book.language to Book.lang" cli migrate "$work/migrate.amber" --to "$work/migrate.json" --dry-run
expect "(3 objects)" cli query "$work/migrate.amber" Book --where "language == 'fr'"  # the dry run changed nothing
expect '"migrated" : false' cli migrate "$work/migrate.amber" --to "$work/migrate.json" --dry-run --json
cp "$work/migrate.amber" "$work/migrate-progress.amber"
expect "add Book.edition (default 1)" cli migrate "$work/migrate.amber" --to "$work/migrate.json"
expect "  copy Book: " cli migrate "$work/migrate-progress.amber" --to "$work/migrate.json" --progress always
expect "(3 objects)" cli query "$work/migrate.amber" Book --where "lang == 'fr' AND edition == 1"
expect "already has the model's shape" cli migrate "$work/migrate.amber" --to "$work/migrate.json"
sed 's/"type": "integer32"/"type": "double"/' "$work/migrate.json" > "$work/refused.json"
expect "Book.edition: type integer32 to double: cannot be inferred" cli migrate "$work/migrate.amber" --to "$work/refused.json"
# Removing stored data needs consent: the plan counts it, the migration is refused without --allow-data-removal.
python3 -c '
import json, sys
model = json.load(open(sys.argv[1]))
book = next(e for e in model["entities"] if e["name"] == "Book")
book["attributes"] = [a for a in book["attributes"] if a["name"] != "edition"]
json.dump(model, open(sys.argv[2], "w"))' "$work/migrate.json" "$work/smaller.json"
books=$(cli query "$work/migrate.amber" Book --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
expect "removes stored data: Book.edition: $books values (needs consent: data removal allowed)" \
    cli migrate "$work/migrate.amber" --to "$work/smaller.json" --dry-run
expect "Book.edition: $books values would be removed" cli migrate "$work/migrate.amber" --to "$work/smaller.json"
expect "migrated; the store as it was is in" cli migrate "$work/migrate.amber" --to "$work/smaller.json" --allow-data-removal
expect '"title" : "Der Zauberberg"' cli query "$work/books.amber" Book --where "language == 'de' AND pages > 500" --json
expect "predicate, position 13: expected a value or attribute name, found the end" cli query "$work/books.amber" Book --where "language == "
expect "Bok: no such entity; did you mean Book?" cli query "$work/books.amber" Bok
expect "open class Novel: Book {" cli generate swift Tests/AmberTypedTests/Library.amber.json
expect "class Novel(Book):" cli generate python Tests/AmberTypedTests/Library.amber.json
expect "static inline amber_status book_title(char **out, size_t *length" cli generate c Tests/AmberTypedTests/Library.amber.json
printf '{"entities": [{"name": "A", "attributes": [{"name": "object", "type": "string"}, {"name": "object_", "type": "string"}]}]}' \
    > "$work/clash.json"
expect "A.object_: its Swift member object_ is also object's" cli generate swift "$work/clash.json"
expect "A.object_: its Python name object_ is also object's" cli generate python "$work/clash.json"
expect "Protocol.items: its C name protocol_add_to_items is also Protocol.addToItems's" cli generate c Tests/AmberTypedTests/Awkward.amber.json
expect "transformer ColorToData: Color -> Binary (reversible, thread-safe)" cli plugin inspect "$bin/libAmberColorPlugin.so"
expect '"threadSafe" : true' cli plugin inspect "$bin/libAmberColorPlugin.so" --json
expect '"ok" : true' cli model check "$work/demo.json" --json
expect '"ok" : false' cli model check "$work/misspelled.xml" --json
expect "$(grep -oE '[0-9]+\.[0-9]+\.[0-9]+' Sources/AmberValues/Version.swift | head -1)" cli --version
expect "_amber()" cli --generate-completion-script bash
expect "--model-version <model-version>" cli model check --help
# One --version per command: Amber's own (the Xcode model version is --model-version).
[ "$(cli model import --help | grep -c -- '--version')" -eq 1 ] || { echo "CLI: model import lists --version twice"; exit 1; }
cc -std=c11 -shared -fPIC -w -Iinclude Tests/PluginCorpus/newer_abi.c -o "$work/libfuture.so"
expect "libfuture.so: ABI 2 is newer than this host's 1" cli plugin inspect "$work/libfuture.so"
if cli query "$work/books.amber" Bok 2>/dev/null; then echo "CLI: an error must exit non-zero"; exit 1; fi
c_passed=$((c_passed + cli_checks + 1))
echo "$((cli_checks + 1)) CLI checks passed"

step "Python bindings: install, then pytest against the installed package"
python3 -m pip install --quiet --disable-pip-version-check cffi pytest pytest-cov hypothesis mypy
python3 -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps ./bindings/python
rm -rf bindings/python/build bindings/python/*.egg-info  # pip's in-tree leftovers would shadow later builds
repo=$PWD
# From outside the source tree, so `import amber` is the installed package, and
# coverage measures that package; under 95% of its lines, pytest fails.
(cd "$work" && AMBER_LIBRARY="$bin/lib$lib.so" python3 -m pytest -q -p no:cacheprovider \
    --cov=amber --cov-report=term --cov-fail-under=95 "$repo/bindings/python/tests") \
    | tee "$work/pytest.log"
python_passed=$(sed -nE 's/^([0-9]+) passed.*/\1/p' "$work/pytest.log" | tail -1)

[ -n "$python_passed" ] || { echo "pytest did not report passing tests"; exit 1; }
# The store-behaviour tests again on the other kind of store, named by URL in AMBER_TEST_STORE
# ({tmp}: each test's temporary folder; {unique}: a new name): those on in-memory stores on files, and the
# reverse; and on the PostgreSQL server, each test in a schema of its own.
for store_tests in "file://{tmp}/suite.amber:test_context test_fetch test_pending test_batch test_objects test_types test_undo test_relationships" \
                   "memory::test_derived test_observers test_history" \
                   "$AMBER_TEST_POSTGRES?schema=py_{unique}:test_context test_fetch test_pending test_batch test_derived test_extended test_objects test_types test_undo test_relationships test_observers test_history"; do
    url=${store_tests%:*}; tests=()
    for name in ${store_tests##*:}; do tests+=("$repo/bindings/python/tests/$name.py"); done
    summary=$(cd "$work" && AMBER_TEST_STORE="$url" AMBER_LIBRARY="$bin/lib$lib.so" python3 -m pytest -q -p no:cacheprovider "${tests[@]}" | tail -1)
    echo "on $url: $summary"
    passed=$(sed -nE 's/^([0-9]+) passed.*/\1/p' <<< "$summary")
    [ -n "$passed" ] && ! grep -q failed <<< "$summary" || { echo "the store tests failed on $url"; exit 1; }
    python_passed=$((python_passed + passed))
done
# Many hosts: a server in one network namespace, writers on two others (scripts/many-hosts.sh).
(cd "$repo" && AMBER_LIBRARY="$bin/lib$lib.so" bash scripts/many-hosts.sh 2 25) | tee "$work/many-hosts.log"
grep -q "none lost" "$work/many-hosts.log"
python_passed=$((python_passed + 1))
# The CLI on a PostgreSQL store that Python made: schema, query and check by URL (the password never printed).
pg_store="$AMBER_TEST_POSTGRES?schema=cli_books"
(cd "$work" && AMBER_LIBRARY="$bin/lib$lib.so" python3 - "$pg_store" <<'PY'
import sys, amber
model = amber.Model.from_dict({"entities": [{"name": "Book", "attributes": [
    {"name": "title", "type": "string", "optional": False}, {"name": "pages", "type": "integer32"}]}]}, amber.Registry())
with amber.open(sys.argv[1], model) as store, store.context() as ctx:
    for title, pages in [("Dune", 412), ("Kindred", 264)]:
        ctx.insert("Book", title=title, pages=pages)
    ctx.save()
PY
)
expect "entity Book" cli schema "$pg_store"
expect "(1 object)" cli query "$pg_store" Book --where "pages > 300"
expect "cli_books: ok" cli check "$pg_store"
expect "use pg_dump --schema=cli_books" cli backup "$pg_store" "$work/never.amber"
# amber migrate on the server: the plan, then the migration (one transaction; no copy is kept there).
cat > "$work/books-v2.json" <<'JSON'
{"entities": [{"name": "Book", "attributes": [{"name": "title", "type": "string", "optional": false},
  {"name": "pages", "type": "integer64"}, {"name": "shelf", "type": "string", "default": "A"}]}]}
JSON
expect "  Book.pages: widen integer32 to integer64" cli migrate "$pg_store" --to "$work/books-v2.json" --dry-run
expect '"backup" : null' cli migrate "$pg_store" --to "$work/books-v2.json" --json
expect "(2 objects)" cli query "$pg_store" Book --where "shelf == 'A'"
# A store saved with a transformer this program lacks names it and says how to supply it.
(cd "$work" && AMBER_LIBRARY="$bin/lib$lib.so" python3 - "$work/shout.amber" <<'PY'
import sys, amber
registry = amber.Registry()
registry.register_transformer("Shout", "String", "String", str.upper, str.lower)
model = amber.Model.from_dict({"entities": [{"name": "Note", "attributes": [
    {"name": "text", "type": "transformable", "valueClass": "String", "transformer": "Shout"}]}]}, registry)
with amber.open(sys.argv[1], model) as store, store.context() as ctx:
    ctx.insert("Note", text="hello")
    ctx.save()
PY
)
expect "Shout: no such transformer; register one before binding the model: a plugin (amber --plugin FILE" cli query "$work/shout.amber" Note
# Stand-ins for transformers the CLI lacks: Amber's archive under the app's name, or the stored bytes as they are.
(cd "$work" && AMBER_LIBRARY="$bin/lib$lib.so" python3 - "$work/standins.amber" <<'PY'
import sys, amber
registry = amber.Registry()
archive = registry.transformer("AmberArchive")
registry.register_transformer("TagList", "PropertyList", "Binary", archive.forward, archive.reverse)
registry.register_transformer("Packed", "PropertyList", "Binary", lambda value: value, lambda value: value)
model = amber.Model.from_dict({"entities": [{"name": "Note", "attributes": [
    {"name": "tags", "type": "transformable", "valueClass": "PropertyList", "transformer": "TagList"},
    {"name": "blob", "type": "transformable", "valueClass": "PropertyList", "transformer": "Packed"}]}]}, registry)
with amber.open(sys.argv[1], model) as store, store.context() as ctx:
    ctx.insert("Note", tags=["red", "blue"], blob=b"\x01\x02")
    ctx.save()
PY
)
expect "TagList: no such transformer" cli query "$work/standins.amber" Note --transformer Packed=binary
expect "(1 object)" cli query "$work/standins.amber" Note --transformer TagList=archive --transformer Packed=binary
expect "expected NAME=archive or NAME=binary" cli query "$work/standins.amber" Note --transformer TagList=zip
python_coverage=$(sed -nE 's/.*Total coverage: ([0-9.]+%).*/\1/p' "$work/pytest.log")
echo "Python coverage of the installed amber package: $python_coverage"
# The API reference Python users read: pydoc renders the installed package's docstrings.
(cd "$work" && AMBER_LIBRARY="$bin/lib$lib.so" python3 -m pydoc -w amber amber.model amber.store amber.context amber.objects amber.transformers amber.observing amber.errors > /dev/null)
grep -q "sample_plugin" "$work/amber.transformers.html" && grep -q "DestinationExistsError" "$work/amber.errors.html"
grep -q "allow_data_removal" "$work/amber.store.html" && grep -q "insert_many" "$work/amber.context.html"

step "Python: pip install from the source folder and from a wheel, each in a fresh venv, used with no environment variable"
# The README's two Python examples: the typed classes (with the module generated from its model), then the dynamic API.
python3 - README.md "$work" <<'PY'
import re, sys
typed, dynamic = re.findall(r"```python\n(.*?)```", open(sys.argv[1], encoding="utf-8").read(), re.S)
open(f"{sys.argv[2]}/readme_typed.py", "w", encoding="utf-8").write(typed)
open(f"{sys.argv[2]}/readme_example.py", "w", encoding="utf-8").write(dynamic)
PY
cp Tests/AmberTypedTests/Library.amber.json "$work/Library.amber.json"
"$bin/amber-generate" python "$work/Library.amber.json" -o "$work/library.py"
python3 -m venv "$work/venv-source"
"$work/venv-source/bin/pip" install --quiet --disable-pip-version-check ./bindings/python
rm -rf bindings/python/build bindings/python/*.egg-info
(cd "$work" && rm -f books.amber && env -i "$work/venv-source/bin/python" readme_example.py) | grep -q "^Dune 9.99"
(cd "$work" && rm -f library.amber && env -i "$work/venv-source/bin/python" readme_typed.py) | grep -q "^Dune Frank Herbert$"
python3 -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$work/wheels" ./bindings/python
rm -rf bindings/python/build bindings/python/*.egg-info
python3 -m venv "$work/venv-wheel"
"$work/venv-wheel/bin/pip" install --quiet --disable-pip-version-check "$work"/wheels/amber-*.whl
(cd "$work" && rm -f books.amber && without_toolchain env -i "$work/venv-wheel/bin/python" readme_example.py) | grep -q "^Dune 9.99"
(cd "$work" && rm -f library.amber && without_toolchain env -i "$work/venv-wheel/bin/python" readme_typed.py) | grep -q "^Dune Frank Herbert$"
bundled=$(env -i "$work/venv-wheel/bin/python" -c 'import amber, os; print(os.path.dirname(amber.__file__))')
self_contained "$bundled/lib/libamber.so.0" "$bundled"/plugins/libAmber{Color,Rect,Deflate,AESGCM}Plugin.so
# Every bundled plugin loads, with the toolchain's runtime hidden.
(cd "$work" && without_toolchain env -i "$work/venv-wheel/bin/python" -c '
import amber
registry = amber.Registry()
for name, transformer in (("color", "ColorToData"), ("rect", "RectToString"), ("deflate", "Deflate"), ("aesgcm", "AESGCM")):
    registry.load_plugin(amber.sample_plugin(name), "key=" + "00" * 32)
    assert registry.transformer(transformer).name == transformer
print("the 4 bundled plugins load")')
echo "the wheel $(basename "$work"/wheels/amber-*.whl) bundles the library and 4 plugins; the README example ran from it and from a source install"
python_passed=$((python_passed + 2))

step "Benchmark, quick mode (N=2000, one repetition): it must run, not be fast"
# The peer the Python PostgreSQL rows are measured against: SQLAlchemy 2's ORM over psycopg 3.
python3 -m pip install --quiet --disable-pip-version-check "sqlalchemy>=2" "psycopg[binary]>=3"
AMBER_BENCH_REQUIRE_GRDB=1 bash scripts/bench.sh --quick --json "$work/bench.json" --postgres "$AMBER_TEST_POSTGRES"
python3 - "$work/bench.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
workloads = ["W1 insert + save", "W2 fetch all + read", "W3 CONTAINS[c] + sum", "W4 update every 10th + save",
             "W5 colour round trips"]
expected = workloads + ["peak memory W1+W2 (MiB)", "C API W2 batch fetch + read", "W5 plugin against Swift transformer",
                       "W6 authors and books insert + save", "W7 fetch authors, prefetch books, sum prices",
                       "W8 ANY books.price > 50", "W9 merge 1,000 saved changes",
                       "W10 one-object save, live query over N", "W21 filtered fetch with pending changes",
                       "W22 typed W1 insert + save", "W22 typed W2 fetch all + read", "W22 typed W4 update every 10th + save",
                       "W11 canonicalTitle CONTAINS[cd] vs title",
                       "W12 extended key vs modelled column", "W13 migrate: add attribute, re-encode colour",
                       "W14 200 saves, normal durability", "W14 200 saves, full durability",
                       "W18 Core Data store: fetch all pages + read", "W19 import a Core Data store of N objects"] \
    + [f"PostgreSQL {row}" for row in workloads[:4]] \
    + [f"{side} {row}" for side in ("C API", "Python") for row in workloads] \
    + [f"Python PostgreSQL {row}" for row in workloads[:4]] \
    + [f"{side}{row}" for side in ("", "GRDB ", "Amber/GRDB ") for row in ["W5 round trips through values"]] \
    + [f"{side} peak memory W1+W2 (MiB)" for side in ("GRDB", "Amber/GRDB")] \
    + [f"{side} {row}" for side in ("GRDB", "Amber/GRDB") for row in workloads[:4]]
missing = [name for name in expected if name not in results or results[name]["amber_ms"] <= 0 or results[name]["raw_ms"] <= 0]
assert not missing, f"benchmark rows missing or empty: {missing}"
print(f"{len(expected)} benchmark rows present")
PY
c_passed=$((c_passed + 1))

step "Fuzzing: replay every corpus, then each harness for ${AMBER_FUZZ_SECONDS:-20} s (scripts/fuzz.sh, built with -sanitize=fuzzer)"
for target in predicate model-json archive keyed-archive plugin-descriptor xcode; do
    "$bin/amber-fuzz" "$target" "Tests/FuzzCorpus/$target"
done
bash scripts/fuzz.sh all "${AMBER_FUZZ_SECONDS:-20}"
c_passed=$((c_passed + 1))

step "All test suites passed"
echo "Swift: $swift_passed tests; C and CLI: $c_passed checks; Python: $python_passed tests"
echo "$((swift_passed + c_passed + python_passed)) passed, 0 failed"
